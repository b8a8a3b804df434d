//! Measuring under conditions: a sweep or a NAS plan with its background
//! loads around it and its conditions recorded, and `--loaded-vs-unloaded`,
//! which measures everything twice, without and with the load, alternating,
//! and prints both with the relative change.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::conditions::{under_load, Prepared};
use crate::cli::SweepArgs;
use crate::launch::mpi::run_sweep;
use crate::launch::RunContext;
use crate::load::{perturb, LoadSpec, NetworkTarget};
use crate::peer::client::resolve;
use crate::peer::protocol::SinkAsk;
use crate::peer::DEFAULT_PORT;
use crate::report::conditions::{npb_pair_table, sweep_pair_table, whole_table};
use crate::result::{write_result, NpbResult, SweepResult};
use crate::sweep::engine::{SweepOutcome, SweepSpec};
use crate::sweep::progress::Quiet;

/// Run one sweep under `loads`, its conditions recorded as `role`.
pub fn measure_sweep(
    ctx: &RunContext,
    spec: &SweepSpec,
    prepared: &Prepared,
    role: Option<&str>,
    loads: &[LoadSpec],
    quiet: bool,
) -> Result<SweepOutcome> {
    let label = match role {
        Some(r) => format!("{} {r}", spec.transport),
        None => spec.transport.clone(),
    };
    let mut bar = super::SizesBar::new(spec, quiet, &label);
    let ends: Vec<usize> = [spec.cpus.0, spec.cpus.1].into_iter().flatten().collect();
    let placement = crate::load::Placement::avoiding(&ends);
    let target = match spec.peer {
        Some(_) => network_target(spec, loads)?,
        // MPI ranks spread over lab nodes: across their links.
        None => super::npb_load::lab_network_target(ctx, 2, loads, spec.channel.timeout())?,
    };
    let (outcome, loaded) = under_load(
        loads,
        &placement,
        prepared.whole.as_ref(),
        target,
        |whole| {
            let spec = SweepSpec {
                whole: whole.cloned(),
                // `--load-peer`: the remote peer runs the same loads.
                peer_loads: if prepared.load_peer {
                    loads.to_vec()
                } else {
                    Vec::new()
                },
                loaded: !loads.is_empty(),
                ..spec.clone()
            };
            // With the soakers: what they change, measured first, under
            // the same loads (issue 30, item 2).
            let probe = whole
                .filter(|w| w.soak.is_some())
                .map(|_| soak_probe(ctx, &spec));
            let out = run_sweep(ctx, &spec, &mut bar);
            (probe, out)
        },
    )?;
    bar.finish();
    let (probe, outcome) = outcome;
    let mut outcome = outcome?;
    let perturbation = match probe {
        Some(Ok(p)) => {
            outcome.result.warnings.extend(p.warning());
            Some(p)
        }
        Some(Err(e)) => {
            outcome.result.warnings.push(format!(
                "--cost soak: the soakers' perturbation could not be measured: {e:#}"
            ));
            None
        }
        None => None,
    };
    // MPI ranks spread over nodes outside a lab: their load stays here.
    let note = crate::load::network_path_note(&loaded.records, ctx.spread() && spec.peer.is_none());
    outcome.result.warnings.extend(note);
    if prepared.any() || role.is_some() {
        let (mut c, warning) = prepared.conditions(role, loaded.records, loaded.whole.as_ref());
        c.soak_perturbation = perturbation;
        c.peer_loads = std::mem::take(&mut outcome.peer_loads);
        outcome.result.conditions = Some(c);
        outcome.result.warnings.extend(warning);
    }
    outcome.result.warnings.extend(loaded.warnings);
    Ok(outcome)
}

