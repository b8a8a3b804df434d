//! What a matrix run does, below `wulf matrix` and `wulf agent`: the
//! nodes placed (a lab, a node list, a launcher, an MPI's own launcher),
//! the agents started and the coordinator's rounds measured into a
//! `matrix` result; and an agent's side. `wulf run --hosts` runs its
//! matrix through [`execute_with`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};

use crate::cli::{AgentArgs, MatrixArgs, PatternArg};
use crate::cluster::agent::{self, AgentOptions};
use crate::cluster::cells::{cells_path, CellFile};
use crate::cluster::coordinator::{self, MatrixPlan};
use crate::cluster::hostlist;
use crate::cluster::launchers::{self, Launcher};
use crate::cluster::rounds::Progress;
use crate::error::{usage, WulfError};
use crate::lab::between::Across;
use crate::launch::mpi_ranks::MpiRanks;
use crate::launch::RunContext;
use crate::result::matrix::Pattern;
use crate::result::matrix::{MatrixResult, MATRIX_KIND, MATRIX_SCHEMA_VERSION};
use crate::result::write_atomically;

/// The bandwidth matrix's stream size when `--bandwidth-size` is not
/// given: large enough for a fast link's rate, and fitted down to the
/// budget over a slow one ([`crate::cluster::stream_fit`]).
pub const DEFAULT_BANDWIDTH_BYTES: u64 = 4 << 20;

/// Run `wulf matrix` with `launcher` as its `--launch` when a command
/// that parsed it already hands it down (`wulf run`), else the one
/// `args` name.
pub fn execute_with(args: &MatrixArgs, launcher: Option<Arc<dyn Launcher>>) -> Result<()> {
    if let Some(lab) = &args.lab {
        if args.nodes < 2 {
            return Err(usage("--nodes: a matrix needs at least 2 nodes"));
        }
        let across = Across {
            nodes: args.nodes,
            serve: None,
            spread: true,
        };
        return super::lab_relay(crate::lab::between::run_in_node1(lab, across)?);
    }
    let launcher = match launcher {
        Some(l) => l,
        None => launchers::parse(
            args.launch.as_deref(),
            &launchers::Options {
                rsh: args.rsh.clone(),
                remote_wulf: args.remote_wulf.clone(),
                timeout: args.timeout,
                in_lab: args.in_lab,
            },
        )?,
    };
    if let Some(name) = launcher.lab_to_enter() {
        if !args.in_lab {
            return super::lab_relay(crate::lab::between::run_in_named_lab(name)?);
        }
    }
    if args.ppn == 0 {
        return Err(usage("--ppn: at least 1 process per node"));
    }
    if args.serial && args.pattern != PatternArg::Pairs {
        return Err(usage(
            "--serial measures one pair at a time: it goes with --pattern pairs only",
        ));
    }
    // A matrix takes no MPI options: its MPIs are the ones found here.
    let mut ctx = RunContext::default();
    super::spread_in_lab(&mut ctx, args.in_lab)?;
    ctx.launcher = Some(launcher.clone());
    if ctx.find(&args.via).is_none_or(|t| t.local_only()) {
        return Err(usage(format!(
            "--via {}: a matrix runs over a transport that crosses between nodes (tcp)",
            args.via
        )));
    }
    let over_mpi = ctx.find(&args.via).is_some_and(|t| t.starts_both_ends());
    if over_mpi {
        check_mpi_matrix(&ctx, args)?;
    }
    // Started on every node by srun or mpirun: rank 0 coordinates.
    let task =
        (args.hosts.is_none() && args.hostfile.is_none() && args.launch.is_none() && !over_mpi)
            .then(crate::launch::launched::task)
            .flatten();
    if let Some(t) = &task {
        let file = crate::launch::launched::rendezvous_path(&std::env::current_dir()?, t);
        if t.rank != 0 {
            crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
            let name = process_name(node_name(None)?, args.ppn)?;
            return crate::launch::launched::join(&file, t.rank, name, args.timeout);
        }
        let mut plan = plan(&ctx, args, Vec::new(), t.size);
        plan.rank_sources = Some(crate::launch::launched::rank_sources(&file, t));
        let launcher = crate::launch::launched::FromLauncher {
            task: t.clone(),
            file,
            name: process_name(node_name(None)?, args.ppn)?,
        };
        // Under `--launch mpi:NAME`, the launching wulf waits for this.
        crate::launch::mpi::bounded::report("started");
        let outcome = measure(args, &plan, &launcher);
        crate::launch::mpi::bounded::report_outcome(&outcome);
        return outcome;
    }
    let hosts = hosts(&ctx, args)?;
    if hosts.len() < 2 {
        return Err(usage(format!(
            "a matrix needs at least 2 nodes, got {}",
            hosts.len()
        )));
    }
    if let Some(mpi) = launcher.mpi_only() {
        if args.ppn > 1 {
            // Its launcher places one task per host (`ppr:1:node`, `-ppn 1`).
            return Err(usage(format!(
                "--launch {mpi} starts one matrix task per host: for --ppn {0} give ssh, lab, slurm                  or local, or run `mpirun --map-by ppr:{0}:node wulf matrix --ppn {0}` yourself",
                args.ppn
            )));
        }
        return through_mpi(&ctx, mpi, &hosts, args);
    }
    if over_mpi && args.ppn > 1 {
        return Err(usage(format!(
            "--via {}: one rank per node (--ppn 1); several processes per node go with --via tcp",
            args.via
        )));
    }
    // `--ppn N`: N agents per host, named `HOST/K`.
    let hosts = crate::cluster::nodes::processes(&hosts, args.ppn);
    let launcher: Arc<dyn Launcher> = if over_mpi {
        Arc::new(MpiRanks {
            ctx: ctx.clone(),
            via: args.via.clone(),
            timeout: args.timeout,
        })
    } else {
        launcher
    };
    let expected = hosts.len();
    measure(args, &plan(&ctx, args, hosts, expected), launcher.as_ref())
}

