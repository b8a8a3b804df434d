//! `wulf hpl`: the real HPL, inside HPC Challenge (Debian's `hpcc`, built
//! on Open MPI and the distribution's BLAS), over the interconnect: seed
//! 003's Linpack over Fast Ethernet, Gigabit and Myrinet, in its own form.
//! wulf writes HPCC's input (N from memory, P x Q near square), starts it
//! through Open MPI's launcher (one process per lab node with `--lab`,
//! held to TCP on the lab's links as every MPI run there), and records
//! HPL's Gflop/s and its own residual check from HPCC's summary. Never a
//! hand-written Linpack, and no BLAS of our own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use crate::cli::HplArgs;
use crate::error::{usage, with_exit_code};
use crate::lab::between::Across;
use crate::launch::RunContext;
use crate::result::hpl::{
    grid, n_for_memory, parse_hpcc_summary, parse_residual, HplResult, HPL_KIND, HPL_SCHEMA_VERSION,
};
use crate::sys::{cpu_count, Host};
use crate::transport::mpi::discover::{builtin, Flavor};

/// Refuse `--n N` when its matrix, 8 N^2 bytes of doubles, exceeds
/// `memory` (this machine's: the ranks, and a lab's nodes, all share it),
/// before a lab or a rank starts: `--n 1000000` (8 TB) was launched, to
/// swap or be killed hours later. Nothing is refused when the memory is
/// unknown.
fn refuse_beyond_memory(n: u64, memory: Option<u64>) -> Result<()> {
    let Some(memory) = memory else {
        return Ok(());
    };
    let matrix = 8 * u128::from(n) * u128::from(n);
    if matrix <= u128::from(memory) {
        return Ok(());
    }
    Err(usage(format!(
        "--n {n}: its matrix is {} (8 N^2 bytes), more than this machine's memory ({}); \
         give a smaller --n, or none to have it chosen from memory",
        crate::units::format_bytes(u64::try_from(matrix).unwrap_or(u64::MAX)),
        crate::units::format_bytes(memory)
    )))
}

/// Run `wulf hpl`.
pub fn execute(args: &HplArgs) -> Result<()> {
    let r = &args.ranks;
    let np = args
        .np
        .map(|n| n as usize)
        .unwrap_or(if r.lab.is_some() { 2 } else { cpu_count() });
    if let Some(n) = args.n {
        refuse_beyond_memory(n, crate::sys::memory_total_bytes())?;
    }
    if let Some(lab) = &r.lab {
        let across = Across {
            nodes: np,
            serve: None,
            spread: true,
        };
        return crate::plan::lab_relay(crate::lab::between::run_in_node1(lab, across)?);
    }
    let mut ctx = RunContext::default();
    crate::plan::spread_in_lab(&mut ctx, r.in_lab)?;
    let hpcc = which("hpcc").ok_or_else(|| {
        usage("wulf hpl runs HPC Challenge's HPL, which is not installed: apt-get install hpcc")
    })?;
    let mpi = builtin(Flavor::OpenMpi).map_err(|why| {
        usage(format!(
            "wulf hpl needs Open MPI, with which Debian builds hpcc: {why}"
        ))
    })?;
    let started = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let host = Host::probe();
    let nb = args.nb as usize;
    let (p, q) = grid(np);
    // The remote shell's script lives as long as every run that uses it.
    let rsh_dir = tempfile::Builder::new()
        .prefix("wulf-hpl-")
        .tempdir()
        .context("cannot make a directory for HPCC's files")?;
    let argv = launcher_argv(&ctx, (&mpi.launcher, &hpcc), np, &r.mpi_arg, rsh_dir.path())?;
    let job = Job {
        argv: &argv,
        nb,
        grid: (p, q),
        np,
        spread: ctx.cluster.is_some(),
        timeout: args.timeout,
    };
    let (n, n_from, text) = match args.n {
        Some(n) => (n as usize, "given".to_string(), job.run(n as usize)?),
        None => {
            let memory = host.memory_total_bytes.ok_or_else(|| {
                usage("this machine's memory is unknown (/proc/meminfo): give --n")
            })?;
            let max_n = n_for_memory(memory, args.memory_fraction, nb);
            choose_and_run(&job, args, max_n, started)?
        }
    };
    let summary = parse_hpcc_summary(&text);
    let figure = |key: &str| -> Result<f64> {
        summary
            .get(key)
            .and_then(|v| v.parse::<f64>().ok())
            .with_context(|| format!("HPCC's summary has no {key}: HPL did not complete"))
    };
    let (scaled_residual, passed) =
        parse_residual(&text).context("HPCC's output has no HPL residual check")?;
    let result = HplResult {
        kind: HPL_KIND.into(),
        schema_version: HPL_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        command_line: std::env::args().collect(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        host,
        np,
        n,
        nb,
        p,
        q,
        n_from,
        gflops: figure("HPL_Tflops")? * 1e3,
        time_s: figure("HPL_time")?,
        scaled_residual,
        passed,
        launcher_command: argv,
        lab: crate::lab::group_placement(np),
        hpcc: if args.hpcc_all {
            summary
        } else {
            Default::default()
        },
    };
    println!("{}", describe(&result));
    if let Some(path) = &args.json {
        crate::result::write_json(path, &result)?;
    }
    if !passed {
        return Err(with_exit_code(
            1,
            format!(
                "HPL's residual check failed (scaled residual {scaled_residual}, threshold 16)"
            ),
        ));
    }
    Ok(())
}

/// One HPCC job: its launcher's command line and HPL's settings but N.
struct Job<'a> {
    argv: &'a [String],
    nb: usize,
    grid: (usize, usize),
    np: usize,
    spread: bool,
    timeout: Duration,
}

