//! How long a matrix cell's parts may take before they are cut at
//! their deadline (issue 35 item 5): their budget share and what setting
//! a sweep up costs this agent, learnt from its last sweeps; a sweep
//! refused at the other agent's door tried again within its deadline.

use std::time::{Duration, Instant};

/// What this agent's last sweeps took beyond their budgets (the last
/// [`OVERRUNS_KEPT`]), kept by its order loop from cell to cell.
#[derive(Debug, Default)]
pub(super) struct Overruns(Vec<Duration>);

/// Sweeps whose overrun [`Overruns::allowance`] rests on.
const OVERRUNS_KEPT: usize = 9;

impl Overruns {
    /// Keep a sweep's time beyond its budget.
    pub(super) fn push(&mut self, d: Duration) {
        if self.0.len() == OVERRUNS_KEPT {
            self.0.remove(0);
        }
        self.0.push(d);
    }

    /// What a part of a cell may spend beyond its budget on setting up
    /// (connecting, both ends' fingerprints, the warm-up, the fewest
    /// trials): 1.5 times the median of what this agent's last sweeps took
    /// so, plus 0.2 s (1 s before the first; 3 s at most). Short cells on
    /// a loaded host spend most of their time so (0.1-1 s a sweep on a
    /// 2-vCPU machine), and are not cut for it; the median passes over a
    /// lossy cell.
    pub(super) fn allowance(&self) -> Duration {
        if self.0.is_empty() {
            return Duration::from_secs(1);
        }
        let mut sorted = self.0.clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        (median.mul_f64(1.5) + Duration::from_millis(200)).min(Duration::from_secs(3))
    }
}

/// Attempts of a cell's sweep refused at the other agent's door: 4 once
/// failed a cell under a flood of 1,036 idle connections from many
/// addresses (each attempt evicted to admit a newer stranger), where the
/// serve's random early drop lets a good client in within a few more.
const DOOR_ATTEMPTS: u32 = 8;

/// `spec`'s sweep, tried again (after 25, 50, 75 ... ms) while the other
/// agent's server refuses it at the door before anything was measured:
/// strangers holding its handshake places (a flood of idle connections)
/// once failed a cell, where a moment later it gets in. Never past
/// `deadline`.
pub(super) fn sweep_past_the_door(
    spec: &crate::sweep::engine::SweepSpec,
    deadline: Instant,
) -> anyhow::Result<crate::sweep::engine::SweepOutcome> {
    use crate::peer::client::refused_at_the_door;
    let mut attempt = 1;
    loop {
        let outcome = crate::sweep::engine::run_sweep(spec, &mut crate::sweep::progress::Quiet);
        let refused = match &outcome {
            Err(e) => refused_at_the_door(e),
            Ok(o) => {
                o.result.points.is_empty() && o.error.as_ref().is_some_and(refused_at_the_door)
            }
        };
        let pause = Duration::from_millis(25) * attempt;
        if !refused || attempt >= DOOR_ATTEMPTS || Instant::now() + pause >= deadline {
            return outcome;
        }
        std::thread::sleep(pause);
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_follows_the_median_overrun_and_passes_over_a_lossy_one() {
        let mut o = Overruns::default();
        assert_eq!(o.allowance(), Duration::from_secs(1), "before any sweep");
        for ms in [400, 100, 40_000, 200] {
            o.push(Duration::from_millis(ms));
        }
        // Median of 100, 200, 400, 40 s: 400 ms; x 1.5 + 0.2 s.
        assert_eq!(o.allowance(), Duration::from_millis(800));
        for _ in 0..OVERRUNS_KEPT {
            o.push(Duration::from_secs(60));
        }
        assert_eq!(o.allowance(), Duration::from_secs(3), "capped");
    }
}