fn plan(ctx: &RunContext, args: &MatrixArgs, hosts: Vec<String>, expected: usize) -> MatrixPlan {
    let pattern = match args.pattern {
        PatternArg::Pairs => Pattern::Pairs,
        PatternArg::Shift => Pattern::Shift,
        PatternArg::Bisection => Pattern::Bisection,
        PatternArg::Multipair => Pattern::Multipair,
    };
    MatrixPlan {
        expected,
        hosts,
        via: args.via.clone(),
        latency_bytes: args.latency_size,
        bandwidth_bytes: args.bandwidth_size.unwrap_or(DEFAULT_BANDWIDTH_BYTES),
        fit_bandwidth: args.bandwidth_size.is_none(),
        budget: args.budget,
        timeout: args.timeout,
        serial: args.serial,
        pattern,
        serve_inline: ctx.find(&args.via).is_some_and(|t| t.starts_both_ends()),
        alone: matches!(pattern, Pattern::Shift | Pattern::Bisection) && !args.no_alone,
        seed: args.seed.unwrap_or_else(|| fastrand::u64(..)),
        rank_sources: None,
    }
}

/// What a matrix over an MPI's ranks cannot do: its launcher starts the
/// ranks (no other `--launch`, not under srun or mpirun), and a rank
/// measures or serves, never both at once (the pairs pattern only).
fn check_mpi_matrix(ctx: &RunContext, args: &MatrixArgs) -> Result<()> {
    if args.pattern != PatternArg::Pairs {
        return Err(usage(format!(
            "--via {}: over MPI ranks a matrix takes --pattern pairs only (a rank cannot measure and serve at once)",
            args.via
        )));
    }
    let launcher = ctx.launcher.as_ref();
    if args.launch.is_some() && launcher.is_some_and(|l| !l.in_lab()) {
        return Err(usage(format!(
            "--via {}: the MPI's own launcher starts the ranks; leave out --launch",
            args.via
        )));
    }
    if args.hosts.is_none()
        && args.hostfile.is_none()
        && ctx.cluster.is_none()
        && crate::launch::launched::task().is_some()
    {
        return Err(usage(format!(
            "--via {}: run it from one node with --hosts or --hostfile, not under srun or mpirun \
             (it starts an MPI job of its own)",
            args.via
        )));
    }
    Ok(())
}