impl Job<'_> {
    /// Run HPCC at order `n` in a fresh directory; its output file's text.
    fn run(&self, n: usize) -> Result<String> {
        let (p, q) = self.grid;
        let dir = tempfile::Builder::new()
            .prefix("wulf-hpl-")
            .tempdir()
            .context("cannot make a directory for HPCC's files")?;
        std::fs::write(dir.path().join("hpccinf.txt"), hpcc_input(n, self.nb, p, q))?;
        eprintln!(
            "wulf: HPL N={n} NB={} P x Q = {p} x {q} on {} processes{}",
            self.nb,
            self.np,
            if self.spread { ", one per node" } else { "" }
        );
        run_launcher(self.argv, dir.path(), self.timeout)?;
        let out_path = dir.path().join("hpccoutf.txt");
        std::fs::read_to_string(&out_path).with_context(|| {
            format!(
                "HPCC wrote no output ({}); its launcher said: {}",
                out_path.display(),
                tail(dir.path())
            )
        })
    }
}

/// `--n` not given: a probe at a small N measures the rate, then the
/// largest N whose estimated time fits what the probe left of `--budget`
/// (and `max_n`, the memory's) runs; the probe's result stands when no
/// larger N fits. Returns N, how it was chosen and HPCC's output.
fn choose_and_run(
    job: &Job<'_>,
    args: &HplArgs,
    max_n: usize,
    started: Instant,
) -> Result<(usize, String, String)> {
    use crate::plan::hpl_budget::{estimated_wall_s, n_for_budget, probe_n, Probe, HEADROOM};
    let n0 = probe_n(job.nb).min(max_n);
    let probe_started = Instant::now();
    let probe_text = job.run(n0)?;
    let wall_s = probe_started.elapsed().as_secs_f64();
    let gflops = parse_hpcc_summary(&probe_text)
        .get("HPL_Tflops")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|t| t * 1e3)
        .filter(|g| *g > 0.0)
        .context("HPCC's summary of the probe run has no HPL rate: HPL did not complete")?;
    let probe = Probe {
        n: n0,
        gflops,
        wall_s,
    };
    let budget_s = args.budget.as_secs_f64();
    let left_s = budget_s - started.elapsed().as_secs_f64();
    let Some(n) = n_for_budget(&probe, left_s, job.nb, max_n) else {
        eprintln!(
            "wulf: HPL at N={n0} ran {gflops:.3} Gflop/s in {wall_s:.1} s; no larger N fits the \
             {left_s:.1} s left of --budget {budget_s:.0}s: the probe's result stands"
        );
        let from = format!("budget {budget_s:.0} s: the probe (no larger N fits)");
        return Ok((n0, from, probe_text));
    };
    let estimate_s = estimated_wall_s(&probe, n);
    eprintln!(
        "wulf: HPL at N={n0} ran {gflops:.3} Gflop/s in {wall_s:.1} s (probe); N={n} is estimated \
         at {estimate_s:.1} s (x{HEADROOM} headroom) of the {left_s:.1} s left of --budget {budget_s:.0}s"
    );
    let from = format!("budget {budget_s:.0} s: {gflops:.3} Gflop/s measured at N={n0}");
    Ok((n, from, job.run(n)?))
}

