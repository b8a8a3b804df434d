//! One run per side without a usable run-to-run band: the two cases where
//! the evidence still decides (issue 44). A single run made on a busy
//! machine or with most points noisy has an unknown band ([`floor`]'s
//! `Unclean`): a whole run shifts together there. Two things bound that
//! shift all the same:
//!
//! * **The link.** A run at [`LINK_BOUND_SHARE`] or more of a shaped
//!   link's goodput (the result records the link, `link`, and its
//!   shaper) cannot go faster than the link: its time at each size lies
//!   between the link's own time and that over its share. When both runs
//!   are link-bound over a band (the geometric mean of their points'
//!   shares at least 0.9, none above 1.02), a run-to-run shift of the
//!   band's figure beyond `1 / share` is not physically open to them, so
//!   the band is `1 / (least share) - 1` ([`FloorSource::LinkBound`]). A halved lab
//!   link (200 against 100 Mbit/s, +95%) is then shown however noisy the
//!   points, and an A/A pair on one link stays within the band.
//! * **Far beyond the points' own noise.** A change is shown
//!   ([`FloorSource::FarBeyond`], "A faster" or "B faster" only, never "no
//!   change") when at least [`NON_OVERLAP_SHARE`] of the band's sizes have
//!   the two runs' 95% intervals of the median apart, all in the
//!   change's direction, and the change's whole interval lies beyond
//!   twice the larger within-run spread (per run, the median over the
//!   band's sizes of ln(q90 / q10) of the trials) and twice the runs'
//!   drift between their passes. Runs made on a busy machine (load at or
//!   above its CPUs) are left out of this rule: there a whole run shifts
//!   with no bound the runs show (A/A pairs of busy-polling shm runs on a
//!   loaded 2-vCPU machine differed 3-fold with tight trials; two `wulf
//!   sweep shm --sizes 8,64Ki --budget 1s` at load 7.4 read 1.28 us and
//!   62 ns at 8 B). On a quiet machine whose points are noisy, 4 KiB
//!   socket buffers (+5,337%) and blocking shm against spinning (+2,413%)
//!   are then shown; an A/A pair is not, unless its runs differ beyond
//!   their own spread at three quarters of the sizes. A whole run's shift
//!   moves every size together, beyond any spread: so the change must
//!   also lie beyond the machine's own shift between the runs, their
//!   cache-line floors' (see [`super::floor`]), where both recorded one.

use super::floor::{machine_shift, Floor, FloorSource, MIN_FLOOR_FRACTION, TRIALS_SPAN};
use super::{point, Context};
use crate::result::SweepResult;
use crate::stats::hier_bootstrap::RatioInterval;

/// The least share of its link's goodput limit at which a point is
/// link-bound (the "0.9 of a shaped lab link's goodput").
pub const LINK_BOUND_SHARE: f64 = 0.9;

/// The most share of its link's limit a link-bound point may show: above
/// it a token bucket's free burst, not the link, set its time, which is
/// then no bound (the limit's own accounting is exact to well under 1%).
pub const LINK_OVER_SHARE: f64 = 1.02;

/// The least share of a band's sizes whose two intervals must lie apart
/// for a change far beyond the noise.
pub const NON_OVERLAP_SHARE: f64 = 0.75;

