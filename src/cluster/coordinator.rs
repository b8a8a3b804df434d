//! The coordinator of a matrix: starts agents through a [`Launcher`],
//! lets in only those that prove the run's secret, runs the tournament's
//! rounds, and collects every cell as it arrives.
//!
//! Agents are accepted and authenticated on threads of their own, under
//! the limits of [`super::admission`] (a slow or hostile connection delays
//! only itself, a flood costs a bounded number of threads, every read is
//! bounded);
//! the rounds then run on this thread alone: a round's orders go out to
//! all its measuring agents, then their reports are read one after the
//! other. Since the pairs of a round measure at the same time, reading in
//! order costs nothing, and the coordinator holds one connection and one
//! row of state per node: memory and work per round grow linearly with
//! the number of nodes. Each cell goes to the cell file ([`super::cells`])
//! as soon as it is read; the coordinator keeps only its figures
//! ([`CellFigures`], 128 bytes) for the analysis and the terminal.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::admission::{admit, Keys};
use super::cells::CellFile;
use super::launchers::Launcher;
use super::protocol::{
    mesh_key, random_hex, CellParts, CellReport, ControlChannel, Order, WORKING_EVERY,
};
use super::schedule;
use crate::result::matrix::Pattern;
use crate::result::matrix::{CellFigures, MatrixCell, MatrixNode};

/// What a matrix measures and how.
#[derive(Debug, Clone)]
pub struct MatrixPlan {
    /// The nodes; empty when the agents were started by a launcher that
    /// ran this command on every node (`srun wulf matrix`): they are then
    /// named by the agents as they join.
    pub hosts: Vec<String>,
    /// Agents expected (the number of hosts, or the launcher's task count).
    pub expected: usize,
    /// Transport between agents.
    pub via: String,
    /// Ping-pong size, bytes.
    pub latency_bytes: u64,
    /// Stream size, bytes.
    pub bandwidth_bytes: u64,
    /// Whether the stream size may be made smaller to fit the budget over
    /// a slow link ([`super::stream_fit`]): it was not given.
    pub fit_bandwidth: bool,
    /// Time budget of the whole measurement: rounds, pairs alone and
    /// re-measures (the agents' start-up aside), kept within 1.2 x.
    pub budget: Duration,
    /// Bound of every blocking step, and of how long agents may take to join.
    pub timeout: Duration,
    /// One pair at a time instead of a whole round at once.
    pub serial: bool,
    /// What is measured at once.
    pub pattern: Pattern,
    /// The measured agent of each pair serves on its main thread while
    /// told to ([`Order::Serve`]): the agents are ranks of an MPI job.
    pub serve_inline: bool,
    /// After each step, each of its pairs streams again alone (its
    /// bandwidth without the others; `shift` and `bisection`).
    pub alone: bool,
    /// The seed of the order of the rounds ([`schedule::order`]).
    pub seed: u64,
    /// Where agents that name themselves (`hosts` empty: tasks of srun or
    /// mpirun) publish the addresses they connect from; None: no address
    /// is known beforehand and none is refused.
    pub rank_sources: Option<super::sources::RankSources>,
}

/// What the coordinator gathered.
pub struct Gathered {
    /// One per host, in order.
    pub nodes: Vec<MatrixNode>,
    /// The figures of every cell measured or tried (the cells, with
    /// their trials, are in the cell file).
    pub cells: Vec<CellFigures>,
    /// Rounds of the tournament.
    pub rounds: usize,
    /// The stream size the cells measured, bytes (the plan's, or smaller
    /// to fit the budget: [`super::stream_fit`]).
    pub bandwidth_bytes: u64,
    /// Time spent in the rounds.
    pub rounds_time: Duration,
    /// Why the matrix is incomplete, when it is.
    pub incomplete: Option<String>,
    /// Whether some node could not be reached or was lost (exit code 3).
    pub node_trouble: bool,
    /// What the budget could not keep, and other observations for the
    /// result's warnings.
    pub warnings: Vec<String>,
}

