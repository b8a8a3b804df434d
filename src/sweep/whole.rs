//! The sweep side of `--cost whole`: a [`SweepRunner`] that wraps the real
//! one and reads the soakers' counters before and after every block.
//!
//! The reads happen outside the timed part of a block (between blocks) and
//! are relaxed loads, so the timing loop itself is untouched. The lost
//! capacity of the blocks kept as a point's trials gives the point's whole
//! CPU cost; a block's window includes its few control messages, so the
//! figure is what the point's blocks cost the machine, everything included.

use anyhow::Result;

use super::engine::SweepRunner;
use crate::load::soaker::{Calibration, Lost, Soaker};
use crate::load::whole::WholeCpu;
use crate::measure::policy::{BlockRunner, BlockTiming};
use crate::result::{Mode, Point, Tails};

/// Wraps a runner; soaks only when `--cost whole` is active.
pub(super) struct Meter<'a> {
    inner: &'a mut dyn SweepRunner,
    soak: Option<(Soaker, Calibration)>,
    /// Lost capacity of each block since the last point was taken.
    blocks: Vec<Lost>,
}

impl<'a> Meter<'a> {
    /// Wrap `inner`, starting soakers if a calibration is active.
    pub fn new(inner: &'a mut dyn SweepRunner) -> Meter<'a> {
        let soak = crate::load::whole::active()
            .and_then(|cal| Soaker::start(&cal.cpus).ok().map(|s| (s, cal)));
        Meter {
            inner,
            soak,
            blocks: Vec::new(),
        }
    }

    /// The whole CPU cost of `point`, from its kept trials (the last
    /// `point.trials` blocks run), and forget the blocks.
    pub fn take_point(&mut self, point: &Point, mode: Mode) -> Option<WholeCpu> {
        let (_, cal) = self.soak.as_ref()?;
        let kept = (point.trials as usize).min(self.blocks.len());
        let mut lost = Lost::default();
        for l in &self.blocks[self.blocks.len() - kept..] {
            lost.add(*l);
        }
        self.blocks.clear();
        let ops = (point.trials * point.repeats).max(1) as f64;
        let (bytes_per_op, msgs_per_op) = match mode {
            Mode::Pingpong | Mode::Bidir => (2 * point.bytes, 2),
            Mode::Stream => (point.bytes, 1),
        };
        let mut w = WholeCpu::from_lost(lost, cal.cpus.len());
        let per_byte = lost.cpu_ns / (ops * bytes_per_op.max(1) as f64);
        let getrusage = point.cpu_client.ns_per_byte + point.cpu_server.ns_per_byte;
        w.ns_per_byte = Some(per_byte);
        w.ns_per_message = Some(lost.cpu_ns / (ops * msgs_per_op as f64));
        w.getrusage_ns_per_byte = Some(getrusage);
        w.whole_over_getrusage = (getrusage > 0.0).then(|| per_byte / getrusage);
        Some(w)
    }
}

impl BlockRunner for Meter<'_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let Some((soaker, cal)) = &self.soak else {
            return self.inner.run(bytes, repeats);
        };
        let before = soaker.snapshot();
        let t = self.inner.run(bytes, repeats)?;
        self.blocks
            .push(Lost::between(cal, &before, &soaker.snapshot()));
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
}
