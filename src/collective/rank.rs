//! What every rank of a collective run executes, whoever started it.
//!
//! Rank 0 leads: it runs `wulf sweep`'s repetition policy
//! ([`crate::measure::policy::measure_point`]: calibration, trials until the
//! median's 95% interval is within the precision or the size's share of
//! the budget is spent, noisy sizes flagged) and, before each block, sends
//! every other rank its order (size and repeat count, or stop) over the
//! same communicator. Then every rank runs the block:
//!
//! 1. a barrier (the backend's own), so the ranks start together;
//! 2. `repeats` operations, each timed alone by the rank's own clock and
//!    followed by a barrier, as OSU's benchmarks do (barriers themselves
//!    run back to back): nothing in that loop allocates, prints or locks
//!    (the buffers of the largest size exist before the first block);
//! 3. an allgather of the ranks' times to rank 0, outside the timing.
//!
//! The block's figure is the slowest rank's mean time per operation (a
//! collective is done when its last rank is: a broadcast's root may return
//! long before the leaves have the data); the ranks' average and the
//! fastest rank are kept beside it. Every wait for another rank is bounded
//! by the backend (the channels' timeout; MPI's watchdog).

use std::time::Instant;

use anyhow::{Context, Result};

use super::{Collective, CollectiveJob, CollectiveOutput};
use crate::comm::Communicator;
use crate::measure::policy::{measure_point, BlockRunner, BlockTiming};
use crate::result::collective::CollectivePoint;
use crate::sweep::engine::plan_for;

/// First value of an order: stop (the others: unused).
const STOP: f64 = 0.0;
/// First value of an order: run a block of `[_, bytes, repeats]`.
const BLOCK: f64 = 1.0;
/// Longest sweep-wide warm-up, ns (as `wulf sweep`: a fiftieth of the
/// budget, at most this).
const MAX_WARMUP_NS: u64 = 200_000_000;

/// Runs `job` on this rank of `comm`; every rank must call it. Rank 0
/// returns the measured sizes, the others an empty output.
pub fn run_rank(job: &CollectiveJob, comm: &dyn Communicator) -> Result<CollectiveOutput> {
    job.check_process_count(comm.size())?;
    let mut buffers = Buffers::new(job, comm.size());
    if comm.rank() != 0 {
        follow(comm, &mut buffers)?;
        return Ok(CollectiveOutput {
            points: Vec::new(),
            interrupted: false,
        });
    }
    let mut lead = Lead {
        comm,
        buffers: &mut buffers,
        times_ns: vec![0.0; comm.size()],
        spread_ns: Vec::new(),
    };
    let mut points = Vec::with_capacity(job.sizes_bytes.len());
    let interrupted = sweep(job, &mut lead, &mut points)?;
    // Only after a clean end: a failed link cannot carry the order, and
    // the process group ends the other ranks anyway.
    for peer in 1..comm.size() {
        comm.send(peer, &[STOP, 0.0, 0.0])?;
    }
    Ok(CollectiveOutput {
        points,
        interrupted,
    })
}

/// Every size in turn, each with its share of what is left of the budget,
/// as `wulf sweep` does; true when interrupted before the last one.
fn sweep(job: &CollectiveJob, lead: &mut Lead, points: &mut Vec<CollectivePoint>) -> Result<bool> {
    let budget_ns = job.budget_ms.saturating_mul(1_000_000);
    let t0 = Instant::now();
    let stop = crate::sweep::interrupted;
    // Sweep-wide warm-up (dropped), as `wulf sweep`: caches, CPU frequency
    // and the libraries' connections reach steady state before the first
    // size's calibration.
    if let Some(&first) = job.sizes_bytes.first() {
        let warmup_ns = (budget_ns / 50).min(MAX_WARMUP_NS);
        let mut repeats = 1;
        while (t0.elapsed().as_nanos() as u64) < warmup_ns && !stop() {
            lead.run(first, repeats)?;
            repeats = (repeats * 2).min(1 << 16);
        }
    }
    let mut max_repeats = u64::MAX;
    for (i, &bytes) in job.sizes_bytes.iter().enumerate() {
        if stop() {
            return Ok(true);
        }
        let left = (job.sizes_bytes.len() - i) as u64;
        let spent_ns = t0.elapsed().as_nanos() as u64;
        let plan = plan_for(
            budget_ns.saturating_sub(spent_ns) / left,
            job.precision,
            max_repeats,
        );
        lead.spread_ns.clear();
        let o = measure_point(lead, bytes, &plan, &stop)?;
        if o.interrupted || o.trials_ns.is_empty() {
            return Ok(true);
        }
        max_repeats = o.repeats;
        // The policy drops its calibration blocks; drop their spread too.
        let kept = lead
            .spread_ns
            .get(o.warmup_trials as usize..)
            .unwrap_or(&[]);
        let (avg, min): (Vec<f64>, Vec<f64>) = kept.iter().copied().unzip();
        let point = CollectivePoint::from_trials(
            bytes,
            o.repeats,
            o.warmup_trials,
            o.noisy,
            [o.trials_ns, avg, min],
        )
        .context("a size kept no trial")?;
        points.push(point);
    }
    Ok(false)
}