/// A node's agent, once joined: its control connection (None when it
/// never joined or was lost) and where it serves.
pub(super) struct Member {
    /// The control connection.
    pub(super) ch: Option<ControlChannel>,
    /// Where its measuring server listens (`IP:PORT`).
    pub(super) serve_address: String,
}

/// Start the agents with `launcher`, run the matrix, end the agents.
/// Every cell is appended to `cell_file` as it arrives (started once the
/// nodes are known, with `started_at`); a cell file that cannot be written
/// stops the matrix. `on_progress` hears of each finished round and of an
/// overrun the first cells foresee.
pub fn run(
    plan: &MatrixPlan,
    launcher: &dyn Launcher,
    cell_file: &mut CellFile,
    started_at: &str,
    on_progress: &mut dyn FnMut(super::rounds::Progress),
) -> Result<Gathered> {
    // Several processes per host (`--ppn`) are named `HOST/K`: the
    // launchers and addresses go by the hosts.
    let ip = launcher.coordinator_ip(&super::nodes::machines(&plan.hosts))?;
    let listener = crate::sys::control_mark::bind(SocketAddr::new(ip, 0))
        .with_context(|| format!("cannot listen for agents on {ip}"))?;
    let addr = listener.local_addr()?;
    let keys = Keys {
        secret: random_hex().context("cannot make the run's secret")?,
        mesh: mesh_key().context("cannot make the agents' key")?,
    };
    let mut agents = launcher.start(&plan.hosts, addr, &keys.secret)?;
    let mut nodes: Vec<MatrixNode> = plan.hosts.iter().map(|h| MatrixNode::named(h)).collect();
    let mut members: Vec<Member> = (0..plan.hosts.len())
        .map(|_| Member {
            ch: None,
            serve_address: String::new(),
        })
        .collect();
    admit(plan, listener, &keys, &mut agents, &mut nodes, &mut members)?;
    let n = nodes.len();
    let names: Vec<String> = nodes.iter().map(|x| x.name.clone()).collect();
    cell_file.start(started_at, &names)?;
    let mut trouble = nodes.iter().any(|x| x.error.is_some());
    let joined = members.iter().filter(|m| m.ch.is_some()).count();
    let started = Instant::now();
    // With fewer than two agents there is no pair to measure.
    let steps = if joined < 2 {
        0
    } else {
        schedule::steps(plan.pattern, n)
    };
    let rounds = if joined < 2 {
        0
    } else if plan.pattern == Pattern::Pairs {
        schedule::rounds(n)
    } else {
        steps
    };
    let (fitted, fit_note) = fit_stream(plan, &nodes, n, steps);
    let plan = &fitted;
    let measured = super::rounds::run(
        plan,
        n,
        steps,
        rounds,
        cell_file,
        &mut members,
        &mut nodes,
        on_progress,
    );
    trouble |= measured.trouble;
    let (cells, interrupted, write_error, mut measured_warnings) = (
        measured.cells,
        measured.interrupted,
        measured.write_error,
        measured.warnings,
    );
    let rounds_time = started.elapsed();
    measured_warnings.extend(fit_note);
    for m in &mut members {
        if let Some(ch) = m.ch.as_mut() {
            let _ = ch.send(&Order::Bye);
        }
    }
    drop(members);
    agents.finish(Duration::from_secs(5));
    let lost: Vec<&str> = nodes
        .iter()
        .filter(|x| x.error.is_some())
        .map(|x| x.name.as_str())
        .collect();
    let failed = cells.iter().filter(|c| c.error.is_some()).count();
    let incomplete = if joined < 2 {
        trouble = true;
        Some(format!(
            "only {joined} of {} agents joined: no pair to measure",
            nodes.len()
        ))
    } else if let Some(e) = write_error {
        trouble = true;
        Some(format!("stopped: {e}"))
    } else if interrupted {
        Some("interrupted".to_string())
    } else if !lost.is_empty() {
        Some(format!("nodes missing or lost: {}", lost.join(", ")))
    } else if failed > 0 {
        trouble = true;
        Some(format!("{failed} cells failed"))
    } else {
        None
    };
    Ok(Gathered {
        nodes,
        cells,
        rounds,
        bandwidth_bytes: plan.bandwidth_bytes,
        rounds_time,
        incomplete,
        node_trouble: trouble,
        warnings: measured_warnings,
    })
}