/// The launcher's command line that starts `np` HPCC processes (spread
/// over the cluster's nodes when there is one).
fn launcher_argv(
    ctx: &RunContext,
    (launcher, hpcc): (&Path, &Path),
    np: usize,
    mpi_args: &[String],
    rsh_dir: &Path,
) -> Result<Vec<String>> {
    let mut argv: Vec<String> = vec![launcher.display().to_string(), "-np".into(), np.to_string()];
    argv.extend(Flavor::OpenMpi.base_args().iter().map(|s| s.to_string()));
    if let Some(c) = &ctx.cluster {
        let agent = c.rsh_script(rsh_dir)?;
        let spread = Flavor::OpenMpi
            .cluster_args(&c.host_list(np)?, &agent, &c.subnet, &c.interface)
            .context("Open MPI's cluster arguments")?;
        argv.extend(spread);
        if np > cpu_count() {
            argv.extend(
                Flavor::OpenMpi
                    .oversubscribed_args()
                    .iter()
                    .map(|s| s.to_string()),
            );
        }
    }
    for a in mpi_args {
        argv.extend(a.split_whitespace().map(str::to_string));
    }
    argv.push(hpcc.display().to_string());
    Ok(argv)
}

/// One line of the result for the terminal.
pub fn describe(r: &HplResult) -> String {
    let place = match &r.lab {
        Some(l) => format!(" ({})", l.describe()),
        None => String::new(),
    };
    format!(
        "HPL N={} NB={} P x Q = {} x {}, {} processes{place}: {:.3} Gflop/s in {:.2} s, \
         scaled residual {:.4} {}",
        r.n,
        r.nb,
        r.p,
        r.q,
        r.np,
        r.gflops,
        r.time_s,
        r.scaled_residual,
        if r.passed { "PASSED" } else { "FAILED" }
    )
}

/// HPCC's input file: HPL's settings for one problem (N, NB, P x Q) with
/// HPL's usual algorithm choices (right-looking panels, 1-ring modified
/// broadcast, look-ahead 1, threshold 16), and PTRANS on the same sizes.
fn hpcc_input(n: usize, nb: usize, p: usize, q: usize) -> String {
    format!(
        "HPLinpack benchmark input file (written by wulf hpl)
wulf
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}         Ns
1            # of NBs
{nb}           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p}            Ps
{q}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
{n}        	values of N
0                       	number of additional blocking sizes for PTRANS
{nb}       	values of NB
"
    )
}

/// Runs the launcher in `dir`, in its own process group, bounded by
/// `timeout` and by Ctrl-C (both end the whole group).
fn run_launcher(argv: &[String], dir: &Path, timeout: Duration) -> Result<()> {
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(dir);
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } == 0 {
        // Open MPI refuses root without these; set for this job only.
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    let options = crate::exec::process::Options {
        parent_death_signal: Some(libc::SIGTERM),
        output_files: Some((dir.join("launcher.out"), dir.join("launcher.err"))),
        ..Default::default()
    };
    let mut launcher = crate::exec::process::Process::spawn(cmd, None, &options)
        .with_context(|| format!("cannot start {}", argv[0]))?;
    let child = &mut launcher.child;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                return Ok(());
            }
            return Err(with_exit_code(
                3,
                format!("HPCC's launcher failed ({status}): {}", tail(dir)),
            ));
        }
        let why = if crate::exec::interrupted() {
            Some(crate::error::WulfError::Interrupted.into())
        } else if Instant::now() > deadline {
            Some(with_exit_code(
                3,
                format!("HPL ran past --timeout {}s: stopped", timeout.as_secs()),
            ))
        } else {
            None
        };
        if let Some(e) = why {
            crate::exec::process::end_process_group(
                child,
                nix::sys::signal::Signal::SIGTERM,
                crate::exec::process::KILL_GRACE,
            );
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last lines the launcher wrote to its error output.
fn tail(dir: &Path) -> String {
    let err = std::fs::read_to_string(dir.join("launcher.err")).unwrap_or_default();
    let lines: Vec<&str> = err.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_n_whose_matrix_exceeds_memory_is_refused() {
        let gib = 1u64 << 30;
        // 8 x 10^12 bytes against 16 GiB: a usage error naming --n.
        let e = refuse_beyond_memory(1_000_000, Some(16 * gib)).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
        assert!(e.to_string().contains("--n 1000000"), "{e}");
        // 40,000^2 x 8 = 12.8 GB fits in 16 GiB; no overflow at u64::MAX.
        refuse_beyond_memory(40_000, Some(16 * gib)).unwrap();
        assert!(refuse_beyond_memory(u64::MAX, Some(u64::MAX)).is_err());
        refuse_beyond_memory(u64::MAX, None).unwrap();
    }
}