/// Run the matrix, print it, save it; the exit code says what went wrong.
fn measure(args: &MatrixArgs, plan: &MatrixPlan, launcher: &dyn Launcher) -> Result<()> {
    let started = Instant::now();
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    if !args.quiet {
        eprintln!(
            "wulf matrix: {} nodes, {} steps of the {} pattern, agents by {}",
            plan.expected,
            crate::cluster::schedule::steps(plan.pattern, plan.expected),
            crate::report::format::matrix_text::pattern_name(plan.pattern),
            launcher.name()
        );
    }
    let pb = super::progress_bar(
        match plan.pattern {
            Pattern::Pairs => crate::cluster::schedule::rounds(plan.expected),
            p => crate::cluster::schedule::steps(p, plan.expected),
        } as u64,
        args.quiet,
        "matrix",
    );
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix:>12} [{bar:30}] {pos}/{len} rounds  {elapsed}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    let path = args.json.clone().unwrap_or_else(default_path);
    // Standard output gets the result; the cells wait in a file of their own.
    let cells_dir = match to_stdout {
        true => Some(tempfile::tempdir().context("cannot make a directory for the cells")?),
        false => None,
    };
    let mut cell_file = CellFile::new(match &cells_dir {
        Some(d) => d.path().join("matrix.cells.jsonl"),
        None => cells_path(&path),
    });
    let g = coordinator::run(
        plan,
        launcher,
        &mut cell_file,
        &started_at,
        &mut |progress| match progress {
            Progress::Round { done, .. } => pb.set_position(done as u64),
            Progress::WillOverrun(line) => pb.println(format!("warning: {line}")),
        },
    );
    pb.finish_and_clear();
    let g = g?;
    // The coordinator re-measures every suspicious cell of a pairs run:
    // one it could not (budget spent, interrupted) names nothing.
    let analysis = crate::analysis::matrix::analyse_pattern_with(
        plan.pattern,
        &g.nodes,
        &g.cells,
        crate::analysis::matrix::Confirmation::Required,
    );
    let result = MatrixResult {
        kind: MATRIX_KIND.into(),
        schema_version: MATRIX_SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        complete: g.incomplete.is_none(),
        incomplete_reason: g.incomplete.clone(),
        command_line: std::env::args().collect(),
        started_at,
        wall_s: started.elapsed().as_secs_f64(),
        rounds_s: g.rounds_time.as_secs_f64(),
        coordinator_cpu_s: own_cpu_s(),
        via: plan.via.clone(),
        launch: launcher.name(),
        latency_bytes: plan.latency_bytes,
        bandwidth_bytes: g.bandwidth_bytes,
        serial: plan.serial,
        pattern: plan.pattern,
        rounds: g.rounds,
        nodes: g.nodes,
        // Streamed from the cell file when written.
        cells: Vec::new(),
        analysis,
        warnings: g.warnings.clone(),
        budget_s: Some(plan.budget.as_secs_f64()),
        seed: Some(plan.seed),
    };
    let text = crate::report::format::matrix_text::to_text(&result, &g.cells);
    if to_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    cell_file.write_result(&path, &result)?;
    cell_file.remove();
    if !to_stdout {
        println!("saved {}", path.display());
    }
    if let Some(csv) = &args.csv {
        write_atomically(
            csv,
            &crate::report::format::matrix_csv::to_csv(&result, &g.cells)?,
        )?;
    }
    if let Some(path) = &args.openmetrics {
        let text = crate::report::format::openmetrics::to_openmetrics_figures(
            &[],
            &[(&result, g.cells.as_slice())],
        );
        write_atomically(path, text.as_bytes())?;
    }
    if g.incomplete.as_deref() == Some("interrupted") {
        return Err(WulfError::Interrupted.into());
    }
    if g.node_trouble {
        return Err(crate::error::peer(
            g.incomplete
                .unwrap_or_else(|| "some cells failed".to_string()),
        ));
    }
    Ok(())
}

/// Run `wulf agent`.
pub fn execute_agent(args: &AgentArgs) -> Result<()> {
    // Agents run in process groups of their own; a signal sent to one
    // ends it at once (its coordinator notices).
    crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
    agent::run(&AgentOptions {
        coordinator: vec![args.coordinator],
        name: match args.name.as_deref() {
            Some(n) => n.to_string(),
            // Started by srun with `--ppn`: one of several on its node.
            None => process_name(node_name(None)?, ppn_of_env())?,
        },
        secret: agent::read_secret()?,
        serve_inline: false,
    })
}

