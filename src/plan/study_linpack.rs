//! `wulf study linpack`: Innocente et al. 2000's Linpack comparison in its own form.
//! Each case of [`crate::study::linpack::plan`] is an ordinary `wulf hpl
//! --lab LINK --np NODES` run as a child process (a temporary lab of its
//! own, HPL's result file beside the others); then the Gflop/s grid and
//! the runs are printed and a report of them written
//! (`report.html`, the same section `wulf report` draws from the files).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use anyhow::{Context, Result};

use crate::cli::StudyArgs;
use crate::error::{usage, WulfError};
use crate::exec::process::{exit_code, run_forwarding_interrupt};
use crate::lab::LinkRate;
use crate::report::ReportInput;
use crate::result::hpl::HplResult;
use crate::result::{read_any, write_atomically, AnyResult};
use crate::study::linpack::{plan, LinpackCase, LINKS};
use crate::study::Effort;

/// Run `wulf study linpack`.
pub fn execute(a: &StudyArgs) -> Result<()> {
    if a.peer.is_some() || a.mtu.is_some() || a.load.is_some() {
        return Err(usage(
            "linpack runs HPL in the lab's links: --peer, --mtu and --load do not apply",
        ));
    }
    crate::lab::check_can_build()?;
    let links: Vec<String> = match &a.link {
        Some(l) => {
            LinkRate::parse(l).map_err(|e| usage(format!("--link: {e}")))?;
            vec![l.clone()]
        }
        None => LINKS.iter().map(|s| s.to_string()).collect(),
    };
    let effort = Effort::from_flags(a.quick, a.thorough);
    let cases = plan(&links, effort);
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp = started_at
        .replace(':', "-")
        .trim_end_matches('Z')
        .to_string();
    let dir = a.out.join(format!("study-linpack-{stamp}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    eprintln!(
        "wulf study linpack: {} HPL runs (N={}), each in a temporary lab; results in {}",
        cases.len(),
        cases.first().map_or(0, |c| c.n),
        dir.display()
    );
    let mut results: Vec<HplResult> = Vec::new();
    let mut failed = 0;
    for (i, c) in cases.iter().enumerate() {
        if crate::sweep::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        let outcome = run_case(c, &dir);
        let line = match &outcome {
            Ok(r) => format!(
                "{:.3} Gflop/s in {:.2} s, residual {:.4} {}",
                r.gflops,
                r.time_s,
                r.scaled_residual,
                if r.passed { "PASSED" } else { "FAILED" }
            ),
            Err(e) => format!("failed: {e:#}"),
        };
        eprintln!("[{:>2}/{}] {:<10} {line}", i + 1, cases.len(), c.label);
        match outcome {
            Ok(r) => results.push(r),
            Err(e) => {
                failed += 1;
                if e.downcast_ref::<WulfError>()
                    .is_some_and(|w| matches!(w, WulfError::Interrupted))
                {
                    break;
                }
            }
        }
    }
    let text = format!(
        "{}\n{}",
        crate::report::hpl::grid_text(&results),
        crate::report::hpl::runs_text(&results)
    );
    write_atomically(&dir.join("linpack.txt"), text.as_bytes())?;
    let html = crate::report::html::to_html(&ReportInput {
        hpl: &results,
        ..Default::default()
    })?;
    write_atomically(&dir.join("report.html"), html.as_bytes())?;
    print!("{text}");
    println!(
        "results: {}\nreport:  {}",
        dir.display(),
        dir.join("report.html").display()
    );
    if failed > 0 {
        eprintln!(
            "wulf: {failed} of {} HPL runs failed (see their .log files)",
            cases.len()
        );
    }
    if results.is_empty() {
        anyhow::bail!("no HPL run succeeded");
    }
    Ok(())
}

/// One `wulf hpl` child; its stderr goes to LABEL.log, its result to
/// LABEL.json, read back through the reader of every result kind.
fn run_case(c: &LinpackCase, dir: &Path) -> Result<HplResult> {
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    let json = dir.join(format!("{}.json", c.label));
    let log = dir.join(format!("{}.log", c.label));
    let mut cmd = Command::new(exe);
    cmd.args(c.hpl_args(&json.display().to_string()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(&log)
                .with_context(|| format!("cannot create {}", log.display()))?,
        );
    let status = run_forwarding_interrupt(&mut cmd).context("cannot run wulf hpl")?;
    let code = exit_code(status);
    if crate::sweep::INTERRUPTED.load(Ordering::Relaxed) {
        return Err(WulfError::Interrupted.into());
    }
    // Exit 1 with a file: HPL ran and its residual check failed; the
    // result says so and is kept.
    match read_any(&json) {
        Ok(AnyResult::Hpl(r)) => Ok(*r),
        Ok(other) => anyhow::bail!("{} holds a {} result", json.display(), other.kind()),
        Err(e) => {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let last = said.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
            Err(e.context(format!("wulf hpl exited {code}: {last}")))
        }
    }
}
