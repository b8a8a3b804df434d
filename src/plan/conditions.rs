//! The conditions of `wulf sweep` and `wulf npb`: the `--cost whole`
//! calibration, made before any peer or rank starts, and the background
//! loads, started around the measurement and always stopped (their guard
//! joins every thread on drop, so an error or Ctrl-C stops them too).

use anyhow::Result;

use crate::cli::{CostArg, LoadArgs};
use crate::load::kernel::{KernelBaseline, BASELINE_SPAN};
use crate::load::soaker::calibrate_idle;
use crate::load::whole::WholeSetup;
use crate::load::{LoadRecord, LoadSpec, Loads, NetworkTarget, Placement};
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
    /// `--cost soak` the soakers calibrated); warn on stderr when the
    /// machine was not idle enough to trust it. The setup is handed to
    /// each measurement (a sweep's spec, a NAS run's span), never made
    /// process-wide.
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
    /// background now, before any peer or rank starts.
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

    /// The conditions block of a result measured under `loads` with the
    /// whole-cost setup `whole` (this one's, its background measured again
    /// while loads ran: see [`under_load`]); `role` names the half of
    /// `--loaded-vs-unloaded`. Also the warnings to add to the result
    /// about its whole cost.
    pub fn conditions(
        &self,
        role: Option<&str>,
        loads: Vec<LoadRecord>,
        whole: Option<&WholeSetup>,
    ) -> (Conditions, Vec<String>) {
        let whole = whole.or(self.whole.as_ref()).cloned();
        let c = Conditions {
            role: role.map(str::to_string),
            loads,
            peer_loads: Vec::new(),
            soaker: whole.as_ref().and_then(|w| w.soak.clone()),
            kernel_baseline: whole.as_ref().map(|w| w.kernel.clone()),
            whole_cost_scope: whole
                .as_ref()
                .map(|_| "the CPUs of the machine wulf was started on".to_string()),
            soak_perturbation: None,
        };
        (c, whole.map(|w| w.warnings()).unwrap_or_default())
    }
}

/// What [`under_load`] gives back besides the work's own value.
pub struct UnderLoad {
    /// What the loads achieved.
    pub records: Vec<LoadRecord>,
    /// Where they ran, when that was not where they should (shared CPUs).
    pub warnings: Vec<String>,
    /// The whole-cost setup the work was measured with: the command's,
    /// its background measured again with the loads running.
    pub whole: Option<WholeSetup>,
}

/// Run `f` with `specs` loading the machine, their threads on `placement`
/// (the measured ends' CPUs last), the network load into `target` when
/// given (the peer's sink). `f` gets the whole-cost setup to
/// measure with: `whole` itself without loads, or with the loads' own busy
/// time joined to the background it subtracts (measured after they
/// started, before the work). The loads stop when `f` returns (or
/// unwinds).
pub fn under_load<T>(
    specs: &[LoadSpec],
    placement: &Placement,
    whole: Option<&WholeSetup>,
    target: Option<NetworkTarget>,
    f: impl FnOnce(Option<&WholeSetup>) -> T,
) -> Result<(T, UnderLoad)> {
    if specs.is_empty() {
        let out = f(whole);
        let whole = whole.cloned();
        let records = Vec::new();
        let warnings = Vec::new();
        return Ok((
            out,
            UnderLoad {
                records,
                warnings,
                whole,
            },
        ));
    }
    let loads = Loads::start_with(specs, placement, target)?;
    let warnings = loads.warnings().to_vec();
    let whole = whole.map(WholeSetup::with_loads_running).transpose()?;
    let out = f(whole.as_ref());
    let records = loads.stop();
    Ok((
        out,
        UnderLoad {
            records,
            warnings,
            whole,
        },
    ))
}

/// Where the loads of a NAS run go: away from the CPUs its ranks use (rank
/// i on CPU i, up to the largest process count asked for).
pub fn npb_placement(nprocs: &[usize]) -> Placement {
    let most = nprocs.iter().copied().max().unwrap_or(1);
    Placement::avoiding(&(0..most).collect::<Vec<_>>())
}
