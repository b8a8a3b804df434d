//! A sweep keeps its `--budget` (issue: `--budget 5s` took 8-9 s): the
//! points and the confirmation pass share what setup left, and the pass
//! keeps within its share however many events it is offered.

use std::time::{Duration, Instant};

use anyhow::Result;

use super::confirm::{pick_events, CONFIRM_BUDGET_SHARE};
use super::engine::{measure_all, SweepClock, SweepRunner, SweepSpec};
use crate::analysis::confirm::{Event, EventKind};
use crate::measure::policy::{BlockRunner, BlockTiming};

/// Blocks that take the wall time their operations claim (plus a control
/// overhead), on a line with a drop-out at 2500 bytes, so the pass has an event to
/// measure again; every other block 30% slower, so
/// that no point converges before its share is spent.
struct Curve(u64);

impl Curve {
    fn op_ns(bytes: u64) -> f64 {
        (5_000 + bytes) as f64 * if bytes == 2_500 { 2.0 } else { 1.0 }
    }
}

impl BlockRunner for Curve {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        self.0 += 1;
        let op_ns = Self::op_ns(bytes) * if self.0.is_multiple_of(2) { 1.3 } else { 1.0 };
        let timed_ns = (op_ns * 2.0 * repeats as f64) as u64;
        let wall0 = Instant::now();
        std::thread::sleep(Duration::from_nanos(timed_ns + 50_000));
        Ok(BlockTiming {
            op_ns,
            timed_ns,
            wall_ns: wall0.elapsed().as_nanos() as u64,
            ..Default::default()
        })
    }
}

impl SweepRunner for Curve {
    fn integrity(&mut self, _: u64) -> Result<()> {
        Ok(())
    }
    fn tails(&mut self, _: u64, _: f64) -> Result<Option<crate::result::Tails>> {
        Ok(None)
    }
}

/// With 0.3 s of a 2 s budget spent on setup, the points and the pass end
/// within what was left (plus a block's slack), and the pass within its
/// share: before, the points alone took the budget's 90% after setup and
/// the pass took what its rounds needed.
#[test]
fn the_points_and_the_pass_keep_what_setup_left() {
    let sizes: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
    let mut spec = SweepSpec::for_tests("tcp", sizes);
    spec.budget = Duration::from_secs(2);
    let setup = Duration::from_millis(300);
    let mut clock = SweepClock::new(Instant::now() - setup, spec.budget);
    let mut points = Vec::new();
    let began = Instant::now();
    let c = measure_all(
        &spec,
        &mut clock,
        &mut Curve(0),
        None,
        &mut points,
        &mut |_| {},
    )
    .unwrap()
    .expect("a pass record");
    let took = began.elapsed();
    assert_eq!(points.len(), 40);
    assert!(!c.events.is_empty() && !c.points.is_empty(), "{c:?}");
    // Sleeps overshoot on a loaded machine: a second of slack for 40
    // sizes' least work, far below the 1.6x overrun this guards against.
    let left = spec.budget - setup;
    assert!(took < left + Duration::from_secs(1), "{took:?} of {left:?}");
    let share_s = spec.budget.as_secs_f64() * CONFIRM_BUDGET_SHARE;
    assert!(c.budget_s <= share_s + 1e-9, "{c:?}");
    assert!(c.wall_s <= c.budget_s * 1.5 + 0.1, "pass {c:?}");
    let phases: Vec<&str> = clock.phases().iter().map(|p| p.0).collect();
    assert_eq!(phases, ["warmup", "points", "confirm"]);
}

/// The pass serves events most telling first, skips one whose window does
/// not fit and takes later ones that do, and never plans beyond its
/// budget.
#[test]
fn the_pass_picks_the_events_its_budget_affords() {
    let bytes: Vec<u64> = (0..40).map(|i| 1000 + 100 * i).collect();
    let at = |b: u64| Event {
        kind: EventKind::Switchover,
        from_bytes: b,
        to_bytes: b,
    };
    // The first event sits among dear sizes (10 ms a visit), the others
    // among cheap ones (1 ms).
    let events = [at(4500), at(1500), at(2500), at(3300)];
    let visit = |i: usize| if bytes[i] >= 4000 { 10e6 } else { 1e6 };
    let rounds = 6;
    let cost = |sizes: &[u64]| -> f64 {
        sizes
            .iter()
            .map(|s| visit(bytes.binary_search(s).unwrap()))
            .sum::<f64>()
            * rounds as f64
    };
    let everything = pick_events(&bytes, &events, &visit, rounds, u64::MAX);
    assert_eq!(everything.0, [0, 1, 2, 3]);
    let budget_ns = 150_000_000;
    let (chosen, sizes) = pick_events(&bytes, &events, &visit, rounds, budget_ns);
    assert!(!chosen.contains(&0), "{chosen:?}");
    assert!(chosen.len() >= 2 && chosen[0] == 1, "{chosen:?}");
    assert!(cost(&sizes) <= budget_ns as f64);
    let (none, no_sizes) = pick_events(&bytes, &events, &visit, rounds, 1);
    assert!(none.is_empty() && no_sizes.is_empty());
}
