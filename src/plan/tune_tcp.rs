//! What a `wulf tune tcp` session measures, below the command: every
//! configuration swept in turn within the session's budget (each result
//! written as it finishes, offload and wake-up settings made and undone
//! around its sweep), and the `--offloads` part of a session (the
//! interface's guard, the background measured, what cannot be tried).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::TuneTcpArgs;
use crate::error::WulfError;
use crate::load::kernel::{KernelBaseline, BASELINE_SPAN};
use crate::peer::client::resolve;
use crate::peer::DEFAULT_PORT;
use crate::plan::offloads::{
    coalesce_answer, ethtool_version, read_state, restore_leftover, OffloadGuard,
};
use crate::result::{write_result, SweepResult};
use crate::sweep::engine::{run_sweep, SweepSpec};
use crate::sys::interface_for_peer;
use crate::tune::offload::{offload_configs, OffloadsRecord};
use crate::tune::plan::{next_config, overhead, Next};
use crate::tune::summary::Skipped;
use crate::tune::{ConfigRun, TuneConfig};

/// Least budget any configuration gets, however late it comes: enough for
/// a couple of trials per size of the default schedule.
const MIN_CONFIG_BUDGET: Duration = Duration::from_millis(200);

/// This end's interface on the path to the peer (`lo` for a local one).
pub fn path_interface(a: &TuneTcpArgs) -> Result<Option<String>> {
    let ip: IpAddr = match &a.peer {
        Some(p) => resolve(p, DEFAULT_PORT, a.ipv6)?.ip(),
        None if a.ipv6 => Ipv6Addr::LOCALHOST.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    Ok(interface_for_peer(ip))
}

/// What the sweeps of a session produced.
#[derive(Default)]
pub struct Measured {
    /// The configurations measured, in order.
    pub runs: Vec<ConfigRun>,
    /// Their results, as written.
    pub results: Vec<SweepResult>,
    /// The configurations not measured, and why.
    pub skipped: Vec<Skipped>,
    /// What the session says beside its figures.
    pub warnings: Vec<String>,
    /// The configurations that failed.
    pub failed: Vec<String>,
    /// Ctrl-C's error, when it came.
    pub stop: Option<anyhow::Error>,
}

/// Run every configuration in turn, writing each result as it finishes;
/// `guard` makes and undoes the offload configurations' changes.
pub fn measure(
    a: &TuneTcpArgs,
    base: &SweepSpec,
    configs: &[TuneConfig],
    dir: &Path,
    started: Instant,
    mut guard: Option<&mut OffloadGuard>,
) -> Result<Measured> {
    let mut m = Measured::default();
    // What each configuration measured cost beyond its budget.
    let mut extra = Vec::new();
    let mut left_out = 0;
    for (i, config) in configs.iter().enumerate() {
        if crate::sweep::interrupted() {
            m.warnings
                .push(format!("interrupted before {}", config.label));
            m.stop = Some(WulfError::Interrupted.into());
            break;
        }
        let mut spec = base.clone();
        spec.budget = match next_config(
            a.budget,
            started.elapsed(),
            (i, configs.len()),
            overhead(&extra),
            MIN_CONFIG_BUDGET,
        ) {
            Next::Measure(b) => b,
            Next::Skip => {
                left_out += 1;
                m.skipped.push(Skipped {
                    label: config.label.clone(),
                    reason: format!(
                        "not measured: the budget ({:.1} s) is kept for the baseline's repeat \
                         (a configuration costs about {:.1} s beyond its budget; a larger --budget \
                         or fewer --sizes measures it)",
                        a.budget.as_secs_f64(),
                        overhead(&extra).unwrap_or_default().as_secs_f64()
                    ),
                });
                continue;
            }
        };
        // Made once its budget is known: a configuration left out changes
        // nothing.
        let applied = match (&config.offload, guard.as_deref_mut()) {
            (Some(change), Some(g)) => match g.apply(change) {
                Ok(state) => Some(state),
                Err(answer) => {
                    m.skipped.push(Skipped {
                        label: config.label.clone(),
                        reason: format!("not changeable: {answer}"),
                    });
                    continue;
                }
            },
            _ => None,
        };
        let mut wake = match config.wake.map(crate::plan::tune_wake::WakeGuard::apply) {
            Some(Err(answer)) => {
                m.skipped.push(Skipped {
                    label: config.label.clone(),
                    reason: format!("not changeable: {answer}"),
                });
                continue;
            }
            Some(Ok(g)) => g,
            None => None,
        };
        let began = Instant::now();
        spec.channel = config.apply(&base.channel);
        let mut bar = crate::plan::SizesBar::new(&spec, a.quiet, &config.label);
        let outcome = run_sweep(&spec, &mut bar);
        bar.finish();
        extra.push(began.elapsed().saturating_sub(spec.budget));
        for e in wake.as_mut().map(|g| g.restore()).unwrap_or_default() {
            m.warnings
                .push(format!("after {}: could not restore: {e}", config.label));
        }
        if applied.is_some() {
            if let Some(Err(e)) = guard.as_deref_mut().map(OffloadGuard::restore) {
                m.warnings
                    .push(format!("after {}: could not restore: {e}", config.label));
            }
        }
        let o = match outcome {
            // Nothing measured: without the baseline nothing can be
            // compared, so a failure there (peer unreachable...) ends it.
            Err(e) if i == 0 => return Err(e),
            Err(e) => {
                m.failed.push(config.label.clone());
                m.skipped.push(Skipped {
                    label: config.label.clone(),
                    reason: format!("failed: {e:#}"),
                });
                continue;
            }
            Ok(o) => o,
        };
        let file = config.file_name();
        write_result(&dir.join(&file), &o.result)?;
        let error = o.error.as_ref().map(|e| format!("{e:#}"));
        let mut run = ConfigRun::from_result(config, &file, &o.result, error);
        run.summary.applied = applied;
        m.runs.push(run);
        m.results.push(o.result);
        if let Some(e) = o.error {
            let interrupted = e
                .downcast_ref::<WulfError>()
                .is_some_and(|w| matches!(w, WulfError::Interrupted));
            if interrupted {
                m.warnings
                    .push(format!("interrupted during {}", config.label));
                m.stop = Some(e);
                break;
            }
            m.warnings
                .push(format!("{} stopped early: {e:#}", config.label));
            m.failed.push(config.label.clone());
        }
    }
    if left_out > 0 {
        m.warnings.push(format!(
            "{left_out} of {} configurations left out to keep --budget {:.1} s (each costs \
             about {:.1} s beyond its share over these sizes)",
            configs.len(),
            a.budget.as_secs_f64(),
            overhead(&extra).unwrap_or_default().as_secs_f64()
        ));
    }
    Ok(m)
}

/// The `--offloads` part of a session: the interface's guard, the
/// configurations planned for it and what cannot be tried.
pub struct Offloads {
    /// The whole-CPU-cost setup every configuration's sweep measures with.
    pub whole: crate::load::whole::WholeSetup,
    interface: String,
    tool: String,
    /// Makes and undoes the offload configurations' changes.
    pub guard: OffloadGuard,
    /// The configurations planned for the interface.
    pub configs: Vec<TuneConfig>,
    skipped: Vec<Skipped>,
    calibration_warning: Option<String>,
}

impl Offloads {
    /// Check for ethtool, measure the background (the whole CPU cost is
    /// what offloads move between the NIC, softirqs and our threads, which
    /// getrusage mostly misses), remember the interface's state and plan.
    pub fn prepare(a: &TuneTcpArgs) -> Result<Offloads> {
        let tool = ethtool_version()?;
        let interface = path_interface(a)?
            .ok_or_else(|| anyhow::anyhow!("--offloads: no interface on the route to the peer"))?;
        let kernel = KernelBaseline::measure(BASELINE_SPAN, false)
            .map_err(|e| anyhow::anyhow!("cannot read /proc/stat: {e}"))?;
        let warning = kernel.warning();
        let whole = crate::load::whole::WholeSetup { kernel, soak: None };
        if let Some(note) = restore_leftover(&interface)? {
            eprintln!("wulf: {note}");
        }
        let guard = OffloadGuard::take(&interface)?;
        let answer = coalesce_answer(&interface, guard.before());
        let (configs, skipped) = offload_configs(&interface, guard.before(), answer.as_deref());
        Ok(Offloads {
            whole,
            interface,
            tool,
            guard,
            configs,
            skipped,
            calibration_warning: warning,
        })
    }

    /// Restore the interface and record it; the settings that could not
    /// be tried join `m.skipped`.
    pub fn finish(mut self, m: &mut Measured) -> OffloadsRecord {
        m.skipped.append(&mut self.skipped);
        m.warnings.extend(self.calibration_warning.take());
        let outcome = self.guard.restore();
        let after = match &outcome {
            Ok(s) => s.clone(),
            Err(_) => read_state(&self.interface),
        };
        if let Err(e) = &outcome {
            m.warnings
                .push(format!("{} was not restored: {e}", self.interface));
        }
        OffloadsRecord {
            interface: self.interface.clone(),
            tool: self.tool.clone(),
            before: self.guard.before().clone(),
            restored: after == *self.guard.before(),
            after,
            restore_error: outcome.err(),
        }
    }
}
