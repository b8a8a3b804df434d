//! The conditions of `wulf sweep` and `wulf npb`: the `--cost whole`
//! calibration, made before any peer or rank starts, and the background
//! loads, started around the measurement and always stopped (their guard
//! joins every thread on drop, so an error or Ctrl-C stops them too).

use anyhow::Result;

use crate::cli::{CostArg, LoadArgs};
use crate::load::soaker::{calibrate_idle, Calibration};
use crate::load::{LoadRecord, LoadSpec, Loads};
use crate::result::Conditions;

/// What a command was asked to measure under.
pub struct Prepared {
    /// The soakers' calibration, with `--cost whole`.
    pub calibration: Option<Calibration>,
    /// The loads of `--load` (empty: none).
    pub loads: Vec<LoadSpec>,
    /// `--loaded-vs-unloaded`.
    pub both: bool,
    /// `--load-peer`: the loads run on the remote peer too.
    pub load_peer: bool,
}

impl Prepared {
    /// Calibrate the soakers if asked (and make the calibration active for
    /// this process and those it starts); warn on stderr when the machine
    /// was not idle enough to trust it.
    pub fn from_args(a: &LoadArgs) -> Result<Prepared> {
        let calibration = match a.cost {
            CostArg::Process => None,
            CostArg::Whole => {
                let cal = calibrate_idle()
                    .map_err(|e| anyhow::anyhow!("cannot start the soaker threads: {e}"))?;
                if let Some(w) = cal.warning() {
                    eprintln!("wulf: warning: {w}");
                }
                crate::load::whole::activate(&cal);
                Some(cal)
            }
        };
        Ok(Prepared {
            calibration,
            loads: a.load.as_ref().map(|l| l.0.clone()).unwrap_or_default(),
            both: a.loaded_vs_unloaded,
            load_peer: false,
        })
    }

    /// The whole CPU cost alone (`wulf run --thorough`): calibrate the
    /// soakers now, before any peer or rank starts, and make the
    /// calibration active.
    pub fn whole_cost() -> Result<Prepared> {
        Prepared::from_args(&LoadArgs {
            cost: CostArg::Whole,
            load: None,
            loaded_vs_unloaded: false,
        })
    }

    /// Whether there is anything to record.
    pub fn any(&self) -> bool {
        self.calibration.is_some() || !self.loads.is_empty()
    }

    /// The conditions block of a result measured under `loads`; `role`
    /// names the half of `--loaded-vs-unloaded`. Also the warning to add
    /// to the result when the calibration is untrusted.
    pub fn conditions(
        &self,
        role: Option<&str>,
        loads: Vec<LoadRecord>,
    ) -> (Conditions, Option<String>) {
        let c = Conditions {
            role: role.map(str::to_string),
            loads,
            peer_loads: Vec::new(),
            soaker: self.calibration.clone(),
            whole_cost_scope: self
                .calibration
                .as_ref()
                .map(|_| "the CPUs of the machine wulf was started on".to_string()),
        };
        (c, self.calibration.as_ref().and_then(Calibration::warning))
    }
}

/// Run `f` with `specs` loading the machine; the loads stop when `f`
/// returns (or unwinds), and what they achieved comes back with its value.
pub fn under_load<T>(specs: &[LoadSpec], f: impl FnOnce() -> T) -> Result<(T, Vec<LoadRecord>)> {
    if specs.is_empty() {
        return Ok((f(), Vec::new()));
    }
    let loads = Loads::start(specs)?;
    let out = f();
    Ok((out, loads.stop()))
}
