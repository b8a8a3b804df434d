//! The run-to-run band: how far two runs of the *same* configuration
//! stay apart, the change `wulf compare` must exceed to call a change.
//!
//! # The rule
//!
//! Two runs of one configuration on one machine differ by more than their
//! trials' intervals say: each run gets its own CPU placement, page layout
//! and host load. The band is estimated from the data compared, never from
//! a table (a built-in table keyed by transport once made floors of
//! +-598% to +-57,507%, so a halved link was "no change"). In log space,
//! where it is symmetric, it is the largest of:
//!
//! * 3%: below it the trials' own intervals (the sweep's default precision
//!   is 2%) cannot separate two medians;
//! * with two or more runs on a side, the runs' term: `t(0.975, df) * s *
//!   sqrt(1/n_a + 1/n_b)`, with `s` the standard deviation of ln(band
//!   figure) between the runs of a side, pooled over the sides
//!   ([`crate::stats::hier_bootstrap::noise_bound`]); more runs narrow it;
//! * with one run per side, the one-run floor `wulf run --repeat N`
//!   recorded in the files (`run_to_run`), measured on the machine;
//! * else, with one run per side, the trials' term: `2 * max(sqrt(2) *
//!   s_trial, s_step)`. `s_trial` is the robust spread of ln(trial time)
//!   within each size (the median absolute deviation, pooled over the
//!   band's sizes and both runs): a run's conditions moving while it ran,
//!   a busy machine, and noisy points all widen it. `s_step` is the spread
//!   of the per-size change B/A from one size to the next (the mean
//!   squared successive difference, so a change that grows smoothly with
//!   size does not count as noise): sizes are measured at different
//!   moments of a run, so it sees the machine drift between them. What
//!   neither can see is a shift common to a whole run (its CPU placement);
//!   the output says so, and several runs per side (or `--repeat`) settle
//!   it;
//! * with one run per side, the drift term: `2 * s_drift`, from how far
//!   each run moved between its first pass and its confirmation pass over
//!   the band's re-measured sizes ([`super::drift`]): the one view a
//!   single run gives of a shift common to a whole run (A/A shm runs on a
//!   quiet machine differed by +7.3% in a band whose trials' term was
//!   +-6.8%);
//! * with one run per side and no recorded floor, at least 15%
//!   ([`ONE_RUN_FLOOR_FRACTION`]): a whole run's shift that neither term
//!   above sees (an A/A shm pair moved +9.8% at 8 B with a 3% band and
//!   was called a change);
//! * with one run per side and no recorded floor, the band so far
//!   widened by the machine's own shift between the two runs, where both
//!   recorded their cache-line floor (the least one-way time of a
//!   cache-line ping-pong between the ends' CPUs, measured in each run:
//!   [`super::single::cacheline_floor_ns`]): `|ln(floor_B / floor_A)|`
//!   added in log space, when above [`MIN_FLOOR_FRACTION`]. The floor
//!   measures no transport, so its shift is the machine's (the VM's slow
//!   mode, the vCPUs' placement on the host's cores), common to every
//!   size of the run; a transport's change is what lies beyond it. An
//!   A/A pair of 1 s shm sweeps read 147 and 212 ns at 8 B (+44%, this
//!   VM's shm reads 43-53 ns quiet) and was called a change. A halved
//!   lab link records no floor (and its band is the link's), 4 KiB
//!   socket buffers change tcp 50-fold beside floors within a few
//!   percent, so both still show.
//!
//! A single run per side made on a busy machine (a one-minute load
//! average at or above its CPU count, before or after the run) or with
//! most of the band's points noisy has no usable band at all: there a
//! whole run shifts together (A/A pairs of busy-polling shm runs on a
//! loaded 2-vCPU machine differed 3-fold with tight trials, so neither
//! term above could see it). Its band is unknown ([`FloorSource::Unclean`])
//! and every verdict inconclusive: several runs per side, or a floor
//! `wulf run --repeat` recorded, settle it.
//!
//! `--noise-floor PCT` replaces all of them.

use crate::stats::hier_bootstrap::noise_bound;

/// The least floor, as a fraction.
pub const MIN_FLOOR_FRACTION: f64 = 0.03;

/// The least floor of one run against one with no recorded floor: what a
/// whole run's shift (its CPU placement, page layout) reaches on the
/// machine it was written for, which neither the trials nor the drift can
/// see. A/A pairs of shm runs on a quiet 2-vCPU VM differed by +7.3% and
/// +9.8% at 8 B with trials' terms of 3-7%, and the second was called a
/// change; 15% keeps such pairs from claiming one while a halved link
/// (+100%) or 4 KiB socket buffers (+5,000%) still show.
pub const ONE_RUN_FLOOR_FRACTION: f64 = 0.15;

