//! The cache-line floor: the one-way time of an 8-byte cache-line
//! ping-pong between the two CPUs a sweep's ends run on, the least time
//! any message between them can take.
//!
//! One measurement before a sweep is not enough: on a busy machine it
//! met a busier moment (550 ns, once 702 us, against a quiet 60-200 ns)
//! and latencies came out as 0.21x or 0.01x "the floor", which nothing
//! can be (issue 28). So the floor is measured again after the sweep and
//! the lowest measurement this process made between those CPUs is kept
//! ([`super::limits::keep_lowest_floor`]); where a latency is still
//! below it, its multiple is withheld with the reason
//! ([`crate::result::Summary::from_points`], the sweep's warning).
//!
//! Each measurement is the minimum of its trials, not their median
//! (issue 29: in `wulf run --quick` the floor's median read 213 ns and
//! shm's median 0.83x of it; a dedicated 2 s sweep gave 145 ns): load only
//! ever slows a trial, so the fastest trial is the floor a quiet moment
//! shows, and a transport's median, itself at least one hand-off, cannot
//! honestly fall below it.

use anyhow::Result;

use super::in_process::BaselineRunner;
use super::limits::{keep_lowest_floor, setup, FloorKey, Limits};
use super::runner::plan_for;
use super::spec::SweepSpec;
use crate::measure::policy::measure_point;
use crate::result::{Mode, Point};
use crate::transport::cacheline::{CachelineBench, FLOOR_BYTES};
use crate::transport::WaitMode;

/// The wait mode a floor is measured with: spinning, unless both ends share
/// one CPU (or the machine has only one), where spinning would measure the
/// scheduler's time slice.
pub fn floor_wait(cpus: FloorKey) -> WaitMode {
    let one_cpu = match cpus {
        (Some(a), Some(b)) => a == b,
        // Unpinned: what the machine has, not what this (possibly pinned)
        // thread may use.
        _ => {
            // SAFETY: sysconf has no preconditions.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
            online < 2
        }
    };
    if one_cpu {
        WaitMode::Yield
    } else {
        WaitMode::Spin
    }
}

/// The cache-line floor between `cpus`, ns (this thread must be pinned
/// to the first of them).
pub(super) fn measure_floor(spec: &SweepSpec, cpus: FloorKey, budget_ns: u64) -> Result<f64> {
    let mut s = setup(spec, Mode::Pingpong, FLOOR_BYTES, None);
    s.helper_cpu = cpus.1;
    s.wait = floor_wait(cpus);
    let mut bench = CachelineBench::new(&s)?;
    let overhead = crate::measure::timer::clock_read_cost_ns();
    let mut runner = BaselineRunner::new(&mut bench, Mode::Pingpong, overhead);
    let plan = plan_for(budget_ns, spec.precision, u64::MAX);
    let o = measure_point(&mut runner, FLOOR_BYTES, &plan, &super::interrupted)?;
    if o.trials_ns.is_empty() {
        anyhow::bail!("interrupted");
    }
    Ok(floor_of(&super::point::make_point(
        FLOOR_BYTES,
        Mode::Pingpong,
        &o,
    )))
}

/// The floor a cache-line point gives: its fastest trial (see the module
/// documentation), its median when it has no trials.
pub(super) fn floor_of(p: &Point) -> f64 {
    if p.min_ns > 0.0 {
        p.min_ns.min(p.median_ns)
    } else {
        p.median_ns
    }
}

/// Budget of the floor's second measurement, after the sweep: the same
/// share as the first ([`super::limits::FLOOR_BUDGET_SHARE`], bounded).
pub(super) fn remeasure_budget_ns(spec: &SweepSpec) -> u64 {
    ((spec.budget.as_nanos() as f64 * super::limits::FLOOR_BUDGET_SHARE) as u64).clamp(
        super::limits::FLOOR_BUDGET_NS.0,
        super::limits::FLOOR_BUDGET_NS.1,
    )
}

