//! The sweep's clock: `--budget` is the wall time of the whole sweep, from
//! the moment it starts to the moment its result is assembled, and every
//! phase is timed against it.
//!
//! A sweep once took 1.6-1.8x its budget (`--budget 5s`: 8.0 s for shm,
//! 8.8 s for tcp) because only the points and the confirmation pass were
//! counted, and the pass took what it needed whatever its share: setup and
//! handshake, the limits (memcpy, floor, core-to-core: 20% of the budget
//! when missing), the floor measured again after the sweep, and closing
//! the peer came on top. Now the phases run before the points are taken
//! off the budget and the phases after them are reserved
//! ([`SweepClock::measuring_left_ns`]), so the points and the pass share
//! what is left ([`super::confirm`] schedules the pass within its part).
//!
//! `WULF_PHASES=1` prints each phase's wall time on stderr (one line per
//! sweep), to see where the time goes.

use std::time::{Duration, Instant};

/// Wall time kept for closing the session and the local peer after the
/// pass, ns: a clean close is a few control messages and a process exit
/// (about 10-40 ms measured on a loaded 2-vCPU VM).
pub const CLOSE_RESERVE_NS: u64 = 50_000_000;

/// The budget and the time each phase of one sweep took.
#[derive(Debug)]
pub struct SweepClock {
    started: Instant,
    budget: Duration,
    /// Time kept for the phases after the pass (floor again, close), ns.
    reserve_after_ns: u64,
    last: Instant,
    phases: Vec<(&'static str, f64)>,
    /// The data crosses a network link (another machine, a lab node):
    /// the points' shares are planned against its rate, and sizes that
    /// cannot fit are left out (see [`super::link_fit`]). False on this
    /// machine, where the points share the budget evenly as they always
    /// did: a loaded machine's noisy medians are no rate to plan with.
    pub across_link: bool,
    /// The goodput limit of that link, bit/s, when known.
    pub link_bits_per_s: Option<f64>,
    /// The sizes the budget could not hold, when the points left some out.
    pub left_out: Option<crate::result::SizesLeftOut>,
    /// Sizes measured after the deadline passed whose tail pass
    /// (`--tails`) was left out.
    pub tails_left_out: Vec<u64>,
}

impl SweepClock {
    /// A clock for a sweep of `budget` that started at `started`.
    pub fn new(started: Instant, budget: Duration) -> SweepClock {
        SweepClock {
            started,
            budget,
            reserve_after_ns: 0,
            last: started,
            phases: Vec::new(),
            across_link: false,
            link_bits_per_s: None,
            left_out: None,
            tails_left_out: Vec::new(),
        }
    }

    /// Keep `ns` of the budget for phases that run after the pass.
    pub fn reserve_after(&mut self, ns: u64) {
        self.reserve_after_ns = self.reserve_after_ns.saturating_add(ns);
    }

    /// The whole budget, ns.
    pub fn budget_ns(&self) -> u64 {
        self.budget.as_nanos().min(u64::MAX as u128) as u64
    }

    /// What the points and the confirmation pass may still spend, ns: the
    /// budget less the time spent so far and the time reserved after them.
    /// Never below a fifth of the budget, so that slow setup on a busy
    /// machine leaves the points something to measure with (the sweep
    /// then overruns by what setup overran, and `WULF_PHASES` says so).
    pub fn measuring_left_ns(&self) -> u64 {
        let spent = self.started.elapsed().as_nanos() as u64;
        self.budget_ns()
            .saturating_sub(spent)
            .saturating_sub(self.reserve_after_ns)
            .max(self.budget_ns() / 5)
    }

    /// Record that the phase `name` ended now (it began at the last mark).
    pub fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.phases
            .push((name, now.duration_since(self.last).as_secs_f64()));
        self.last = now;
    }

    /// The seconds the phase `name` took, when it was recorded.
    pub fn phase_s(&self, name: &str) -> Option<f64> {
        self.phases.iter().find(|(n, _)| *n == name).map(|p| p.1)
    }

    /// The phases recorded so far, seconds each.
    pub fn phases(&self) -> &[(&'static str, f64)] {
        &self.phases
    }

    /// One line: each phase's seconds, the total and the budget.
    pub fn line(&self, transport: &str) -> String {
        let parts: Vec<String> = self
            .phases
            .iter()
            .map(|(n, s)| format!("{n} {s:.3}"))
            .collect();
        format!(
            "wulf: phases of the {transport} sweep (s): {}; total {:.3} of a {:.3} budget",
            parts.join(", "),
            self.started.elapsed().as_secs_f64(),
            self.budget.as_secs_f64()
        )
    }

    /// Print [`Self::line`] on stderr when `WULF_PHASES` is set (not `0`).
    pub fn report(&self, transport: &str) {
        if std::env::var_os("WULF_PHASES").is_some_and(|v| v != "0") {
            eprintln!("{}", self.line(transport));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Time spent and reserved is taken off; a fifth is always left.
    #[test]
    fn what_is_left_counts_setup_and_the_reserve() {
        let budget = Duration::from_secs(10);
        let mut c = SweepClock::new(Instant::now() - Duration::from_secs(2), budget);
        let left = c.measuring_left_ns();
        assert!((7_900_000_000..=8_000_000_000).contains(&left), "{left}");
        c.reserve_after(1_000_000_000);
        assert!(c.measuring_left_ns() <= 7_000_000_000);
        let late = SweepClock::new(Instant::now() - Duration::from_secs(30), budget);
        assert_eq!(late.measuring_left_ns(), 2_000_000_000);
        let mut c = SweepClock::new(Instant::now(), budget);
        c.mark("setup");
        c.mark("points");
        assert_eq!(c.phases().len(), 2);
        assert!(c.line("tcp").contains("setup 0.0"));
    }
}
