//! The conditions of `wulf sweep` and `wulf npb`: the `--cost whole`
//! calibration, made before any peer or rank starts, and the background
//! loads, started around the measurement and always stopped (their guard
//! joins every thread on drop, so an error or Ctrl-C stops them too).

use anyhow::Result;

use crate::cli::{CostArg, LoadArgs};
use crate::load::kernel::{KernelBaseline, BASELINE_SPAN};
use crate::load::soaker::calibrate_idle;
use crate::load::whole::WholeSetup;
use crate::load::{LoadRecord, LoadSpec, Loads, Placement};
use crate::result::Conditions;

/// What a command was asked to measure under.
pub struct Prepared {
    /// The whole-cost setup, with `--cost whole` or `--cost soak`.
    pub whole: Option<WholeSetup>,
    /// The loads of `--load` (empty: none).
    pub loads: Vec<LoadSpec>,
    /// `--loaded-vs-unloaded`.
    pub both: bool,
    /// `--load-peer`: the loads run on the remote peer too.
    pub load_peer: bool,
}

impl Prepared {
    /// Set the whole cost up if asked (the background measured, and with
    /// `--cost soak` the soakers calibrated) and make it active for this
    /// process and those it starts; warn on stderr when the machine was
    /// not idle enough to trust it.
    pub fn from_args(a: &LoadArgs) -> Result<Prepared> {
        let whole = match a.cost {
            CostArg::Process => None,
            CostArg::Whole | CostArg::Soak => {
                let kernel = KernelBaseline::measure(BASELINE_SPAN, false)
                    .map_err(|e| anyhow::anyhow!("cannot read /proc/stat: {e}"))?;
                let soak = match a.cost {
                    CostArg::Soak => Some(
                        calibrate_idle()
                            .map_err(|e| anyhow::anyhow!("cannot start the soaker threads: {e}"))?,
                    ),
                    _ => None,
                };
                let setup = WholeSetup { kernel, soak };
                for w in setup.warnings() {
                    eprintln!("wulf: warning: {w}");
                }
                crate::load::whole::activate(&setup);
                Some(setup)
            }
        };
        Ok(Prepared {
            whole,
            loads: a.load.as_ref().map(|l| l.0.clone()).unwrap_or_default(),
            both: a.loaded_vs_unloaded,
            load_peer: false,
        })
    }

    /// The whole CPU cost alone (`wulf run --thorough`): measure the
    /// background now, before any peer or rank starts, and make the setup
    /// active.
    pub fn whole_cost() -> Result<Prepared> {
        Prepared::from_args(&LoadArgs {
            cost: CostArg::Whole,
            load: None,
            loaded_vs_unloaded: false,
        })
    }

    /// Whether there is anything to record.
    pub fn any(&self) -> bool {
        self.whole.is_some() || !self.loads.is_empty()
    }

    /// The conditions block of a result measured under `loads`; `role`
    /// names the half of `--loaded-vs-unloaded`. Also the warnings to add
    /// to the result about its whole cost. The setup is the one active now
    /// (its background measured again while loads ran).
    pub fn conditions(
        &self,
        role: Option<&str>,
        loads: Vec<LoadRecord>,
    ) -> (Conditions, Vec<String>) {
        let whole = self
            .whole
            .as_ref()
            .map(|w| crate::load::whole::active().unwrap_or_else(|| w.clone()));
        let c = Conditions {
            role: role.map(str::to_string),
            loads,
            peer_loads: Vec::new(),
            soaker: whole.as_ref().and_then(|w| w.soak.clone()),
            kernel_baseline: whole.as_ref().map(|w| w.kernel.clone()),
            whole_cost_scope: whole
                .as_ref()
                .map(|_| "the CPUs of the machine wulf was started on".to_string()),
        };
        (c, whole.map(|w| w.warnings()).unwrap_or_default())
    }
}

/// Run `f` with `specs` loading the machine, their threads on `placement`
/// (the measured ends' CPUs last); the loads stop when `f` returns (or
/// unwinds), and what they achieved comes back with its value, with the
/// warnings about where they ran.
pub fn under_load<T>(
    specs: &[LoadSpec],
    placement: &Placement,
    f: impl FnOnce() -> T,
) -> Result<(T, Vec<LoadRecord>, Vec<String>)> {
    if specs.is_empty() {
        crate::load::whole::loads_running(false)?;
        return Ok((f(), Vec::new(), Vec::new()));
    }
    let loads = Loads::start_placed(specs, placement)?;
    let warnings = loads.warnings().to_vec();
    // The loads' own busy time becomes part of the background the whole
    // cost subtracts: measured now, with them running, before the work.
    crate::load::whole::loads_running(true)?;
    let out = f();
    Ok((out, loads.stop(), warnings))
}

/// Where the loads of a NAS run go: away from the CPUs its ranks use (rank
/// i on CPU i, up to the largest process count asked for).
pub fn npb_placement(nprocs: &[usize]) -> Placement {
    let most = nprocs.iter().copied().max().unwrap_or(1);
    Placement::avoiding(&(0..most).collect::<Vec<_>>())
}
