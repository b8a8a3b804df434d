//! `wulf tune tcp`: one ordinary sweep per configuration (see `tune::plan`),
//! each saved as an ordinary result file, then the analysis of `tune`
//! printed and saved as `tune.json`, all under
//! `<out>/tune-tcp-<timestamp>/`.
//!
//! A configuration that fails is reported and the others still run; an
//! interruption stops the session, and what was measured is saved and
//! summarised (marked incomplete) before exiting with code 130.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::cli::{MeasureArgs, TuneArgs, TuneTarget, TuneTcpArgs};
use crate::error::WulfError;
use crate::load::kernel::{KernelBaseline, BASELINE_SPAN};
use crate::peer::client::resolve;
use crate::peer::DEFAULT_PORT;
use crate::plan::offloads::{
    check_privileges, coalesce_answer, ethtool_version, read_state, restore_leftover, OffloadGuard,
};
use crate::report;
use crate::result::{write_atomically, write_result, Mode, SweepResult};
use crate::sweep::engine::{run_sweep, SweepSpec};
use crate::sys::{describe_interface, interface_for_peer, recorded_same_machine, Host};
use crate::transport::tcp::mss_settable;
use crate::tune::offload::{offload_configs, OffloadsRecord};
use crate::tune::plan::{mss_candidates, next_config, overhead, plan, Next};
use crate::tune::summary::Skipped;
use crate::tune::TUNE_SCHEMA_VERSION;
use crate::tune::{analyse, text, ConfigRun, HostSysctls, TuneConfig, TuneSummary};

/// The transport `wulf tune tcp` sweeps.
const TRANSPORT: &str = "tcp";
/// Least budget any configuration gets, however late it comes: enough for
/// a couple of trials per size of the default schedule.
const MIN_CONFIG_BUDGET: Duration = Duration::from_millis(200);

/// Run `wulf tune`.
pub fn execute(args: &TuneArgs) -> Result<()> {
    match &args.target {
        TuneTarget::Tcp(a) => match &a.lab {
            // Against `wulf serve` in node2, serving every configuration.
            Some(lab) => {
                crate::plan::lab_relay(crate::lab::between::run_against_peer_node(lab, false)?)
            }
            None => tune_tcp(a),
        },
    }
}

/// The shared measurement options as `wulf sweep` would take them, so the
/// sweeps are specified exactly as ordinary sweeps are.
fn measure_args(a: &TuneTcpArgs) -> MeasureArgs {
    MeasureArgs {
        sizes: a.sizes.clone(),
        no_perturb: !a.perturb,
        precision: Some(a.precision),
        timeout: a.timeout,
        tails: false,
        sndbuf: None,
        rcvbuf: None,
        no_nodelay: false,
        ipv6: a.ipv6,
        secret_file: a.secret_file.clone(),
        nocache: false,
        offset: 0,
        integrity: None,
        cpus: a.cpus,
        no_pin: a.no_pin,
        wait: None,
        quiet: a.quiet,
        // MPI options: tuning is for TCP.
        window: crate::transport::mpi::DEFAULT_WINDOW,
        iface: None,
        mpi: Vec::new(),
        mpi_arg: Vec::new(),
    }
}

/// This end's interface on the path to the peer (`lo` for a local one).
fn path_interface(a: &TuneTcpArgs) -> Result<Option<String>> {
    let ip: IpAddr = match &a.peer {
        Some(p) => resolve(p, DEFAULT_PORT, a.ipv6)?.ip(),
        None if a.ipv6 => Ipv6Addr::LOCALHOST.into(),
        None => Ipv4Addr::LOCALHOST.into(),
    };
    Ok(interface_for_peer(ip))
}

