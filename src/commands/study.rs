//! `wulf study NAME`: a published network study as one command. Each case of
//! the plan ([`crate::study::plan`]) is an ordinary `wulf sweep --lab`
//! run as a child process in a temporary lab of its own (so a case that
//! fails or hangs ends alone, and every case's result is a normal sweep
//! file); then the summary (`study.json`, kind `study`), the tables, and a
//! report of the study are written beside the sweeps.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};

use crate::cli::{StudyArg, StudyArgs};
use crate::error::{usage, WulfError};
use crate::exec::process::{exit_code, run_forwarding_interrupt};
use crate::lab::LinkRate;
use crate::report::{LoadedStudy, ReportInput};
use crate::result::{
    read_result, write_atomically, write_json, StudyResult, SweepResult, STUDY_KIND,
    STUDY_SCHEMA_VERSION,
};
use crate::study::{self, tables, Effort, StudyCase, StudyName, StudyOptions};
use crate::units::{format_bits_per_s, format_bytes, format_ns};

/// Run `wulf study`.
pub fn execute(a: &StudyArgs) -> Result<()> {
    let name = match a.name {
        StudyArg::MtuBuffers => StudyName::MtuBuffers,
        StudyArg::FeVsGe => StudyName::FeVsGe,
        StudyArg::LeanStacks => StudyName::LeanStacks,
        StudyArg::Layers => StudyName::Layers,
        StudyArg::Linpack => return crate::plan::study_linpack::execute(a),
    };
    match (&a.peer, name) {
        // Over the loopback and shared memory the layers need no lab.
        (None, StudyName::Layers) if a.link.is_none() => {}
        (None, _) => crate::lab::check_can_build()?,
        (Some(_), StudyName::LeanStacks) => {}
        (Some(_), _) => {
            return Err(usage(format!(
                "--peer: only lean-stacks runs against a real peer; {} needs the lab's links",
                name.as_str()
            )))
        }
    }
    let parse_link = |l: &str| LinkRate::parse(l).map_err(|e| usage(format!("--link: {e}")));
    let link = parse_link(a.link.as_deref().unwrap_or("ge"))?;
    let links = match &a.link {
        Some(l) => vec![parse_link(l)?],
        None => vec![parse_link("ge")?, parse_link("10ge")?],
    };
    let mtus_bytes = a.mtu.clone().unwrap_or_else(|| vec![1500, 9000]);
    if let Some(bad) = mtus_bytes.iter().find(|m| !(576..=9000).contains(*m)) {
        return Err(usage(format!("--mtu: {bad} is outside 576..9000")));
    }
    let mut sweep_args = Vec::new();
    match a.cost {
        crate::cli::CostArg::Process => {}
        crate::cli::CostArg::Whole => sweep_args.extend(["--cost".into(), "whole".into()]),
        crate::cli::CostArg::Soak => sweep_args.extend(["--cost".into(), "soak".into()]),
    }
    if let Some(load) = &a.load {
        sweep_args.extend(["--load".to_string(), load.clone()]);
    }
    let effort = Effort::from_flags(a.quick, a.thorough);
    let layers = match name {
        StudyName::Layers => {
            crate::plan::study_layers::groups(a.link.as_ref().map(|_| &link), a.only.as_deref())?
        }
        _ => Vec::new(),
    };
    let transports = match name {
        StudyName::MtuBuffers => vec!["tcp".to_string()],
        StudyName::FeVsGe => transports(a.only.as_deref())?,
        StudyName::LeanStacks => lean_transports(a.only.as_deref(), a.peer.is_some()),
        StudyName::Layers => Vec::new(),
    };
    let opts = StudyOptions {
        link,
        effort,
        transports,
        links,
        mtus_bytes,
        sweep_args: sweep_args.clone(),
        peer: a.peer.clone(),
        layers,
    };
    let cases = study::plan(name, &opts);
    let started = Instant::now();
    // The machine as the study starts (its load then); the load at the end
    // is added when it ends.
    let mut host = crate::sys::Host::probe();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp = started_at
        .replace(':', "-")
        .trim_end_matches('Z')
        .to_string();
    let dir = a.out.join(format!("study-{}-{stamp}", name.as_str()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let budget: f64 = cases.iter().map(|c| c.budget_s).sum();
    eprintln!(
        "wulf study {}: {} sweeps, each {}, about {:.0} s of measuring; results in {}",
        name.as_str(),
        cases.len(),
        match &a.peer {
            Some(p) => format!("against the peer {p}"),
            None if cases.iter().all(|c| c.local) => "on this machine".to_string(),
            None => "in a temporary lab".to_string(),
        },
        budget,
        dir.display()
    );
    let mut results = Vec::with_capacity(cases.len());
    let mut loaded = Vec::new();
    let mut interrupted = false;
    for (i, c) in cases.iter().enumerate() {
        if crate::sweep::INTERRUPTED.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let file = format!("{}.json", c.label);
        let outcome = match unavailable(&c.transport) {
            Some(why) => Err(anyhow::anyhow!("{}{why}", study::lean::UNAVAILABLE)),
            None => run_case(c, &dir.join(&file)),
        };
        let result = match &outcome {
            Ok(r) => tables::case_result(c, Ok((r, file.clone()))),
            Err(e) => tables::case_result(c, Err(format!("{e:#}"))),
        };
        let line = match &result.error {
            None => format!(
                "latency {}, peak {} at {}{}",
                result.latency_ns.map_or("-".into(), format_ns),
                result.peak_bits_per_s.map_or("-".into(), format_bits_per_s),
                result.peak_bytes.map_or("-".into(), format_bytes),
                // No link on this machine: no fraction of one.
                result
                    .peak_fraction
                    .filter(|f| f.is_finite())
                    .map_or(String::new(), |f| format!(" ({f:.2} of the link)"))
            ),
            Some(e) => format!("failed: {e}"),
        };
        eprintln!("[{:>2}/{}] {:<24} {line}", i + 1, cases.len(), c.label);
        results.push(result);
        match outcome {
            Ok(r) => loaded.push((c.label.clone(), r)),
            Err(e) => {
                if e.downcast_ref::<WulfError>()
                    .is_some_and(|w| matches!(w, WulfError::Interrupted))
                {
                    interrupted = true;
                    break;
                }
            }
        }
    }
    // NAS rows over each stack, after the sweeps: lean-stacks' (Bounanos and
    // Fleury 2007, Table 2) and the layers' (every row of a path).
    let (nas_plan, nas_source) = match name {
        StudyName::LeanStacks => (
            study::nas_rows::plan_lean(&opts),
            Some("Bounanos and Fleury 2007, Table 2"),
        ),
        StudyName::Layers => (study::nas_rows::plan_layers(&opts), None),
        _ => (Vec::new(), None),
    };
    let nas = if interrupted {
        Vec::new()
    } else {
        let (nas, stop) = run_nas(&nas_plan, &dir);
        interrupted = stop;
        nas
    };
    // Noise and figures beyond a link's limit, in the tables and the
    // warnings (issue 35 item 7).
    let noise = study::noise::count(&loaded);
    let (shown, withheld) = study::noise::withhold(&results);
    let mut study_tables = tables::tables(name, &shown);
    study::noise::annotate(&mut study_tables, noise, withheld);
    study_tables.extend(study::nas_rows::tables(&nas, nas_source));
    let mut warnings = study::noise::warnings(noise, &results);
    if a.peer.is_none() {
        warnings.extend(study::noise::framing_note(&results));
    }
    let ratios = match name {
        StudyName::FeVsGe => study::fe_ge::ratios(&shown),
        StudyName::LeanStacks => study::lean::ratios(&shown),
        StudyName::Layers => study::layers::ratios(&shown),
        StudyName::MtuBuffers => Vec::new(),
    };
    if name != StudyName::MtuBuffers {
        warnings.extend(study::lean::round_warnings(name.as_str(), &results));
    }
    warnings.extend(study::rounds::ratio_warnings(name.as_str(), &ratios));
    host.load_after = crate::sys::load_average();
    let summary = StudyResult {
        kind: STUDY_KIND.into(),
        schema_version: STUDY_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        complete: !interrupted,
        incomplete_reason: interrupted.then(|| "interrupted".to_string()),
        command_line: std::env::args().collect(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        host,
        study: name.as_str().into(),
        about: name.about().into(),
        effort: effort.as_str().into(),
        tables: study_tables,
        cases: results,
        warnings,
        sweep_args,
        nas,
        ratios,
    };
    write_json(&dir.join("study.json"), &summary)?;
    let text = tables::text(&summary.tables);
    let study = LoadedStudy {
        summary,
        sweeps: loaded,
    };
    let html = crate::report::html::to_html(&ReportInput {
        studies: std::slice::from_ref(&study),
        ..Default::default()
    })?;
    write_atomically(&dir.join("report.html"), html.as_bytes())?;
    if a.json {
        eprint!("{text}");
        write_json(Path::new("-"), &study.summary)?;
    } else {
        print!("{text}");
        println!(
            "results: {}\nreport:  {}",
            dir.display(),
            dir.join("report.html").display()
        );
    }
    if interrupted {
        return Err(WulfError::Interrupted.into());
    }
    Ok(())
}

/// The transports of fe-vs-ge: `--only`'s (each must cross a network), or
/// every network path found here.
fn transports(only: Option<&[String]>) -> Result<Vec<String>> {
    // A study takes no MPI options: its MPIs are the ones found here.
    let found = crate::transport::network_paths(&Default::default());
    match only {
        // Rows measured only when named (`pvm(inplace)`) only when named.
        None => {
            let registry = crate::transport::registry(&Default::default());
            Ok(found
                .into_iter()
                .filter(|n| {
                    registry
                        .iter()
                        .any(|t| t.name() == n && t.measured_by_default())
                })
                .collect())
        }
        Some(list) => {
            for t in list {
                if !found.contains(t) {
                    return Err(usage(format!(
                        "--only: '{t}' is not a transport that crosses a network here (found: {})",
                        found.join(", ")
                    )));
                }
            }
            Ok(list.to_vec())
        }
    }
}

/// The stacks of lean-stacks: `--only`'s, or tcp and the lean stacks
/// built in (`Transport::lean_stack`: raw, xdp and tipc, whether or not
/// they can run here: their rows say why not) and, in a lab, every MPI's
/// TCP path found here (against a real peer an MPI needs its launcher on
/// both machines, which `wulf serve` is not).
fn lean_transports(only: Option<&[String]>, peer: bool) -> Vec<String> {
    if let Some(list) = only {
        return list.to_vec();
    }
    // A study takes no MPI options: its MPIs are the ones found here.
    let options = Default::default();
    let registry = crate::transport::registry(&options);
    let paths = match peer {
        true => Vec::new(),
        false => crate::transport::network_paths(&options),
    };
    let lean = registry.iter().filter(|t| t.lean_stack());
    let mpis = registry
        .iter()
        .filter(|t| t.starts_both_ends() && paths.iter().any(|p| p == t.name()));
    std::iter::once(study::lean::REFERENCE_STACK.to_string())
        .chain(lean.chain(mpis).map(|t| t.name().to_string()))
        .collect()
}

/// Why `transport` cannot run here, if it cannot: not built into this
/// wulf, or unavailable (no capability, no kernel support).
fn unavailable(transport: &str) -> Option<String> {
    match crate::transport::find(transport, &Default::default()) {
        None => Some("not built into this wulf".into()),
        Some(t) => t.availability().err(),
    }
}

/// One case: `wulf sweep` in a temporary lab (or against the peer), its
/// result read back. Its
/// standard error goes to a file beside the result, whose last line is the
/// error when the sweep fails.
fn run_case(c: &StudyCase, json: &Path) -> Result<SweepResult> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    let log = json.with_extension("log");
    let place = match (&c.peer, c.local) {
        (Some(p), _) => vec!["--peer".to_string(), p.clone()],
        (None, true) => Vec::new(),
        (None, false) => vec!["--lab".to_string(), c.lab_spec()],
    };
    let mut cmd = Command::new(exe);
    cmd.args(["sweep", &c.transport])
        .args(&place)
        .args(["--mode", &c.mode.to_string()])
        .args(["--sizes", &c.sizes, "--no-perturb", "--quiet"])
        .arg("--budget")
        .arg(format!("{}ms", (c.budget_s * 1000.0).round() as u64))
        .arg("--json")
        .arg(json)
        .args(&c.sweep_args);
    if let Some(b) = c.socket_buffer_bytes {
        cmd.args(["--sndbuf", &b.to_string(), "--rcvbuf", &b.to_string()]);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?,
    );
    let status = run_forwarding_interrupt(&mut cmd).context("cannot run wulf sweep")?;
    let code = exit_code(status);
    if code == 0 {
        let _ = std::fs::remove_file(&log);
        return read_result(json);
    }
    if code == 130 {
        return Err(WulfError::Interrupted.into());
    }
    anyhow::bail!("the sweep exited with code {code}: {}", last_error(&log))
}

/// The last line of a child's standard error (its error message).
fn last_error(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim_start_matches("wulf: error: ")
        .to_string()
}

/// A study's NAS runs ([`study::nas_rows`]) over the stacks that can run
/// here, each across a temporary lab of its own or on this machine; and
/// whether Ctrl-C stopped them.
fn run_nas(
    plan: &[study::nas_rows::NasCase],
    dir: &Path,
) -> (Vec<crate::result::StudyNasCase>, bool) {
    let mut out = Vec::new();
    for (i, c) in plan.iter().enumerate() {
        if crate::sweep::INTERRUPTED.load(Ordering::Relaxed) {
            return (out, true);
        }
        let vias: Vec<String> = c
            .vias
            .iter()
            .filter(|t| unavailable(t).is_none())
            .cloned()
            .collect();
        if vias.is_empty() {
            continue;
        }
        let file = format!("{}.json", c.label);
        let outcome = run_nas_case(c, &vias, &dir.join(&file));
        if let Err(e) = &outcome {
            if e.downcast_ref::<WulfError>()
                .is_some_and(|w| matches!(w, WulfError::Interrupted))
            {
                return (out, true);
            }
        }
        let r = match &outcome {
            Ok(r) => study::nas_rows::case_result(c, &vias, Ok((r, file))),
            Err(e) => study::nas_rows::case_result(c, &vias, Err(format!("{e:#}"))),
        };
        let line: Vec<String> = r
            .stacks
            .iter()
            .map(|s| match s.mop_s {
                Some(m) => format!("{} {m:.1}", s.via),
                None => format!("{} -", s.via),
            })
            .collect();
        eprintln!(
            "[{:>2}/{}] {:<24} Mop/s: {}",
            i + 1,
            plan.len(),
            c.label,
            r.error.clone().unwrap_or_else(|| line.join(", "))
        );
        out.push(r);
    }
    (out, false)
}

/// One NAS run: `wulf npb` in a temporary lab or on this machine, its result read back (a
/// run whose stacks partly failed still writes its file: read that).
fn run_nas_case(
    c: &study::nas_rows::NasCase,
    vias: &[String],
    json: &Path,
) -> Result<crate::result::NpbResult> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    let log = json.with_extension("log");
    let mut cmd = Command::new(exe);
    cmd.args(["npb", c.kernel, "--class", study::nas_rows::CLASS, "--np"])
        .arg(study::nas_rows::NPROCS.to_string())
        .args(["--via", &vias.join(",")])
        .args(["--repetitions", "1", "--json"])
        .arg(json);
    if let Some(lab) = c.lab_spec() {
        cmd.args(["--lab", &lab]);
    }
    if let Some(load) = &c.load {
        cmd.args(["--load", load]);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?,
    );
    let status = run_forwarding_interrupt(&mut cmd).context("cannot run wulf npb")?;
    let code = exit_code(status);
    if code == 130 {
        return Err(WulfError::Interrupted.into());
    }
    match crate::result::read_npb_result(json) {
        Ok(r) => {
            let _ = std::fs::remove_file(&log);
            Ok(r)
        }
        Err(_) => anyhow::bail!("wulf npb exited with code {code}: {}", last_error(&log)),
    }
}