/// What the soakers of `spec` (its whole-cost setup has them) change:
/// [`perturb::PAIRS`] interleaved pairs of short sweeps of the same sizes,
/// without then with them, each a share of the budget; per size the
/// change of the median one-way time and of both ends' getrusage.
fn soak_probe(ctx: &RunContext, spec: &SweepSpec) -> Result<perturb::SoakPerturbation> {
    let budget =
        (spec.budget / (2 * perturb::PAIRS) as u32).max(std::time::Duration::from_millis(100));
    let probe = SweepSpec {
        budget,
        // Only the timed points: no byte check, tail pass or limits.
        integrity: false,
        integrity_all: false,
        tails: false,
        limits: false,
        ..spec.clone()
    };
    let plain = SweepSpec {
        whole: None,
        ..probe.clone()
    };
    let mut per: Vec<(u64, Vec<perturb::PairSample>)> =
        spec.sizes.iter().map(|&b| (b, Vec::new())).collect();
    let cpu = |p: &crate::result::Point| p.cpu_client.ns_per_byte + p.cpu_server.ns_per_byte;
    for _ in 0..perturb::PAIRS {
        let a = run_sweep(ctx, &plain, &mut Quiet)?;
        let b = run_sweep(ctx, &probe, &mut Quiet)?;
        if let Some(e) = a.error.or(b.error) {
            return Err(e);
        }
        for (bytes, v) in &mut per {
            let at = |r: &SweepResult| r.points.iter().find(|p| p.bytes == *bytes).cloned();
            if let (Some(x), Some(y)) = (at(&a.result), at(&b.result)) {
                v.push(perturb::PairSample {
                    plain_ns: x.median_ns,
                    soaked_ns: y.median_ns,
                    plain_cpu_ns_per_byte: cpu(&x),
                    soaked_cpu_ns_per_byte: cpu(&y),
                });
            }
        }
    }
    Ok(perturb::SoakPerturbation::from_samples(
        &per,
        budget.as_secs_f64() * 1e3,
    ))
}

/// Longest a sweep's network load is asked to run on the peer beyond its
/// budget (the confirmation pass and set-up come on top of the budget);
/// the stream is closed with the sweep anyway, this only bounds a sink
/// whose client hangs.
const SINK_SLACK: std::time::Duration = std::time::Duration::from_secs(120);

/// With `--peer` and a network load: a sink session on the peer's `wulf
/// serve`, so that the load's stream crosses the measured path (with
/// `--lab`, node1 to node2). None without a peer or without a network
/// load: the load runs on loopback.
fn network_target(spec: &SweepSpec, loads: &[LoadSpec]) -> Result<Option<NetworkTarget>> {
    let (Some(peer), Some(rate)) = (
        spec.peer.as_deref(),
        loads.iter().find_map(|l| match *l {
            LoadSpec::Network { rate_bits_per_s } => Some(rate_bits_per_s),
            _ => None,
        }),
    ) else {
        return Ok(None);
    };
    let addr = resolve(peer, DEFAULT_PORT, spec.channel.ipv6)?;
    let ask = SinkAsk {
        rate_bits_per_s: rate,
        seconds: (spec.budget * 4 + SINK_SLACK).as_secs(),
    };
    let sink =
        crate::peer::sink::open(addr, spec.peer_secret.as_ref(), ask, spec.channel.timeout())
            .map_err(|e| crate::error::peer(format!("--load network with --peer: {e:#}")))?;
    Ok(Some(NetworkTarget {
        stream: sink.stream,
        path: format!("to peer {}", sink.to),
        keep: Box::new(sink.control),
    }))
}

/// What the terminal shows of a result's conditions: the whole-cost table
/// and the loads.
pub fn conditions_text(r: &SweepResult) -> String {
    let mut s = whole_table(r).unwrap_or_default();
    if let Some(c) = &r.conditions {
        s.push_str(&crate::report::conditions::loads_text(c));
    }
    s
}

/// `path` with `-tag` before its extension.
pub fn tagged(path: &Path, tag: &str) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{tag}"),
    };
    path.with_file_name(name)
}

/// Interleaved pairs `--loaded-vs-unloaded` sweeps are measured in.
pub const PAIRS: usize = 3;