/// The MSS values to try on the path to the peer, and why others are not.
fn mss_values(a: &TuneTcpArgs) -> Result<(Vec<u64>, Vec<Skipped>)> {
    let iface = path_interface(a)?.map(|n| describe_interface(&n));
    let mtu = iface.as_ref().and_then(|i| i.mtu_bytes).map(u64::from);
    let mut skipped = Vec::new();
    let mut values = Vec::new();
    for m in mss_candidates(mtu, a.ipv6) {
        match mss_settable(m, a.ipv6) {
            Ok(()) => values.push(m),
            Err(why) => skipped.push(Skipped {
                label: format!("mss {m}"),
                reason: why,
            }),
        }
    }
    if values.is_empty() && skipped.is_empty() {
        let name = iface.map(|i| i.name).unwrap_or_else(|| "the path".into());
        skipped.push(Skipped {
            label: "mss".into(),
            reason: format!(
                "{name} has MTU {}; TCP_MAXSEG can only lower the MSS, and no standard MTU \
                 is below it (a larger MSS needs a larger MTU on both hosts and the switch)",
                mtu.map_or("unknown".into(), |m| m.to_string())
            ),
        });
    }
    Ok((values, skipped))
}

/// Where this session's files go.
fn session_dir(out: &Path) -> PathBuf {
    // Same timestamp format as `wulf run`'s directories (':' is awkward in
    // file names on some systems).
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "-");
    out.join(format!("tune-{TRANSPORT}-{}", stamp.trim_end_matches('Z')))
}

/// The sysctls of the hosts involved, from the first result's fingerprints
/// (this host alone when the peer ran on this machine: the same kernel,
/// reached through loopback; a peer in another network namespace has
/// sysctls of its own even under the same host name).
fn host_sysctls(results: &[SweepResult]) -> Vec<HostSysctls> {
    let mine = results
        .first()
        .map(|r| r.host.clone())
        .unwrap_or_else(Host::probe);
    let mut hosts = vec![HostSysctls {
        host: mine.hostname.clone(),
        sysctls: mine.tcp_sysctls.clone(),
    }];
    if let Some(peer) = results.first().and_then(|r| r.peer_host.as_ref()) {
        // Files from before boot ids were recorded: judged by host name.
        let same = recorded_same_machine(&mine, peer).unwrap_or(peer.hostname == mine.hostname);
        if !same {
            hosts.push(HostSysctls {
                host: peer.hostname.clone(),
                sysctls: peer.tcp_sysctls.clone(),
            });
        }
    }
    hosts
}

/// What the sweeps of a session produced.
#[derive(Default)]
struct Measured {
    runs: Vec<ConfigRun>,
    results: Vec<SweepResult>,
    skipped: Vec<Skipped>,
    warnings: Vec<String>,
    failed: Vec<String>,
    stop: Option<anyhow::Error>,
}