/// The plan with its stream fitted to the budget over the slowest
/// node's link (see [`super::stream_fit`]), and why it changed; as it is
/// when the size was given or no link rate is known.
fn fit_stream(
    plan: &MatrixPlan,
    nodes: &[MatrixNode],
    n: usize,
    steps: usize,
) -> (MatrixPlan, Option<String>) {
    use super::stream_fit::{fit, slowest_egress_bits_per_s, stream_share};
    let mut fitted = plan.clone();
    let rate = slowest_egress_bits_per_s(nodes).filter(|_| plan.fit_bandwidth && steps > 0);
    let Some(rate) = rate else {
        return (fitted, None);
    };
    let slots = super::rounds::slot_count(plan, n);
    let pairs = plan.pattern == Pattern::Pairs;
    let rounds = match pairs {
        true => plan.budget.mul_f64(1.0 - super::budget::REMEASURE_SHARE),
        false => plan.budget,
    };
    let other_parts = 1 + u32::from(plan.pattern == Pattern::Multipair);
    let share = stream_share(rounds, slots, plan.alone, other_parts);
    let f = fit(plan.bandwidth_bytes, share, rate);
    fitted.bandwidth_bytes = f.bytes;
    (fitted, f.note)
}

/// How long a cell may take before its measuring agent counts as lost.
fn cell_deadline(plan: &MatrixPlan, cell_budget: Duration) -> Duration {
    // Up to three sweeps, each with its connection set-up and fingerprints, every
    // step bounded by the timeout; the engine may overrun its budget to
    // reach its fewest trials.
    cell_budget * 3 + plan.timeout * 4 + Duration::from_secs(20)
}

/// The cells of one group, and whether a node was lost measuring them.
pub(super) struct Measured {
    /// The cells, in the group's order.
    pub(super) cells: Vec<MatrixCell>,
    /// Whether a node was lost.
    pub(super) lost: bool,
}