/// `wulf sweep --loaded-vs-unloaded`: [`PAIRS`] interleaved pairs of an
/// unloaded and a loaded sweep (ABABAB), each with a share of the budget,
/// then the table of both with the change's interval over the pairs.
/// Files: `NAME-unloaded.json` and `NAME-loaded.json` (the first pair),
/// `NAME-unloaded-2.json` ... for the others.
pub fn sweep(
    ctx: &RunContext,
    args: &SweepArgs,
    spec: &SweepSpec,
    prepared: &Prepared,
) -> Result<()> {
    if args.json.as_deref() == Some(Path::new("-")) {
        return Err(crate::error::usage(
            "--loaded-vs-unloaded writes several files: give --json a file name, not '-'",
        ));
    }
    let share = SweepSpec {
        budget: (spec.budget / PAIRS as u32).max(std::time::Duration::from_millis(100)),
        ..spec.clone()
    };
    let (mut unloaded, mut loaded) = (Vec::new(), Vec::new());
    for pair in 1..=PAIRS {
        for (role, loads) in [("unloaded", &[][..]), ("loaded", &prepared.loads[..])] {
            let outcome =
                measure_sweep(ctx, &share, prepared, Some(role), loads, args.measure.quiet)?;
            if let Some(path) = &args.json {
                let tag = match pair {
                    1 => role.to_string(),
                    n => format!("{role}-{n}"),
                };
                write_result(&tagged(path, &tag), &outcome.result)?;
            }
            if let Some(e) = outcome.error {
                return Err(e);
            }
            match role {
                "unloaded" => unloaded.push(outcome.result),
                _ => loaded.push(outcome.result),
            }
        }
    }
    let (u, l) = (&unloaded[0], &loaded[0]);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} {}: unloaded against loaded (median one-way time)",
        u.transport, u.mode
    )?;
    write!(out, "{}", sweep_pair_table(&unloaded, &loaded))?;
    for r in [u, l] {
        let text = conditions_text(r);
        if !text.is_empty() {
            writeln!(
                out,
                "\n{} (first pair):",
                r.conditions
                    .as_ref()
                    .and_then(|c| c.role.clone())
                    .unwrap_or_default()
            )?;
            write!(out, "{text}")?;
        }
    }
    Ok(())
}

/// Run an NAS plan with `loads` around it; its conditions recorded.
pub fn npb_plan(
    ctx: &RunContext,
    plan: &super::npb::NpbPlan,
    prepared: &Prepared,
    role: Option<&str>,
    loads: &[LoadSpec],
) -> Result<(NpbResult, Option<anyhow::Error>)> {
    let placement = super::conditions::npb_placement(&plan.nprocs);
    let most = plan.nprocs.iter().copied().max().unwrap_or(1);
    let target = super::npb_load::lab_network_target(ctx, most, loads, plan.timeout)?;
    let (out, loaded) = under_load(
        loads,
        &placement,
        prepared.whole.as_ref(),
        target,
        |whole| {
            let plan = super::npb::NpbPlan {
                whole: whole.cloned(),
                ..plan.clone()
            };
            super::npb::run_plan(ctx, &plan)
        },
    )?;
    let (mut result, stop) = out?;
    // Across nodes a network load runs on loopback unless it could cross
    // the lab's links (then its path says so and no note is added).
    let spans = ctx.spread() || plan.nodes.is_some();
    result
        .warnings
        .extend(crate::load::network_path_note(&loaded.records, spans));
    if prepared.any() || role.is_some() {
        let (c, warning) = prepared.conditions(role, loaded.records, loaded.whole.as_ref());
        result.conditions = Some(c);
        result.warnings.extend(warning);
    }
    result.warnings.extend(loaded.warnings);
    Ok((result, stop))
}