/// A rank other than 0: run each block rank 0 orders, until it says stop.
fn follow(comm: &dyn Communicator, buffers: &mut Buffers) -> Result<()> {
    let mut order = [0.0; 3];
    let mut times_ns = vec![0.0; comm.size()];
    loop {
        comm.recv(0, &mut order)
            .context("waiting for rank 0's next order")?;
        if order[0] == STOP {
            return Ok(());
        }
        let (busy_ns, _) = buffers.run_block(comm, order[1] as u64, order[2] as u64)?;
        comm.allgather_f64(&[busy_ns], &mut times_ns)?;
    }
}

/// Rank 0 as the repetition policy's runner: one call, one block on every
/// rank.
struct Lead<'a> {
    comm: &'a dyn Communicator,
    buffers: &'a mut Buffers,
    /// Each rank's time of the last block, ns.
    times_ns: Vec<f64>,
    /// Per block of the current size: the ranks' average and the fastest
    /// rank's time per operation, ns.
    spread_ns: Vec<(f64, f64)>,
}

impl BlockRunner for Lead<'_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let wall = Instant::now();
        let order = [BLOCK, bytes as f64, repeats as f64];
        for peer in 1..self.comm.size() {
            self.comm.send(peer, &order)?;
        }
        let (busy_ns, block_ns) = self.buffers.run_block(self.comm, bytes, repeats)?;
        self.comm.allgather_f64(&[busy_ns], &mut self.times_ns)?;
        let slowest = self.times_ns.iter().copied().fold(0.0, f64::max);
        let fastest = self.times_ns.iter().copied().fold(f64::INFINITY, f64::min);
        let average = crate::stats::mean(&self.times_ns);
        let per_op = |ns: f64| ns / repeats.max(1) as f64;
        self.spread_ns.push((per_op(average), per_op(fastest)));
        Ok(BlockTiming {
            op_ns: per_op(slowest),
            // What sizes the next block: its whole length, barriers included.
            timed_ns: block_ns,
            wall_ns: wall.elapsed().as_nanos() as u64,
            ..BlockTiming::default()
        })
    }
}

/// The buffers of the largest size, made once before the first block, so
/// that no timed loop allocates. Filled with zeros: an allreduce sum of
/// zeros stays zero however often it runs (no overflow to infinity, no
/// denormals that would slow the arithmetic down).
struct Buffers {
    collective: Collective,
    ranks: usize,
    /// Allreduce's values.
    values: Vec<f64>,
    /// Alltoall's outgoing blocks.
    send: Vec<u8>,
    /// Alltoall's incoming blocks; bcast's buffer.
    recv: Vec<u8>,
    /// Cost of one clock read, ns, subtracted from every timed operation.
    clock_ns: f64,
}

impl Buffers {
    fn new(job: &CollectiveJob, ranks: usize) -> Buffers {
        let most = job.sizes_bytes.iter().copied().max().unwrap_or(0) as usize;
        let (values, send, recv) = match job.collective {
            Collective::Allreduce => (vec![0.0; most / 8], Vec::new(), Vec::new()),
            Collective::Alltoall => (Vec::new(), vec![0; most * ranks], vec![0; most * ranks]),
            Collective::Bcast => (Vec::new(), Vec::new(), vec![0; most]),
            Collective::Barrier => (Vec::new(), Vec::new(), Vec::new()),
        };
        Buffers {
            collective: job.collective,
            ranks,
            values,
            send,
            recv,
            clock_ns: crate::measure::timer::clock_read_cost_ns(),
        }
    }