/// Standard deviations of one run's figure difference that the trials'
/// term spans (about a 95% band).
pub const TRIALS_SPAN: f64 = 2.0;

/// Where a floor came from: the term that set it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloorSource {
    /// `--noise-floor`: given, not estimated.
    Given,
    /// The spread between the runs compared.
    Runs {
        /// Standard deviation of ln(run figure).
        log_sd: f64,
        /// Its degrees of freedom.
        df: usize,
    },
    /// The one-run floor `wulf run --repeat N` recorded in the files.
    Recorded {
        /// Its N.
        repetitions: usize,
    },
    /// Estimated from the two single runs' own trials and per-size changes.
    Trials {
        /// Standard deviation of ln(B/A) of one run against one.
        log_sd: f64,
    },
    /// Estimated from how far the single runs drifted between their first
    /// and confirmation passes in the band ([`super::drift`]).
    Drift {
        /// Standard deviation of ln(B/A) of one run against one.
        log_sd: f64,
    },
    /// One run per side, both at [`super::single::LINK_BOUND_SHARE`] or
    /// more of a shaped link's goodput over the sizes compared (geometric
    /// mean): the link bounds a whole run's shift ([`super::single`]).
    LinkBound {
        /// The lesser of the two runs' geometric mean shares of their
        /// link's limit.
        share: f64,
    },
    /// One run per side with an unknown band, but a change far beyond the
    /// points' own noise ([`super::single`]): it shows a change, never its
    /// absence.
    FarBeyond {
        /// The larger within-run spread, ln(q90 / q10) of the trials.
        log_spread: f64,
        /// The machine's own shift between the runs the band was widened
        /// by, `|ln(floor_B / floor_A)|` of their cache-line floors (0
        /// when none: see [`FloorSource::Machine`]).
        log_machine: f64,
    },
    /// One run per side: the band of the other terms widened by the
    /// machine's own shift between the runs, `|ln(floor_B / floor_A)|`
    /// of the cache-line floors both recorded (see the module notes).
    Machine {
        /// The shift added, in log space.
        log_shift: f64,
    },
    /// The least floor, [`MIN_FLOOR_FRACTION`].
    Minimum,
    /// The least floor of one run against one, [`ONE_RUN_FLOOR_FRACTION`]:
    /// a whole run's shift neither its trials nor its drift can see.
    OneRun,
    /// Unknown: single runs on a busy machine or with most points noisy
    /// (see the module notes); the fraction is infinite.
    Unclean,
}

impl FloorSource {
    /// A short word for tables.
    pub fn word(self) -> &'static str {
        match self {
            FloorSource::Given => "given",
            FloorSource::Runs { .. } => "runs",
            FloorSource::Recorded { .. } => "recorded",
            FloorSource::Trials { .. } => "trials",
            FloorSource::Drift { .. } => "drift",
            FloorSource::LinkBound { .. } => "link-bound",
            FloorSource::FarBeyond { .. } => "far beyond the noise",
            FloorSource::Machine { .. } => "machine shift",
            FloorSource::Minimum => "minimum",
            FloorSource::OneRun => "one run",
            FloorSource::Unclean => "unclean runs",
        }
    }
}

/// The floor of one band or figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    /// The least change called a change, as a fraction of the time
    /// (0.1: B 10% slower, or A 10% slower, i.e. B's time below 1/1.1).
    pub fraction: f64,
    /// The term that set it.
    pub source: FloorSource,
}

impl Floor {
    /// Whether a time ratio (B / A) lies beyond the floor either way; the
    /// floor is symmetric in log space, so "A faster" and "B faster" need
    /// the same evidence.
    pub fn exceeded_by(&self, ratio: f64) -> bool {
        let f = 1.0 + self.fraction;
        ratio > f || ratio * f < 1.0
    }

    /// The band as it applies to a time ratio, e.g. "-9.1% .. +10.0%"
    /// (symmetric in log space, so not in percent).
    pub fn band_text(&self) -> String {
        if !self.fraction.is_finite() {
            return "unknown".into();
        }
        format!(
            "{:+.1}% .. +{:.1}%",
            100.0 * (1.0 / (1.0 + self.fraction) - 1.0),
            100.0 * self.fraction
        )
    }