/// Measure the floor between `cpus` again after the sweep, keep the lowest
/// measurement, and give it to `limits` and every point (this thread must
/// still be pinned to the first CPU). Without a floor there is nothing to
/// re-measure, nor after a floor this sweep took from the table; a failure
/// leaves the first floor and says so.
pub fn remeasure_after_sweep(
    spec: &SweepSpec,
    cpus: FloorKey,
    limits: &mut Limits,
    points: &mut [Point],
    warnings: &mut Vec<String>,
) {
    if limits.floor_ns.is_none() || !limits.floor_measured_here || points.is_empty() {
        return;
    }
    match measure_floor(spec, cpus, remeasure_budget_ns(spec)) {
        Ok(f) => apply_floor(limits, points, keep_lowest_floor(cpus, f)),
        Err(e) => warnings.push(format!(
            "the cache-line floor could not be measured again after the sweep ({e:#}): \
             the one measured before it is kept"
        )),
    }
}

/// Give `floor_ns` to `limits` and to every point that carries limits,
/// when it is lower than what they hold.
fn apply_floor(limits: &mut Limits, points: &mut [Point], floor_ns: f64) {
    let lower = |f: &mut Option<f64>| {
        if let Some(v) = f {
            *v = v.min(floor_ns);
        }
    };
    lower(&mut limits.floor_ns);
    for p in points.iter_mut() {
        if let Some(l) = p.limits.as_mut() {
            lower(&mut l.floor_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Limits as PointLimits;

    #[test]
    fn a_shared_cpu_floor_yields() {
        assert_eq!(floor_wait((Some(0), Some(0))), WaitMode::Yield);
        assert_eq!(floor_wait((Some(0), Some(1))), WaitMode::Spin);
    }

    /// A floor measured at a busy moment (702 us, as seen) is replaced by
    /// the lower one measured after the sweep, in the limits and every
    /// point; a higher later one changes nothing.
    #[test]
    fn the_lower_floor_is_kept() {
        let mut limits = Limits {
            floor_ns: Some(702_000.0),
            ..Limits::default()
        };
        let mut points: Vec<Point> = [8, 64]
            .iter()
            .map(|&b| {
                let mut p = crate::sweep::point::test_point(b, 5_000.0);
                p.limits = Some(PointLimits {
                    floor_ns: Some(702_000.0),
                    ..Default::default()
                });
                p
            })
            .collect();
        assert_eq!(
            crate::result::Summary::from_points(&points).latency_floor_multiple,
            None
        );
        apply_floor(&mut limits, &mut points, 180.0);
        assert_eq!(limits.floor_ns, Some(180.0));
        assert!(points
            .iter()
            .all(|p| p.limits.unwrap().floor_ns == Some(180.0)));
        let x = crate::result::Summary::from_points(&points).latency_floor_multiple;
        assert!((x.unwrap() - 5_000.0 / 180.0).abs() < 1e-9);
        apply_floor(&mut limits, &mut points, 900.0);
        assert_eq!(limits.floor_ns, Some(180.0));
        assert_eq!(points[1].limits.unwrap().floor_ns, Some(180.0));
    }

    /// The floor is the fastest trial, not the median: a busy moment in
    /// half the trials (213 ns median against 145 ns quiet) does not
    /// raise it.
    #[test]
    fn the_floor_is_the_fastest_trial() {
        let mut p = crate::sweep::point::test_point(FLOOR_BYTES, 213.0);
        p.min_ns = 145.0;
        assert_eq!(floor_of(&p), 145.0);
        p.min_ns = 0.0;
        assert_eq!(floor_of(&p), 213.0);
    }

    /// The table keeps the least floor of every measurement.
    #[test]
    fn the_table_keeps_the_lowest_floor() {
        // CPUs no other test uses as a key.
        let cpus = (Some(9_001), Some(9_002));
        assert_eq!(keep_lowest_floor(cpus, 550.0), 550.0);
        assert_eq!(keep_lowest_floor(cpus, 120.0), 120.0);
        assert_eq!(keep_lowest_floor(cpus, 702_000.0), 120.0);
    }
}
