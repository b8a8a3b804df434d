//! The sweep side of `--cost whole` and `--cost soak`: a [`SweepRunner`]
//! that wraps the real one and reads the kernel's busy ticks (and the
//! soakers' counters) before and after every block.
//!
//! The reads happen outside the timed part of a block (between blocks):
//! a read of /proc/stat and relaxed loads, so the timing loop itself is
//! untouched. The cost of the blocks kept as a point's trials gives the
//! point's whole CPU cost; a block's window includes its few control messages, so the
//! figure is what the point's blocks cost the machine, everything included.

use anyhow::Result;

use super::runner::SweepRunner;
use crate::load::whole::{Counters, Reading, WholeCpu, WholeSetup, Window};
use crate::measure::policy::{BlockRunner, BlockTiming};
use crate::result::{Mode, Point, Tails};

/// Wraps a runner; reads the counters only when a whole cost is active.
pub(super) struct Meter<'a> {
    inner: &'a mut dyn SweepRunner,
    counters: Option<Counters>,
    /// Readings before and after a block, kept so that reading does not
    /// allocate once their buffers have grown.
    before: Reading,
    after: Reading,
    /// What each block cost since the last point was taken.
    blocks: Vec<Window>,
    /// Blocks run so far, and their wall time beyond their timed part
    /// (control messages, waits for the peer), ns: what a block costs
    /// beyond its operations ([`Meter::blocks_so_far`]).
    blocks_run: (u64, u64),
}

impl<'a> Meter<'a> {
    /// Wrap `inner`, with counters (and soakers) when `setup` asks for a
    /// whole cost.
    pub fn new(inner: &'a mut dyn SweepRunner, setup: Option<&WholeSetup>) -> Meter<'a> {
        Meter {
            inner,
            counters: setup.and_then(Counters::start),
            before: Reading::default(),
            after: Reading::default(),
            blocks: Vec::new(),
            blocks_run: (0, 0),
        }
    }

    /// Blocks run so far and their wall time beyond their timed parts,
    /// ns, every block counted (calibration and disturbed ones too).
    pub fn blocks_so_far(&self) -> (u64, u64) {
        self.blocks_run
    }

    /// The whole CPU cost of `point`, from its kept trials (the last
    /// `point.trials` blocks run), and forget the blocks.
    pub fn take_point(&mut self, point: &Point, mode: Mode) -> Option<WholeCpu> {
        let counters = self.counters.as_ref()?;
        let kept = (point.trials as usize).min(self.blocks.len());
        let mut sum = Window::default();
        for w in &self.blocks[self.blocks.len() - kept..] {
            sum.add(*w);
        }
        self.blocks.clear();
        let ops = (point.trials * point.repeats).max(1) as f64;
        let (bytes_per_op, msgs_per_op) = match mode {
            Mode::Pingpong | Mode::Bidir => (2 * point.bytes, 2),
            Mode::Stream => (point.bytes, 1),
        };
        let mut w = counters.whole(&sum);
        let getrusage = point.cpu_client.ns_per_byte + point.cpu_server.ns_per_byte;
        w.getrusage_ns_per_byte = Some(getrusage);
        if !w.stands() {
            // Withheld, with its reason: never a 0 that reads as free.
            return Some(w);
        }
        let per_byte = w.cpu_ns / (ops * bytes_per_op.max(1) as f64);
        w.ns_per_byte = Some(per_byte);
        w.ns_per_message = Some(w.cpu_ns / (ops * msgs_per_op as f64));
        w.whole_over_getrusage = (getrusage > 0.0).then(|| per_byte / getrusage);
        Some(w)
    }
}

impl BlockRunner for Meter<'_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let t = match &mut self.counters {
            None => self.inner.run(bytes, repeats)?,
            Some(counters) => {
                counters.read_into(&mut self.before);
                let t = self.inner.run(bytes, repeats)?;
                counters.read_into(&mut self.after);
                self.blocks.push(counters.window(&self.before, &self.after));
                t
            }
        };
        self.blocks_run.0 += 1;
        self.blocks_run.1 += t.wall_ns.saturating_sub(t.timed_ns);
        Ok(t)
    }
}

impl SweepRunner for Meter<'_> {
    fn integrity(&mut self, bytes: u64) -> Result<()> {
        self.inner.integrity(bytes)
    }

    fn tails(&mut self, bytes: u64, median_one_way_ns: f64) -> Result<Option<Tails>> {
        self.inner.tails(bytes, median_one_way_ns)
    }

    fn hints(&self) -> crate::analysis::CauseHints {
        self.inner.hints()
    }
}