/// The name an agent goes by: given, else Slurm's node name, else the
/// host name.
fn node_name(given: Option<&str>) -> Result<String> {
    if let Some(n) = given {
        return Ok(n.to_string());
    }
    if let Ok(n) = std::env::var("SLURMD_NODENAME") {
        return Ok(n);
    }
    nix::unistd::gethostname()
        .context("cannot read the host name")
        .map(|h| h.to_string_lossy().into_owned())
}

/// `name` as one of `ppn` processes on its host (`HOST/K`).
fn process_name(name: String, ppn: usize) -> Result<String> {
    crate::cluster::nodes::process_name(name, ppn).map_err(|e| usage(format!("{e:#}")))
}

/// The processes per node an agent started by a launcher is one of
/// ([`crate::cluster::launchers::PPN_ENV`]; 1 when unset).
fn ppn_of_env() -> usize {
    std::env::var(crate::cluster::launchers::PPN_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn hosts(ctx: &RunContext, args: &MatrixArgs) -> Result<Vec<String>> {
    let bad = |e: anyhow::Error| usage(format!("{e:#}"));
    if let Some(list) = &args.hosts {
        return hostlist::expand(list).map_err(bad);
    }
    if let Some(file) = &args.hostfile {
        return hostlist::read_hostfile(file).map_err(bad);
    }
    if let Some(c) = &ctx.cluster {
        return Ok(c.hosts.iter().map(|h| h.name.clone()).collect());
    }
    // Inside a batch job: its nodes (a Slurm allocation's).
    if let Some((list, _)) = launchers::allocation() {
        return hostlist::expand(&list).map_err(bad);
    }
    Err(usage(
        "no nodes: give --hosts, --hostfile or --lab (or run inside a Slurm allocation)",
    ))
}

/// `--launch mpi:NAME`: run this same matrix command once on every host
/// under the MPI's launcher; the tasks meet as under a launcher the user
/// ran (rank 0 coordinates and prints). Returns with the job's exit code.
fn through_mpi(ctx: &RunContext, mpi: &str, hosts: &[String], args: &MatrixArgs) -> Result<()> {
    use crate::launch::mpi::bounded;
    let exe = std::env::current_exe().context("cannot find wulf's own executable")?;
    // Rank 0 reports through a file in the shared working directory (as
    // the rendezvous file); `env` sets it on every node, whatever the MPI
    // passes on of the environment.
    let report = bounded::report_path(&std::env::current_dir()?);
    let mut program = vec![
        "env".to_string(),
        format!("{}={}", bounded::DONE_ENV, report.display()),
        exe.display().to_string(),
    ];
    program.extend(without_options(
        std::env::args().skip(1),
        &["--launch", "--hosts", "--hostfile"],
    ));
    let dir = tempfile::tempdir().context("cannot make a directory for the launcher")?;
    // `--rsh` reaches the MPI's launcher as its remote shell (issue 35
    // item 4), with ssh's options that never wait for a person; made here,
    // not by placing the hosts, which would resolve them before an unknown
    // MPI is named.
    let program_rsh: Vec<String> = args.rsh.split_whitespace().map(str::to_string).collect();
    let rsh = (!program_rsh.is_empty())
        .then(|| crate::exec::remote_shell::ssh(program_rsh, args.timeout));
    let (argv, env) = crate::launch::mpi::spread::launch_once_per_host(
        ctx,
        mpi,
        hosts,
        dir.path(),
        &program,
        rsh.as_deref(),
    )?;
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]).envs(env);
    bounded::run(mpi, cmd, &report, args.timeout)
}

/// `args` without the given options and their values (`--x V`, `--x=V`).
fn without_options(args: impl Iterator<Item = String>, drop: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if drop.contains(&a.as_str()) {
            skip = true;
        } else if !drop.iter().any(|d| a.starts_with(&format!("{d}="))) {
            out.push(a);
        }
    }
    out
}

fn default_path() -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .replace(':', "-");
    PathBuf::from("wulf-results").join(format!("matrix-{stamp}.json"))
}

/// CPU time this process has used, seconds.
fn own_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}