/// Measure one group of directed pairs at once.
pub(super) fn measure_group(
    plan: &MatrixPlan,
    budget: Duration,
    round: usize,
    group: &[(usize, usize)],
    parts: CellParts,
    members: &mut [Member],
    nodes: &mut [MatrixNode],
) -> Measured {
    let mut lost = false;
    let mut cells = Vec::with_capacity(group.len());
    let mut sent = Vec::with_capacity(group.len());
    for &(from, to) in group {
        // Pairs with a node that never joined or was lost are not tried;
        // the node's own error says why.
        if members[to].ch.is_none() {
            continue;
        }
        if members[from].ch.is_none() {
            continue;
        }
        if plan.serve_inline {
            let serve = Order::Serve {
                timeout_ms: cell_deadline(plan, budget).as_millis() as u64,
            };
            let ch = members[to].ch.as_mut().expect("checked above");
            if let Err(e) = ch.send(&serve) {
                lose(members, nodes, to, round, &e);
                lost = true;
                continue;
            }
        }
        let ch = members[from].ch.as_mut().expect("checked above");
        let order = Order::Measure {
            peer: members[to].serve_address.clone(),
            via: plan.via.clone(),
            latency_bytes: plan.latency_bytes,
            bandwidth_bytes: plan.bandwidth_bytes,
            budget_ms: budget.as_millis() as u64,
            timeout_ms: plan.timeout.as_millis() as u64,
            parts,
        };
        let sent_ok = ch.send(&order);
        let mut cell = MatrixCell {
            from,
            to,
            round,
            latency: None,
            bandwidth: None,
            rate: None,
            alone_bandwidth: None,
            error: None,
            measure_s: 0.0,
            net: None,
            remeasure: false,
            intra_node: crate::result::matrix::intra_node(nodes, from, to),
            cut: false,
        };
        match sent_ok {
            Ok(()) => sent.push(cells.len()),
            Err(e) => {
                cell.error = Some(format!("{} was lost", nodes[from].name));
                lose(members, nodes, from, round, &e);
                lost = true;
            }
        }
        cells.push(cell);
    }
    let deadline = cell_deadline(plan, budget);
    for i in sent {
        let (from, to) = (cells[i].from, cells[i].to);
        let Some(ch) = members[from].ch.as_mut() else {
            cells[i].error = Some(format!("{} was lost", nodes[from].name));
            continue;
        };
        match recv_report(ch, deadline, plan.timeout) {
            Ok(report) => {
                cells[i].latency = report.latency;
                cells[i].bandwidth = report.bandwidth;
                cells[i].rate = report.rate;
                cells[i].measure_s = report.measure_s;
                cells[i].error = report.error;
                cells[i].net = report.net;
                cells[i].cut = report.cut;
                // What an agent sends is checked like a file: a negative
                // or 1e308 figure is never saved as a measurement.
                if let Err(e) = crate::result::validate::cell(&cells[i]) {
                    let c = &mut cells[i];
                    (c.latency, c.bandwidth, c.rate, c.measure_s) = (None, None, None, 0.0);
                    c.error = Some(format!(
                        "{} reported impossible figures ({e}); the cell is dropped",
                        nodes[from].name
                    ));
                }
                let failed = cells[i].error.is_some();
                // A failed cell may mean its peer died: ask. An agent
                // serving on its main thread is asked anyway: the Ping
                // ends its serving.
                if (failed || plan.serve_inline) && !ping(members, to, plan.timeout) {
                    let e = anyhow::anyhow!("no answer after a cell");
                    lose(members, nodes, to, round, &e);
                    lost = true;
                }
            }
            Err(e) => {
                cells[i].error = Some(format!("{} was lost: {e:#}", nodes[from].name));
                lose(members, nodes, from, round, &e);
                lost = true;
                if plan.serve_inline && !ping(members, to, plan.timeout) {
                    let e = anyhow::anyhow!("no answer after its peer was lost");
                    lose(members, nodes, to, round, &e);
                }
            }
        }
    }
    Measured { cells, lost }
}

/// Read a cell's report, passing over the agent's "still working" lines.
/// The connection may be silent for at most the agent's beat interval
/// plus `timeout` (a dead or hung agent is found that fast, whatever the
/// cell's length); the whole cell may take up to `CELL_DEADLINES` times
/// `deadline` (what the budget and the engine's overrun allow), since a
/// lossy link stretches a cell well past its budget while its agent is
/// alive and at work.
fn recv_report(
    ch: &mut ControlChannel,
    deadline: Duration,
    timeout: Duration,
) -> Result<CellReport> {
    let silence = 2 * WORKING_EVERY + timeout;
    let end = Instant::now() + deadline * CELL_DEADLINES;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            anyhow::bail!(
                "still measuring after {:.0} s (its cell's limit)",
                (deadline * CELL_DEADLINES).as_secs_f64()
            );
        }
        let _ = ch.stream().set_read_timeout(Some(silence.min(left)));
        let report: CellReport = ch.recv()?;
        if !report.working {
            return Ok(report);
        }
    }
}

/// How many times its usual deadline a cell whose agent says it is still
/// at work may take.
const CELL_DEADLINES: u32 = 4;

fn ping(members: &mut [Member], who: usize, timeout: Duration) -> bool {
    let Some(ch) = members[who].ch.as_mut() else {
        return false;
    };
    let _ = ch.stream().set_read_timeout(Some(timeout));
    ch.send(&Order::Ping).is_ok() && ch.recv::<CellReport>().is_ok()
}

fn lose(
    members: &mut [Member],
    nodes: &mut [MatrixNode],
    who: usize,
    round: usize,
    e: &anyhow::Error,
) {
    members[who].ch = None;
    if nodes[who].error.is_none() {
        nodes[who].error = Some(format!("lost in round {}: {e:#}", round + 1));
    }
}