impl Context<'_> {
    /// The floor of one run per side, where the estimate left it unknown
    /// or the link bounds it closer (see the module notes); `floor` as it
    /// is otherwise.
    pub(super) fn single_run_floor(
        &self,
        sizes: &[u64],
        interval: &RatioInterval,
        floor: Floor,
        drift_log_sd: Option<f64>,
    ) -> Floor {
        let single = self.a.len() == 1 && self.b.len() == 1;
        if !single
            || matches!(
                floor.source,
                FloorSource::Given | FloorSource::Recorded { .. }
            )
        {
            return floor;
        }
        if let Some(link) = self
            .link_floor(sizes)
            .filter(|l| l.fraction < floor.fraction)
        {
            return link;
        }
        if floor.source != FloorSource::Unclean {
            return floor;
        }
        self.far_floor(sizes, interval, drift_log_sd)
            .unwrap_or(floor)
    }

    /// The link's bound on both runs over `sizes`, when both are
    /// link-bound there: each run's band figure (the geometric mean of its
    /// sizes' times) is at least the link's own (the geometric mean of
    /// the link's times) and over it by the geometric mean of 1 / share,
    /// so a run is link-bound when the geometric mean of its shares is at
    /// least [`LINK_BOUND_SHARE`], no point above [`LINK_OVER_SHARE`].
    fn link_floor(&self, sizes: &[u64]) -> Option<Floor> {
        let mut least = f64::INFINITY;
        for r in self.a.iter().chain(self.b) {
            let mut log_sum = 0.0;
            for &s in sizes {
                let share = link_share(r, s).filter(|x| *x > 0.0 && *x <= LINK_OVER_SHARE)?;
                log_sum += share.ln();
            }
            let mean_share = (log_sum / sizes.len().max(1) as f64).exp();
            if sizes.is_empty() || mean_share < LINK_BOUND_SHARE {
                return None;
            }
            least = least.min(mean_share);
        }
        least.is_finite().then(|| Floor {
            fraction: (1.0 / least.min(1.0) - 1.0).max(MIN_FLOOR_FRACTION),
            source: FloorSource::LinkBound { share: least },
        })
    }

    /// The floor of a change far beyond the points' noise, when its
    /// intervals lie apart at enough sizes in the direction of `interval`.
    fn far_floor(
        &self,
        sizes: &[u64],
        interval: &RatioInterval,
        drift_log_sd: Option<f64>,
    ) -> Option<Floor> {
        let (a, b) = (self.a.first()?, self.b.first()?);
        if busy(a) || busy(b) {
            return None;
        }
        let slower = interval.ratio > 1.0;
        let apart = sizes
            .iter()
            .filter(|&&s| {
                let (Some(pa), Some(pb)) = (point(a, s), point(b, s)) else {
                    return false;
                };
                match slower {
                    true => pb.ci_low_ns > pa.ci_high_ns,
                    false => pb.ci_high_ns < pa.ci_low_ns,
                }
            })
            .count();
        if (apart as f64) < NON_OVERLAP_SHARE * sizes.len() as f64 || sizes.is_empty() {
            return None;
        }
        let spread = within_run_spread(a, sizes).max(within_run_spread(b, sizes));
        // Beyond the machine's own shift too: the points' noise cannot
        // see a shift common to the whole run, the floors can.
        let machine = machine_shift(self.machine_log_shift()).unwrap_or(0.0);
        let log_floor = (2.0 * spread)
            .max(TRIALS_SPAN * drift_log_sd.unwrap_or(0.0))
            .max(MIN_FLOOR_FRACTION.ln_1p())
            + machine;
        Some(Floor {
            fraction: log_floor.exp_m1(),
            source: FloorSource::FarBeyond {
                log_spread: spread,
                log_machine: machine,
            },
        })
    }
}

impl Context<'_> {
    /// The machine's own shift between one run per side, `|ln(floor_B /
    /// floor_A)|` of the cache-line floors both recorded (see
    /// [`super::floor`]'s notes); none for several runs on a side or
    /// where either run recorded no floor.
    pub(super) fn machine_log_shift(&self) -> Option<f64> {
        let ([a], [b]) = (self.a, self.b) else {
            return None;
        };
        let shift = (cacheline_floor_ns(b)? / cacheline_floor_ns(a)?).ln().abs();
        shift.is_finite().then_some(shift)
    }
}

/// A run's cache-line floor, ns: the least `limits.floor_ns` its points
/// record (each sweep between two processes of one machine measures it
/// before and after its points); none across a network or in a baseline.
pub fn cacheline_floor_ns(r: &SweepResult) -> Option<f64> {
    r.points
        .iter()
        .filter_map(|p| p.limits?.floor_ns)
        .filter(|f| f.is_finite() && *f > 0.0)
        .min_by(f64::total_cmp)
}

/// A point's throughput as a share of its run's shaped link's goodput
/// limit; None without a shaped link on record.
fn link_share(r: &SweepResult, bytes: u64) -> Option<f64> {
    let link = r.link.as_ref().filter(|l| l.shaper.is_some())?;
    let p = point(r, bytes)?;
    (link.limit_bits_per_s > 0.0).then(|| p.bits_per_s / link.limit_bits_per_s)
}

/// A run's spread within itself over `sizes`: the median over them of
/// ln(q90 / q10) of each size's trials.
fn within_run_spread(r: &SweepResult, sizes: &[u64]) -> f64 {
    let mut per_size: Vec<f64> = sizes
        .iter()
        .filter_map(|&s| {
            let mut t: Vec<f64> = point(r, s)?.trials_ns.clone();
            t.retain(|x| x.is_finite() && *x > 0.0);
            if t.len() < 2 {
                return None;
            }
            t.sort_by(f64::total_cmp);
            let q = |f| crate::stats::quantile_sorted(&t, f);
            Some((q(0.9) / q(0.1)).ln())
        })
        .collect();
    if per_size.is_empty() {
        return f64::INFINITY;
    }
    per_size.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&per_size, 0.5)
}

/// Whether `r` was made on a busy machine: a one-minute load average at
/// or above its CPU count, before or after.
pub(super) fn busy(r: &SweepResult) -> bool {
    let cpus = r.host.cpus.max(1) as f64;
    let load = r
        .host
        .load_after
        .map_or(0.0, |l| l[0])
        .max(r.host.load_before[0]);
    load >= cpus
}
