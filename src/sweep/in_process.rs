//! Sweeps of the in-process baselines (`memcpy`, `cacheline`): the same
//! repetition policy, sweep loop and result as a transport's sweep, with a
//! [`Baseline`] in place of a peer and a data channel.
//!
//! Differences from a peer sweep, all recorded in the result: no peer host;
//! the "server" CPU is the baseline's second thread, if it has one; the
//! definition of the time is the baseline's; tails are not measured (the
//! round trips of a baseline are too short to time one by one); and the
//! points are kept as the limits later sweeps of this process are measured
//! against.

use std::time::Instant;

use anyhow::{Context, Result};

use super::assemble::{assemble, Finish, Start};
use super::budget::SweepClock;
use super::limits;
use super::measuring::measure_all;
use super::pin::Pinned;
use super::progress::Reporter;
use super::runner::SweepRunner;
use super::spec::{SweepOutcome, SweepSpec};
use crate::measure::policy::{BlockRunner, BlockTiming};
use crate::measure::timer::clock_read_cost_ns;
use crate::result::{Definitions, Mode, Placement, Tails};
use crate::transport::baseline::Baseline;

/// Times blocks of a baseline: the [`BlockRunner`] of in-process sweeps.
pub struct BaselineRunner<'a> {
    bench: &'a mut dyn Baseline,
    mode: Mode,
    overhead_ns: f64,
}

impl<'a> BaselineRunner<'a> {
    /// A runner for `bench` measured in `mode`, subtracting one clock read
    /// of `overhead_ns` from each block.
    pub fn new(bench: &'a mut dyn Baseline, mode: Mode, overhead_ns: f64) -> Self {
        BaselineRunner {
            bench,
            mode,
            overhead_ns,
        }
    }
}

impl BlockRunner for BaselineRunner<'_> {
    fn run(&mut self, bytes: u64, repeats: u64) -> Result<BlockTiming> {
        let wall0 = Instant::now();
        // The measuring thread's wait for a CPU around the whole block (the
        // baseline times inside it; its helper thread's is not known).
        let delay0 = crate::sys::thread_run_delay_ns();
        let b = self
            .bench
            .block(bytes, repeats)
            .with_context(|| format!("baseline failed at {bytes} bytes"))?;
        let client_run_delay_ns = crate::sys::run_delay_since(delay0);
        let timed_ns = (b.elapsed_ns as f64 - self.overhead_ns).max(1.0);
        let per_op = timed_ns / repeats as f64;
        Ok(BlockTiming {
            op_ns: match self.mode {
                Mode::Pingpong => per_op / 2.0,
                Mode::Stream | Mode::Bidir => per_op,
            },
            timed_ns: timed_ns as u64,
            wall_ns: wall0.elapsed().as_nanos() as u64,
            client_cpu_ns: (
                b.main_cpu.user.as_nanos() as u64,
                b.main_cpu.system.as_nanos() as u64,
            ),
            server_cpu_ns: (
                b.helper_cpu.user.as_nanos() as u64,
                b.helper_cpu.system.as_nanos() as u64,
            ),
            client_run_delay_ns,
            server_run_delay_ns: None,
            helper_cpu_ns: None,
        })
    }
}

impl SweepRunner for BaselineRunner<'_> {
    fn integrity(&mut self, bytes: u64) -> Result<()> {
        self.bench
            .integrity(bytes)
            .with_context(|| format!("integrity pass at {bytes} bytes"))
    }

    fn tails(&mut self, _bytes: u64, _median_one_way_ns: f64) -> Result<Option<Tails>> {
        Ok(None)
    }
}

/// Run a whole sweep of `bench` in this process; `placement_note` says why
/// its threads stay on CPUs other work keeps busy, if they do.
pub(super) fn run_baseline(
    spec: &SweepSpec,
    mut bench: Box<dyn Baseline>,
    start: Start,
    mut clock: SweepClock,
    progress: &mut dyn Reporter,
    placement_note: Option<String>,
) -> Result<SweepOutcome> {
    if spec.peer.is_some() {
        return Err(crate::error::usage(format!(
            "{} is an in-process baseline: --peer does not apply",
            spec.transport
        )));
    }
    let pinned = Pinned::new(spec.cpus.0);
    let client_cpu = pinned.cpu;
    let timer_overhead_ns = clock_read_cost_ns();
    let mut warnings: Vec<String> = placement_note.into_iter().collect();
    if spec.tails {
        warnings.push("--tails does not apply to in-process baselines".to_string());
    }
    clock.mark("setup");
    clock.reserve_after(super::budget::CLOSE_RESERVE_NS);
    let mut points = Vec::with_capacity(spec.sizes.len());
    let mut runner = BaselineRunner::new(bench.as_mut(), spec.mode, timer_overhead_ns);
    let (error, confirmation) = super::confirm::split(measure_all(
        spec,
        &mut clock,
        &mut runner,
        None,
        &mut points,
        progress,
    ));

    let helper_cpu = bench.helper_cpu();
    limits::remember(bench.limit_kind(), spec, (client_cpu, helper_cpu), &points);
    let plateaus = bench.plateaus(&points);
    let mut definitions = Definitions::for_mode(spec.mode);
    definitions.time = bench.time_definition().into();
    let hostname = start.host.hostname.clone();
    let mut result = assemble(
        spec,
        start,
        Finish {
            peer_host: None,
            definitions,
            transport_settings: bench.settings(),
            placement: Placement {
                client_host: hostname.clone(),
                client_cpu,
                server_host: hostname,
                server_cpu: helper_cpu,
                lab: crate::lab::placement(None),
            },
            timer_overhead_ns,
            points,
            warnings,
            link: None,
            error: error.as_ref(),
            confirmation,
            left_out: clock.left_out.take(),
            setup_s: None,
        },
    );
    result.summary.plateaus = plateaus;
    clock.mark("assemble");
    clock.report(&spec.transport);
    Ok(SweepOutcome {
        result,
        error,
        peer_loads: Vec::new(),
    })
}
