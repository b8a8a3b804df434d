//! One cache-line floor per run: the least time any message between two
//! processes here can take, the same number wherever a report prints it.
//!
//! Each sweep records the floor it measured beside its points
//! (`points[].limits.floor_ns`), and a run may hold the cache-line
//! baseline itself: measured at different moments of a busy machine they
//! differ (one report said 44 ns in its answer, 0.21 us in the table's
//! cache-line row and 185 ns on the latency chart, with shm points plotted
//! below it). A floor is a least time, so the run's floor is the least of
//! them; a latency still below it is not given a multiple but withheld
//! with the reason (the floor met busier moments than that point).

use crate::result::{LimitRole, SweepResult, CACHELINE_FLOOR_BYTES};

/// The run's cache-line floor in ns: the least of the cache-line
/// baseline's time at [`CACHELINE_FLOOR_BYTES`] among `results` and every
/// floor their points record; `None` where the run measured none.
pub fn run_floor_ns<'a>(results: impl IntoIterator<Item = &'a SweepResult>) -> Option<f64> {
    results
        .into_iter()
        .flat_map(|r| {
            let baseline = (super::summary::limit_role(r) == Some(LimitRole::CachelineFloor))
                .then(|| r.points.iter().find(|p| p.bytes == CACHELINE_FLOOR_BYTES))
                .flatten()
                .map(|p| p.median_ns);
            let recorded = r.points.iter().filter_map(|p| p.limits?.floor_ns);
            baseline.into_iter().chain(recorded)
        })
        .filter(|f| f.is_finite() && *f > 0.0)
        .min_by(f64::total_cmp)
}

/// Whether `r` is read against the floor: it recorded one, as a sweep
/// between two processes of this machine does (one across a network, or
/// a baseline, records none and gets no multiple).
pub fn applies(r: &SweepResult) -> bool {
    r.points
        .iter()
        .any(|p| p.limits.is_some_and(|l| l.floor_ns.is_some()))
}

/// `latency_ns` as a multiple of the floor; `None` below it, where the
/// multiple would be impossible and is withheld.
pub fn multiple(latency_ns: f64, floor_ns: f64) -> Option<f64> {
    let x = latency_ns / floor_ns;
    (x.is_finite() && x >= 1.0).then_some(x)
}

/// The reason a figure below the floor is withheld, for every format.
pub const BELOW_REASON: &str = "below the run's cache-line floor, which was measured at busier \
     moments: no multiple";