    /// Whether the floor can show the absence of a change ("no change"),
    /// and bounds a slowdown the gate must exclude: not where it only
    /// tells a change far beyond the noise (the run-to-run band is still
    /// unknown there).
    pub fn judges_sameness(&self) -> bool {
        !matches!(self.source, FloorSource::FarBeyond { .. })
    }

    /// The floor in log space: ln(1 + fraction).
    pub fn log(&self) -> f64 {
        self.fraction.ln_1p()
    }
}

/// What the floor of one band or figure is estimated from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FloorInputs<'a> {
    /// `--noise-floor`, as a fraction.
    pub given: Option<f64>,
    /// Pooled spread `(s, df)` of the runs compared.
    pub runs: Option<(f64, usize)>,
    /// The largest one-run floor recorded in the files for the band, with
    /// the repetitions it came from.
    pub recorded: Option<(f64, usize)>,
    /// The standard deviation of ln(B/A) of one run against one, from the
    /// runs' trials and per-size changes (see the module notes).
    pub trials: Option<f64>,
    /// The standard deviation of ln(B/A) of one run against one implied by
    /// the runs' drift between their passes in the band ([`super::drift`]).
    pub drift: Option<f64>,
    /// The band the floor is for.
    pub band: &'a str,
    /// Whether the runs are single, busy or mostly noisy (see the module
    /// notes).
    pub unclean: bool,
    /// One run per side: the machine's own shift between the runs,
    /// `|ln(floor_B / floor_A)|` of the cache-line floors both recorded;
    /// none where either recorded none.
    pub machine: Option<f64>,
}

/// The floor by the rule of the module notes, for `n_a` and `n_b` runs.
pub fn floor(inputs: &FloorInputs<'_>, n_a: usize, n_b: usize) -> Floor {
    if let Some(f) = inputs.given {
        return Floor {
            fraction: f,
            source: FloorSource::Given,
        };
    }
    let mut terms = vec![(MIN_FLOOR_FRACTION.ln_1p(), FloorSource::Minimum)];
    let several = n_a >= 2 || n_b >= 2;
    if !several && inputs.recorded.is_none() && inputs.unclean {
        return Floor {
            fraction: f64::INFINITY,
            source: FloorSource::Unclean,
        };
    }
    match (several, inputs.runs, inputs.recorded, inputs.trials) {
        (true, Some((log_sd, df)), _, _) => {
            let bound = noise_bound(log_sd, df, n_a, n_b).ln();
            terms.push((bound, FloorSource::Runs { log_sd, df }));
        }
        (_, _, Some((f, repetitions)), _) => {
            terms.push((f.ln_1p(), FloorSource::Recorded { repetitions }))
        }
        (_, _, _, Some(log_sd)) => {
            terms.push((TRIALS_SPAN * log_sd, FloorSource::Trials { log_sd }))
        }
        _ => {}
    }
    if let (false, None, Some(log_sd)) = (several, inputs.recorded, inputs.drift) {
        terms.push((TRIALS_SPAN * log_sd, FloorSource::Drift { log_sd }));
    }
    if !several && inputs.recorded.is_none() {
        terms.push((ONE_RUN_FLOOR_FRACTION.ln_1p(), FloorSource::OneRun));
    }
    let (log_floor, source) =
        terms
            .into_iter()
            .fold((f64::NEG_INFINITY, FloorSource::Minimum), |best, t| {
                if t.0 > best.0 {
                    t
                } else {
                    best
                }
            });
    let shift = machine_shift(inputs.machine).filter(|_| !several && inputs.recorded.is_none());
    match shift {
        Some(log_shift) => Floor {
            fraction: (log_floor + log_shift).exp_m1(),
            source: FloorSource::Machine { log_shift },
        },
        None => Floor {
            fraction: log_floor.exp_m1(),
            source,
        },
    }
}

/// The machine's shift between two single runs that widens their band:
/// `machine` where it exceeds [`MIN_FLOOR_FRACTION`] (two quiet runs'
/// floors differ by a few percent, which the other terms cover).
pub fn machine_shift(machine: Option<f64>) -> Option<f64> {
    machine.filter(|s| s.is_finite() && *s > MIN_FLOOR_FRACTION.ln_1p())
}

/// The floor of one run against one that `log_sd` over `df + 1` repeated
/// runs gives (what `wulf run --repeat` records), at least the minimum.
pub fn one_run_floor(log_sd: f64, df: usize) -> f64 {
    (noise_bound(log_sd, df, 1, 1) - 1.0).max(MIN_FLOOR_FRACTION)
}
