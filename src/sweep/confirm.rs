//! The confirmation pass at the end of a sweep: the sizes around each
//! candidate event are measured again with fresh trials, and an event is
//! kept as confirmed only when the fresh trials show it too (the rule and
//! why: [`crate::analysis::confirm`]).
//!
//! The pass runs inside the sweep's budget: the sizes share all but
//! [`CONFIRM_BUDGET_SHARE`] of it, and the pass gets the rest, split evenly
//! over the sizes it measures again (each still gets the policy's minimum
//! of trials, so a pass over many sizes may overrun its share a little,
//! as the last sizes of a sweep can). Each size is measured with the same
//! repetition policy as in the sweep, its repeat count capped at the one
//! the sweep used for it, so the fresh trials are comparable.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::engine::{plan_for, SweepRunner, SweepSpec};
use crate::analysis::{analyse_curve, confirm, CauseHints};
use crate::error::WulfError;
use crate::measure::policy::measure_point;
use crate::result::{CheckedEvent, Confirmation, Point, RemeasuredPoint};
use crate::stats::Summary;

/// Share of a sweep's budget kept for the confirmation pass.
pub const CONFIRM_BUDGET_SHARE: f64 = 0.1;

/// The budget of the first pass over the sizes, ns.
pub fn main_budget_ns(budget: Duration) -> u64 {
    (budget.as_nanos() as f64 * (1.0 - CONFIRM_BUDGET_SHARE)) as u64
}

/// Split the outcome of `measure_all` into the error (if any) and the
/// confirmation record (when the sweep got that far).
pub fn split(
    outcome: Result<Option<Confirmation>>,
) -> (Option<anyhow::Error>, Option<Confirmation>) {
    match outcome {
        Ok(c) => (None, c),
        Err(e) => (Some(e), None),
    }
}

/// Run the pass over the candidate events of `points` (ascending sizes).
pub(super) fn confirmation_pass(
    spec: &SweepSpec,
    runner: &mut dyn SweepRunner,
    points: &[Point],
    stop: &dyn Fn() -> bool,
) -> Result<Option<Confirmation>> {
    let started = Instant::now();
    let budget_ns = (spec.budget.as_nanos() as f64 * CONFIRM_BUDGET_SHARE) as u64;
    let bytes: Vec<u64> = points.iter().map(|p| p.bytes).collect();
    let median: Vec<f64> = points.iter().map(|p| p.median_ns).collect();
    let low: Vec<f64> = points.iter().map(|p| p.ci_low_ns).collect();
    let high: Vec<f64> = points.iter().map(|p| p.ci_high_ns).collect();
    let analysis = analyse_curve(&bytes, &median, &low, &high, &CauseHints::default());
    let events = confirm::events(&analysis);
    let sizes = confirm::sizes_to_remeasure(&bytes, &events);
    let mut fresh = Vec::with_capacity(sizes.len());
    for (k, &size) in sizes.iter().enumerate() {
        if stop() {
            return Err(WulfError::Interrupted.into());
        }
        let spent_ns = started.elapsed().as_nanos() as u64;
        let share_ns = budget_ns.saturating_sub(spent_ns) / (sizes.len() - k) as u64;
        let cap = points
            .iter()
            .find(|p| p.bytes == size)
            .map_or(u64::MAX, |p| p.repeats);
        let plan = plan_for(share_ns, spec.precision, cap);
        let outcome = measure_point(runner, size, &plan, stop)?;
        if outcome.interrupted {
            return Err(WulfError::Interrupted.into());
        }
        let Some(s) = Summary::of(&outcome.trials_ns) else {
            continue;
        };
        fresh.push(RemeasuredPoint {
            bytes: size,
            trials: s.n as u64,
            median_ns: s.median,
            ci_low_ns: s.ci_low,
            ci_high_ns: s.ci_high,
            noisy: outcome.noisy,
        });
    }
    let verdicts = confirm::judge(&bytes, &median, &low, &high, &fresh, &events);
    Ok(Some(Confirmation {
        budget_s: budget_ns as f64 / 1e9,
        wall_s: started.elapsed().as_secs_f64(),
        points: fresh,
        events: events
            .iter()
            .zip(verdicts)
            .map(|(e, confirmed)| CheckedEvent {
                kind: e.kind.name().into(),
                from_bytes: e.from_bytes,
                to_bytes: e.to_bytes,
                confirmed,
            })
            .collect(),
    }))
}
