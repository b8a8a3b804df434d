//! `SweepSpec::deadline`: a sweep stops at its deadline and keeps the
//! trials measured by then (a matrix's lossy cell, issue 35 item 5).

use std::time::{Duration, Instant};

use anyhow::Result;

use super::budget::SweepClock;
use super::measuring::measure_all;
use super::progress::{Collect, Quiet};
use super::runner::SweepRunner;
use super::spec::SweepSpec;
use crate::measure::policy::{BlockRunner, BlockTiming};

/// Blocks that take `block` of wall time each, never steady enough to
/// converge (every other trial 30% slower).
struct Slow {
    block: Duration,
    blocks: usize,
}

impl BlockRunner for Slow {
    fn run(&mut self, _bytes: u64, repeats: u64) -> Result<BlockTiming> {
        std::thread::sleep(self.block);
        self.blocks += 1;
        let op_ns = if self.blocks.is_multiple_of(2) {
            1.3e6
        } else {
            1e6
        };
        Ok(BlockTiming {
            op_ns,
            timed_ns: (op_ns * repeats as f64) as u64,
            wall_ns: self.block.as_nanos() as u64,
            ..Default::default()
        })
    }
}

impl SweepRunner for Slow {
    fn integrity(&mut self, _: u64) -> Result<()> {
        Ok(())
    }
    fn tails(&mut self, _: u64, _: f64) -> Result<Option<crate::result::Tails>> {
        Ok(None)
    }
}

fn spec(deadline: Instant) -> SweepSpec {
    let mut s = SweepSpec::for_tests("tcp", vec![64, 1024, 65536]);
    s.budget = Duration::from_secs(60);
    s.deadline = Some(deadline);
    s
}

#[test]
fn a_sweep_stops_at_its_deadline_and_keeps_its_trials() {
    let mut r = Slow {
        block: Duration::from_millis(10),
        blocks: 0,
    };
    let began = Instant::now();
    let mut points = Vec::new();
    let s = spec(began + Duration::from_millis(300));
    let mut told = Collect::default();
    let out = measure_all(
        &s,
        &mut SweepClock::new(Instant::now(), s.budget),
        &mut r,
        None,
        &mut points,
        &mut told,
    );
    assert!(out.is_ok(), "cut, not failed: {out:?}");
    // A 60 s budget, ended at 0.3 s (plus a block or so).
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert!(!points.is_empty() && points.len() < 3, "{}", points.len());
    let last = points.last().unwrap();
    assert!(last.noisy, "a point cut before converging is noisy");
    assert!(points.iter().all(|p| p.trials >= 3), "{points:?}");
    // The reporter heard of every point kept, the cut one too, in order.
    let heard: Vec<u64> = told.0.iter().map(|p| p.bytes).collect();
    let kept: Vec<u64> = points.iter().map(|p| p.bytes).collect();
    assert_eq!(heard, kept);
}

#[test]
fn a_deadline_already_past_still_keeps_three_trials_of_the_first_size() {
    let mut r = Slow {
        block: Duration::from_millis(1),
        blocks: 0,
    };
    let mut points = Vec::new();
    let s = spec(Instant::now());
    assert!(measure_all(
        &s,
        &mut SweepClock::new(Instant::now(), s.budget),
        &mut r,
        None,
        &mut points,
        &mut Quiet
    )
    .is_ok());
    assert_eq!(points.len(), 1, "the later sizes are left out");
    assert_eq!(points[0].trials, 3);
}

/// Blocks whose operations cost `op` per 64 KiB (a copy-bound transport):
/// never steady, so a point runs until its budget.
struct Copies {
    op_per_64k: Duration,
}

impl BlockRunner for Copies {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let op = self.op_per_64k.mul_f64((bytes as f64 / 65536.0).max(1.0));
        let took = op * repeats as u32;
        std::thread::sleep(took);
        Ok(BlockTiming {
            op_ns: op.as_nanos() as f64 * (1.0 + 0.5 * fastrand::f64()),
            timed_ns: took.as_nanos() as u64,
            wall_ns: took.as_nanos() as u64,
            ..Default::default()
        })
    }
}

impl SweepRunner for Copies {
    fn integrity(&mut self, _: u64) -> Result<()> {
        Ok(())
    }
    fn tails(&mut self, _: u64, _: f64) -> Result<Option<crate::result::Tails>> {
        Ok(None)
    }
}

/// A small size before a large one (1 MiB then 4 MiB through 4 KiB
/// socket buffers): an even share left the large size too little for its
/// least work, and it was left out (a 10 s sweep at load 5). Now the
/// small one ends once it has its least trials and the large one's least
/// work would no longer fit after it, and both are measured, neither cut.
#[test]
fn a_point_leaves_the_larger_sizes_after_it_their_least_work() {
    // 1 MiB at 16 ms per operation, 8 MiB at 128 ms: eight blocks of the
    // larger take about 1 s, more than half of a 2 s budget's points.
    let mut r = Copies {
        op_per_64k: Duration::from_millis(1),
    };
    let mut s = SweepSpec::for_tests("tcp", vec![1 << 20, 8 << 20]);
    s.budget = Duration::from_secs(2);
    let mut points = Vec::new();
    let mut clock = SweepClock::new(Instant::now(), s.budget);
    measure_all(&s, &mut clock, &mut r, None, &mut points, &mut Quiet).unwrap();
    let sizes: Vec<u64> = points.iter().map(|p| p.bytes).collect();
    assert_eq!(sizes, [1 << 20, 8 << 20], "left out: {:?}", clock.left_out);
    assert!(points.iter().all(|p| !p.cut && p.trials >= 6), "{points:?}");
}
