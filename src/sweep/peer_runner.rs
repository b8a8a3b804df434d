//! The real [`BlockRunner`] of a sweep against a peer: each block is
//! announced on the control channel, run on the data channel, and the
//! peer's side of it read back.

use std::time::Instant;

use anyhow::{Context, Result};

use super::runner::SweepRunner;
use crate::error::peer;
use crate::measure::loops::{client_block, Pools};
use crate::measure::policy::{BlockRunner, BlockTiming};
use crate::peer::client::PeerSession;
use crate::peer::protocol::BlockKind;
use crate::result::{Mode, Tails};
use crate::transport::Endpoint;

/// Operations per integrity block.
const INTEGRITY_REPEATS: u64 = 3;

/// Runs blocks against the peer: the real [`BlockRunner`].
pub(super) struct Runner<'a> {
    pub(super) session: &'a mut PeerSession,
    pub(super) ep: &'a mut dyn Endpoint,
    pub(super) pools: &'a mut Pools,
    pub(super) mode: Mode,
    pub(super) overhead_ns: f64,
    pub(super) samples: Vec<u64>,
    /// Timed, or Checked with `--integrity all`.
    pub(super) timed_kind: BlockKind,
    /// The thresholds the data channel's settings state.
    pub(super) hints: crate::analysis::CauseHints,
}

impl Runner<'_> {
    fn block(
        &mut self,
        kind: BlockKind,
        bytes: u64,
        repeats: u64,
    ) -> Result<(
        crate::measure::loops::BlockMeasure,
        crate::peer::client::PeerBlock,
    )> {
        self.session.start_block(self.mode, kind, bytes, repeats)?;
        let mine = client_block(
            self.ep,
            self.pools,
            self.mode,
            kind,
            bytes,
            repeats,
            &mut self.samples,
        );
        match mine {
            Ok(m) => Ok((m, self.session.finish_block()?)),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(e.into()),
            Err(e) => {
                let theirs = self.session.error_message();
                Err(peer(match theirs {
                    Some(msg) => {
                        format!("data channel failed at {bytes} bytes: {e}; the peer says: {msg}")
                    }
                    None => {
                        format!("data channel failed at {bytes} bytes: {e} (did the peer die?)")
                    }
                }))
            }
        }
    }

    fn tail_pass(&mut self, bytes: u64, median_one_way_ns: f64) -> Result<Tails> {
        use super::tails;
        let n = tails::round_trips(median_one_way_ns);
        // In chunks, so the pass can stop at its time (see `tails`); the
        // buffers are allocated here, outside every timed loop.
        let mut all: Vec<u64> = Vec::with_capacity(n as usize);
        self.samples = Vec::with_capacity(tails::CHUNK.min(n) as usize);
        let t0 = Instant::now();
        while (all.len() as u64) < n
            && !tails::enough(all.len() as u64, t0.elapsed().as_nanos() as f64)
        {
            let chunk = tails::CHUNK.min(n - all.len() as u64);
            self.block(BlockKind::Tails, bytes, chunk)?;
            all.extend_from_slice(&self.samples);
        }
        let t = tails::summarise(&all, self.overhead_ns);
        self.samples = all;
        Ok(t)
    }
}

impl SweepRunner for Runner<'_> {
    fn integrity(&mut self, bytes: u64) -> Result<()> {
        self.block(BlockKind::Integrity, bytes, INTEGRITY_REPEATS)
            .with_context(|| format!("integrity pass at {bytes} bytes"))?;
        Ok(())
    }

    fn tails(&mut self, bytes: u64, median_one_way_ns: f64) -> Result<Option<Tails>> {
        self.tail_pass(bytes, median_one_way_ns).map(Some)
    }

    fn hints(&self) -> crate::analysis::CauseHints {
        self.hints.clone()
    }
}

impl BlockRunner for Runner<'_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let wall0 = Instant::now();
        let (mine, theirs) = self.block(self.timed_kind, bytes, repeats)?;
        let timed = match self.mode {
            Mode::Stream => theirs.elapsed_ns,
            Mode::Pingpong | Mode::Bidir => mine.elapsed_ns,
        };
        let timed_ns = (timed as f64 - self.overhead_ns).max(1.0);
        let per_op = timed_ns / repeats as f64;
        Ok(BlockTiming {
            op_ns: match self.mode {
                Mode::Pingpong => per_op / 2.0,
                Mode::Stream | Mode::Bidir => per_op,
            },
            timed_ns: timed_ns as u64,
            wall_ns: wall0.elapsed().as_nanos() as u64,
            client_cpu_ns: (
                mine.cpu.user.as_nanos() as u64,
                mine.cpu.system.as_nanos() as u64,
            ),
            server_cpu_ns: (theirs.user_ns, theirs.sys_ns),
            client_run_delay_ns: mine.run_delay_ns,
            server_run_delay_ns: theirs.run_delay_ns,
            // Each end's own helpers (on one host only the peer names
            // the pvmd both ends share: it is counted once).
            helper_cpu_ns: match (mine.helper_cpu_ns, theirs.helper_cpu_ns) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            },
        })
    }
}