/// `wulf npb --loaded-vs-unloaded`: for each kernel, transport and process
/// count, an unloaded then a loaded run of all repetitions, then seed
/// 001's kernel-by-transport tables of both and the relative changes.
pub fn npb(
    ctx: &RunContext,
    plans: Vec<super::npb::NpbPlan>,
    prepared: &Prepared,
    json: Option<&Path>,
) -> Result<()> {
    if json == Some(Path::new("-")) {
        return Err(crate::error::usage(
            "--loaded-vs-unloaded writes several files: give --json a file name, not '-'",
        ));
    }
    if let Some(p) = plans.first().filter(|p| p.repetitions < PAIRS) {
        eprintln!(
            "wulf: --loaded-vs-unloaded: {PAIRS} interleaved pairs per combination (--repetitions {} \
             is too few for an interval on the change)",
            p.repetitions
        );
    }
    let (mut unloaded, mut loaded): (Vec<NpbResult>, Vec<NpbResult>) = (Vec::new(), Vec::new());
    for plan in plans {
        let mut pair: [Option<NpbResult>; 2] = [None, None];
        for via in &plan.via {
            for &np in &plan.nprocs {
                let one = super::npb::NpbPlan {
                    via: vec![via.clone()],
                    nprocs: vec![np],
                    ..plan.clone()
                };
                // Repetitions interleaved (unloaded, loaded, unloaded, ...),
                // so that a drift of the machine hits both alike and the
                // pairs give the change an interval.
                let single = super::npb::NpbPlan {
                    repetitions: 1,
                    ..one.clone()
                };
                for rep in 0..npb_pairs(one.repetitions) {
                    for (i, (role, loads)) in
                        [("unloaded", &[][..]), ("loaded", &prepared.loads[..])]
                            .into_iter()
                            .enumerate()
                    {
                        let (r, stop) = npb_plan(ctx, &single, prepared, Some(role), loads)?;
                        match &mut pair[i] {
                            None => pair[i] = Some(r),
                            Some(acc) => {
                                merge_runs(&mut acc.runs, r.runs, rep > 0);
                                acc.wall_s += r.wall_s;
                                if let Some(mut c) = r.conditions {
                                    // The loads of every repetition, not the last's.
                                    if let Some(old) = acc.conditions.take() {
                                        c.loads = crate::load::merge_records(old.loads, c.loads);
                                    }
                                    acc.conditions = Some(c);
                                }
                            }
                        }
                        if let Some(e) = stop {
                            return Err(e);
                        }
                    }
                }
            }
        }
        let [Some(mut u), Some(mut l)] = pair else {
            continue;
        };
        // Each half holds one run per pair, whatever `single` said.
        u.repetitions = npb_pairs(plan.repetitions);
        l.repetitions = u.repetitions;
        crate::result::fill_speedups(&mut u.runs);
        crate::result::fill_speedups(&mut l.runs);
        if let Some(path) = json {
            let kpath = tagged(path, &u.kernel);
            crate::result::write_json(&tagged(&kpath, "unloaded"), &u)?;
            crate::result::write_json(&tagged(&kpath, "loaded"), &l)?;
        }
        unloaded.push(u);
        loaded.push(l);
    }
    let mut out = std::io::stdout().lock();
    write!(out, "{}", npb_pair_table(&unloaded, &loaded))?;
    if let Some(c) = loaded.last().and_then(|r| r.conditions.as_ref()) {
        write!(out, "{}", crate::report::conditions::loads_text(c))?;
    }
    Ok(())
}

/// Interleaved pairs of NAS runs for `--repetitions N`: N, at least
/// [`PAIRS`] (fewer give no interval worth a verdict).
pub fn npb_pairs(repetitions: usize) -> usize {
    repetitions.max(PAIRS)
}

/// Add `more` to `runs`: with `same_combination`, another repetition of
/// the last run (its outcomes appended, the best and median derived again,
/// the whole CPU summed); otherwise new combinations.
fn merge_runs(
    runs: &mut Vec<crate::result::NpbRun>,
    more: Vec<crate::result::NpbRun>,
    same_combination: bool,
) {
    for m in more {
        let last = runs
            .iter_mut()
            .rev()
            .find(|r| r.via == m.via && r.nprocs == m.nprocs);
        match last {
            Some(r) if same_combination => {
                let mut outcomes = std::mem::take(&mut r.outcomes);
                outcomes.extend(m.outcomes);
                let error = r.error.take().or(m.error);
                let mut merged = crate::result::NpbRun::new(&r.via, r.nprocs, Ok(outcomes));
                merged.error = error;
                merged.failed_checks = if r.failed_checks.is_empty() {
                    m.failed_checks
                } else {
                    std::mem::take(&mut r.failed_checks)
                };
                merged.wait = r.wait;
                merged.mpi = r.mpi.take();
                merged.placement = r.placement.take();
                merged.cpu_whole = match (r.cpu_whole.take(), m.cpu_whole) {
                    (Some(mut a), Some(b)) => {
                        // Shares over the same CPUs: weighted by wall time.
                        let wall = (a.wall_ns + b.wall_ns).max(1) as f64;
                        a.machine_share = (a.machine_share * a.wall_ns as f64
                            + b.machine_share * b.wall_ns as f64)
                            / wall;
                        a.cpu_ns += b.cpu_ns;
                        a.wall_ns += b.wall_ns;
                        a.busy_ticks = a.busy_ticks.zip(b.busy_ticks).map(|(x, y)| x + y);
                        a.background_cpu_ns = a
                            .background_cpu_ns
                            .zip(b.background_cpu_ns)
                            .map(|(x, y)| x + y);
                        a.kernel_cpu_ns = a.kernel_cpu_ns.zip(b.kernel_cpu_ns).map(|(x, y)| x + y);
                        Some(a)
                    }
                    (a, b) => a.or(b),
                };
                *r = merged;
            }
            _ => runs.push(m),
        }
    }
}