    /// One block: a barrier, then `repeats` operations of `bytes`. Returns
    /// this rank's time in the operations and the block's wall time, ns.
    fn run_block(
        &mut self,
        comm: &dyn Communicator,
        bytes: u64,
        repeats: u64,
    ) -> Result<(f64, u64)> {
        let n = bytes as usize;
        let too_large = || anyhow::anyhow!("rank 0 ordered {bytes} B, beyond the run's sizes");
        let clock_ns = self.clock_ns;
        comm.barrier().context("the barrier before a block")?;
        let t0 = Instant::now();
        let busy_ns = match self.collective {
            Collective::Allreduce => {
                let values = self.values.get_mut(..n / 8).ok_or_else(too_large)?;
                separated(comm, repeats, clock_ns, || comm.allreduce_sum_f64(values))?
            }
            Collective::Alltoall => {
                let all = n * self.ranks;
                let send = self.send.get(..all).ok_or_else(too_large)?;
                let recv = self.recv.get_mut(..all).ok_or_else(too_large)?;
                separated(comm, repeats, clock_ns, || comm.alltoall_bytes(send, recv))?
            }
            Collective::Bcast => {
                let buf = self.recv.get_mut(..n).ok_or_else(too_large)?;
                separated(comm, repeats, clock_ns, || comm.bcast_bytes(0, buf))?
            }
            Collective::Barrier => {
                // Barriers back to back, as osu_barrier: each one already
                // waits for every rank.
                for _ in 0..repeats {
                    comm.barrier()?;
                }
                (t0.elapsed().as_nanos() as f64 - clock_ns).max(0.0)
            }
        };
        Ok((busy_ns, t0.elapsed().as_nanos() as u64))
    }
}

/// `repeats` operations, each timed alone and followed by a barrier, as
/// OSU's collective benchmarks do: back to back, a broadcast's root would
/// send the next message before the leaves have the last, and the block
/// would measure a pipeline rather than the operation. Returns the summed
/// time of the operations, ns, less one clock read each.
fn separated(
    comm: &dyn Communicator,
    repeats: u64,
    clock_ns: f64,
    mut operation: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut busy_ns = 0u64;
    for _ in 0..repeats {
        let t0 = Instant::now();
        operation()?;
        busy_ns += t0.elapsed().as_nanos() as u64;
        comm.barrier()?;
    }
    Ok((busy_ns as f64 - clock_ns * repeats as f64).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::ThreadComm;

    fn job(collective: Collective, sizes_bytes: Vec<u64>) -> CollectiveJob {
        CollectiveJob {
            collective,
            sizes_bytes,
            budget_ms: 300,
            precision: 0.05,
            timeout_ms: 10_000,
        }
    }

    /// Every operation on three thread ranks: rank 0 brings back one
    /// point per size with consistent figures, the others nothing.
    #[test]
    fn every_operation_measures_every_size_on_three_ranks() {
        for (c, sizes) in [
            (Collective::Allreduce, vec![8, 4096]),
            (Collective::Alltoall, vec![1, 1000]),
            (Collective::Bcast, vec![3, 70_000]),
            (Collective::Barrier, vec![0]),
        ] {
            let j = job(c, sizes.clone());
            let outputs = ThreadComm::run(3, |comm| run_rank(&j, comm)).unwrap();
            let lead = &outputs[0];
            assert!(!lead.interrupted);
            let got: Vec<u64> = lead.points.iter().map(|p| p.bytes).collect();
            assert_eq!(got, sizes, "{c}");
            for p in &lead.points {
                assert!(p.trials_ns.len() >= 6, "{c}: {}", p.trials_ns.len());
                assert_eq!(p.trials_ns.len(), p.trials_ranks_avg_ns.len());
                assert!(p.ranks_min_median_ns <= p.ranks_avg_median_ns * 1.000001);
                assert!(p.ranks_avg_median_ns <= p.median_ns * 1.000001);
            }
            assert!(outputs[1..].iter().all(|o| o.points.is_empty()));
        }
    }

    #[test]
    fn one_rank_is_refused() {
        let j = job(Collective::Barrier, vec![0]);
        let e = ThreadComm::run(1, |comm| run_rank(&j, comm)).unwrap_err();
        assert!(format!("{e:#}").contains("at least 2"), "{e:#}");
    }
}