/// Run every configuration in turn, writing each result as it finishes;
/// `guard` makes and undoes the offload configurations' changes.
fn measure(
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

fn tune_tcp(a: &TuneTcpArgs) -> Result<()> {
    if a.offloads {
        // Before anything is measured: without the right, every change
        // would be refused and the session would say so only at its end.
        check_privileges()?;
    }
    let started = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // Tuning measures tcp alone: no MPI options, no cluster.
    let ctx = crate::launch::RunContext::default();
    let mut base = crate::plan::sweep_spec(
        &ctx,
        &measure_args(a),
        TRANSPORT,
        Mode::Pingpong,
        a.budget,
        a.peer.clone(),
    )?;
    let (mss, mss_skipped) = mss_values(a)?;
    let mut offloads = if a.offloads {
        Some(Offloads::prepare(a)?)
    } else {
        None
    };
    base.whole = offloads.as_ref().map(|o| o.whole.clone());
    let offload_configs = offloads.as_ref().map(|o| o.configs.clone());
    let mut configs = plan(&mss, offload_configs.as_deref().unwrap_or_default());
    if a.wake_up {
        // Before the baseline's repeat, which bounds the drift over them too.
        let repeat = configs.len() - 1;
        configs.splice(repeat..repeat, crate::tune::wake::wake_configs());
    }
    let dir = session_dir(&a.out);
    let guard = offloads.as_mut().map(|o| &mut o.guard);
    let mut m = measure(a, &base, &configs, &dir, started, guard)?;
    m.skipped.splice(0..0, mss_skipped);
    let offloads_record = offloads.map(|o| o.finish(&mut m));
    let hosts = host_sysctls(&m.results);
    let analysis = analyse(&m.runs, &hosts);
    let configurations = m.runs.iter().map(|r| r.summary.clone()).collect();
    let summary = TuneSummary {
        tune_schema_version: TUNE_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        complete: m.stop.is_none() && m.failed.is_empty(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        transport: TRANSPORT.into(),
        mode: Mode::Pingpong,
        peer: a.peer.clone(),
        budget_s: a.budget.as_secs_f64(),
        sizes_bytes: base.sizes.clone(),
        configurations,
        skipped: m.skipped,
        bands: analysis.bands,
        comparisons: analysis.comparisons,
        bandwidth_delay: analysis.bandwidth_delay,
        rfc1323: analysis.rfc1323,
        recommendations: analysis.recommendations,
        warnings: m.warnings.into_iter().chain(analysis.warnings).collect(),
        offloads: offloads_record,
    };
    let mut json = serde_json::to_vec_pretty(&summary)?;
    json.push(b'\n');
    write_atomically(&dir.join("tune.json"), &json)?;
    if !m.results.is_empty() {
        write_atomically(
            &dir.join("points.csv"),
            &report::format::csv::to_csv(&m.results)?,
        )?;
    }
    let mut report = text::render(&summary);
    report.push_str(&format!(
        "\nresults: {} (one result file per configuration, which `wulf report` can overlay; \
         summary in tune.json)\n",
        dir.display()
    ));
    if a.json {
        eprint!("{report}");
        std::io::Write::write_all(&mut std::io::stdout(), &json)?;
    } else {
        print!("{report}");
    }
    if let Some(e) = m.stop {
        return Err(e);
    }
    if !m.failed.is_empty() {
        anyhow::bail!("some configurations failed: {}", m.failed.join(", "));
    }
    Ok(())
}

/// The `--offloads` part of a session: the interface's guard, the
/// configurations planned for it and what cannot be tried.
struct Offloads {
    /// The whole-CPU-cost setup every configuration's sweep measures with.
    whole: crate::load::whole::WholeSetup,
    interface: String,
    tool: String,
    guard: OffloadGuard,
    configs: Vec<TuneConfig>,
    skipped: Vec<Skipped>,
    calibration_warning: Option<String>,
}

impl Offloads {
    /// Check for ethtool, measure the background (the whole CPU cost is
    /// what offloads move between the NIC, softirqs and our threads, which
    /// getrusage mostly misses), remember the interface's state and plan.
    fn prepare(a: &TuneTcpArgs) -> Result<Offloads> {
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
    fn finish(mut self, m: &mut Measured) -> OffloadsRecord {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn result_with_peer(peer: Host) -> SweepResult {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        let mut r = crate::result::read_result(Path::new(path)).unwrap();
        r.host.boot_id = Some("boot-a".into());
        r.host.path_crosses_interface = Some(false);
        r.peer_host = Some(peer);
        r
    }

    #[test]
    fn a_peer_is_listed_unless_it_is_this_machine() {
        // The peer as this machine would describe itself.
        let mut same = result_with_peer(Host::probe()).host;
        same.tcp_sysctls.congestion_control = Some("other".into());
        // This machine through loopback: one host.
        let r = result_with_peer(same.clone());
        assert_eq!(host_sysctls(&[r]).len(), 1);
        // Another network namespace of this machine (same name and kernel,
        // but the path crosses a veth): its sysctls are its own.
        let mut r = result_with_peer(same.clone());
        r.host.path_crosses_interface = Some(true);
        let hosts = host_sysctls(&[r]);
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].host, hosts[1].host);
        assert_eq!(
            hosts[1].sysctls.congestion_control.as_deref(),
            Some("other")
        );
        // Files from before boot ids: the host name decides, as it did.
        let mut r = result_with_peer(same);
        r.host.boot_id = None;
        assert_eq!(host_sysctls(&[r]).len(), 1);
    }
}
