//! `wulf tune tcp`: one ordinary sweep per configuration (see `tune::plan`),
//! each saved as an ordinary result file, then the analysis of `tune`
//! printed and saved as `tune.json`, all under
//! `<out>/tune-tcp-<timestamp>/`.
//!
//! A configuration that fails is reported and the others still run; an
//! interruption stops the session, and what was measured is saved and
//! summarised (marked incomplete) before exiting with code 130.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::Result;

use crate::cli::{MeasureArgs, TuneArgs, TuneTarget, TuneTcpArgs};
use crate::plan::offloads::check_privileges;
use crate::plan::tune_tcp::{measure, path_interface, Offloads};
use crate::report;
use crate::result::{write_atomically, Mode, SweepResult};
use crate::sys::{describe_interface, recorded_same_machine, Host};
use crate::transport::tcp::mss_settable;
use crate::tune::plan::{mss_candidates, plan};
use crate::tune::summary::Skipped;
use crate::tune::TUNE_SCHEMA_VERSION;
use crate::tune::{analyse, text, HostSysctls, TuneSummary};

/// The transport `wulf tune tcp` sweeps.
const TRANSPORT: &str = "tcp";

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
