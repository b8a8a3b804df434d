//! Checks of a decoded sweep result for values no measurement produces.
//!
//! The schema says what types fields have; these checks say what values
//! they may hold, so that a file edited by hand, damaged, or written by
//! something else is refused with the field named instead of drawing
//! nonsense (a negative latency, an infinite throughput) or tripping the
//! analysis. Bounds are generous but physical: a time per operation from
//! 0.01 ns (a 100 GHz clock tick) to 10^15 ns (11 days), sizes up to 2^50
//! bytes, rates below 10^18 bit/s, CPU time per byte or message below the
//! longest time. Every figure the report derives from them (a throughput
//! is bytes over a time) is then finite, so no chart or table meets an
//! infinity (a 7 KB file with `median_ns` 1e-300 once made `wulf report`
//! allocate until the OOM killer fired).

use super::npb::NpbResult;
use super::{Point, SweepResult};

/// Shortest time per operation accepted, ns.
const MIN_TIME_NS: f64 = 0.01;
/// Longest time per operation accepted, ns.
const MAX_TIME_NS: f64 = 1e15;
/// Largest ratio accepted (a multiple of a floor, a fraction of a limit,
/// a speed-up).
const MAX_RATIO: f64 = 1e12;
/// Longest run accepted, s (30 years).
const MAX_WALL_S: f64 = 1e9;
/// Highest NAS rate accepted, Mop/s (10^21 operations a second).
const MAX_MOP_S: f64 = 1e15;
/// Largest message size accepted, bytes.
const MAX_BYTES: u64 = 1 << 50;
/// Highest throughput accepted, bits/s (far above any memory bus).
const MAX_BITS_PER_S: f64 = 1e18;
/// Most operations in one trial (a trial of 10 s at 0.01 ns each is 10^12).
const MAX_REPEATS: u64 = 1 << 40;
/// Most trials a point records (the sweep engine keeps at most 5,000):
/// `wulf compare` resamples every trial two thousand times.
const MAX_TRIALS: u64 = 1 << 16;
/// Most trials a sweep result holds in all (4,096 points of 1,024 trials;
/// a default sweep keeps at most 124 x 5,000): `wulf compare` resamples
/// every trial, so this bounds its work with the points'.
pub const MAX_TRIALS_TOTAL: usize = 1 << 22;
/// Most points a sweep result holds: every size schedule wulf makes has
/// far fewer (1 B to 2^50 B is about 300 sizes), and the analysis, the
/// report and `wulf compare` are sized for it (`--sizes` refuses more).
pub const MAX_POINTS: usize = crate::message::schedule::MAX_SIZES;
/// Most warnings a result holds (a sweep writes a handful).
pub const MAX_WARNINGS: usize = 1000;

/// Check a sweep result; the error names the first offending field.
pub fn sweep(r: &SweepResult) -> Result<(), String> {
    if r.points.len() > MAX_POINTS {
        return Err(format!(
            "points has {} entries, more than a result may hold ({MAX_POINTS} at most)",
            r.points.len()
        ));
    }
    warnings(&r.warnings)?;
    let trials: usize = r.points.iter().map(|p| p.trials_ns.len()).sum();
    if trials > MAX_TRIALS_TOTAL {
        return Err(format!(
            "points hold {trials} trials in all, more than a result may hold ({MAX_TRIALS_TOTAL} at most)"
        ));
    }
    // 0 when the clock's cost was not measured; a second per read is
    // no clock (-1e308 once passed).
    finite_non_negative(r.timer_overhead_ns, 1e9).map_err(|e| format!("timer_overhead_ns {e}"))?;
    let mut previous: Option<u64> = None;
    for (i, p) in r.points.iter().enumerate() {
        point(p).map_err(|e| format!("points[{i}].{e}"))?;
        trial_count(p).map_err(|e| format!("points[{i}].{e}"))?;
        if let Some(before) = previous {
            if p.bytes <= before {
                return Err(format!(
                    "points[{i}].bytes ({}) does not follow the size before it ({before}): sizes must ascend",
                    p.bytes
                ));
            }
        }
        previous = Some(p.bytes);
    }
    let s = &r.summary;
    for (name, v, max) in [
        ("latency_ns", s.latency_ns, MAX_TIME_NS),
        ("peak_bits_per_s", s.peak_bits_per_s, MAX_BITS_PER_S),
        (
            "latency_floor_multiple",
            s.latency_floor_multiple,
            MAX_RATIO,
        ),
        ("peak_memcpy_fraction", s.peak_memcpy_fraction, MAX_RATIO),
        ("peak_c2c_fraction", s.peak_c2c_fraction, MAX_RATIO),
    ] {
        if let Some(v) = v {
            finite_non_negative(v, max).map_err(|e| format!("summary.{name} {e}"))?;
        }
    }
    finite_non_negative(r.wall_s, MAX_WALL_S).map_err(|e| format!("wall_s {e}"))?;
    Ok(())
}

/// At most [`MAX_WARNINGS`] warnings (ten million empty ones once made
/// the HTML report take 2.27 GB); their length is bounded with every
/// other string's when the text is read (`super::bounds`).
pub fn warnings(w: &[String]) -> Result<(), String> {
    if w.len() > MAX_WARNINGS {
        return Err(format!(
            "warnings has {} entries, more than a result may hold ({MAX_WARNINGS} at most)",
            w.len()
        ));
    }
    Ok(())
}

/// A sweep point's trials: `trials` counts `trials_ns` (2^40 trials
/// claimed over 6 samples once passed). Not for a matrix's cells, whose
/// trials a streaming read drops.
fn trial_count(p: &Point) -> Result<(), String> {
    if p.trials != p.trials_ns.len() as u64 {
        return Err(format!(
            "trials is {}, but trials_ns holds {} trials",
            p.trials,
            p.trials_ns.len()
        ));
    }
    Ok(())
}

fn point(p: &Point) -> Result<(), String> {
    if p.bytes == 0 || p.bytes > MAX_BYTES {
        return Err(format!("bytes is {}, outside 1 to 2^50", p.bytes));
    }
    for (name, v, max) in [
        ("repeats", p.repeats, MAX_REPEATS),
        ("trials", p.trials, MAX_TRIALS),
        ("warmup_trials", p.warmup_trials, MAX_TRIALS),
    ] {
        if v > max {
            return Err(format!(
                "{name} is {v}, beyond any measurement ({max} at most)"
            ));
        }
    }
    for (name, v) in [
        ("min_ns", p.min_ns),
        ("median_ns", p.median_ns),
        ("mean_ns", p.mean_ns),
        ("p90_ns", p.p90_ns),
        ("p99_ns", p.p99_ns),
        ("ci_low_ns", p.ci_low_ns),
        ("ci_high_ns", p.ci_high_ns),
    ] {
        time(v).map_err(|e| format!("{name} {e}"))?;
    }
    finite_non_negative(p.stddev_ns, MAX_TIME_NS).map_err(|e| format!("stddev_ns {e}"))?;
    for (j, &t) in p.trials_ns.iter().enumerate() {
        time(t).map_err(|e| format!("trials_ns[{j}] {e}"))?;
    }
    finite_non_negative(p.bits_per_s, MAX_BITS_PER_S).map_err(|e| format!("bits_per_s {e}"))?;
    if p.ci_low_ns > p.ci_high_ns {
        return Err(format!(
            "ci_low_ns ({}) is above ci_high_ns ({})",
            p.ci_low_ns, p.ci_high_ns
        ));
    }
    for (name, v) in [
        ("cpu_client.ns_per_byte", p.cpu_client.ns_per_byte),
        ("cpu_client.ns_per_message", p.cpu_client.ns_per_message),
        ("cpu_server.ns_per_byte", p.cpu_server.ns_per_byte),
        ("cpu_server.ns_per_message", p.cpu_server.ns_per_message),
    ] {
        finite_non_negative(v, MAX_TIME_NS).map_err(|e| format!("{name} {e}"))?;
    }
    if let Some(l) = &p.limits {
        limits(l).map_err(|e| format!("limits.{e}"))?;
    }
    if let Some(w) = &p.cpu_whole {
        whole(w).map_err(|e| format!("cpu_whole.{e}"))?;
    }
    clean_blocks(p)?;
    if let Some(t) = &p.tails {
        for (name, v) in [
            ("tails.p50_ns", t.p50_ns),
            ("tails.p99_ns", t.p99_ns),
            ("tails.p999_ns", t.p999_ns),
            ("tails.max_ns", t.max_ns),
        ] {
            finite_non_negative(v, MAX_TIME_NS).map_err(|e| format!("{name} {e}"))?;
        }
    }
    Ok(())
}

/// A point's clean blocks: the share a fraction, the disturbed trials
/// indices into `trials_ns`, ascending, each once (a streaming matrix read
/// drops the trials and keeps the indices: those are checked against
/// `trials`).
fn clean_blocks(p: &Point) -> Result<(), String> {
    if let Some(s) = p.clean_share {
        if !(0.0..=1.0).contains(&s) {
            return Err(format!("clean_share is {s}, outside 0 to 1"));
        }
    }
    let mut last: Option<u32> = None;
    for &i in &p.disturbed_trials {
        if u64::from(i) >= p.trials || last.is_some_and(|l| i <= l) {
            return Err(format!(
                "disturbed_trials holds {i}: not an ascending index of the point's {} trials",
                p.trials
            ));
        }
        last = Some(i);
    }
    Ok(())
}

/// A point's physical limits: rates positive (a memcpy rate of 0 makes
/// every fraction of it infinite), the floor a time like any other
/// (`floor_ns` 1e-300 once passed).
fn limits(l: &super::Limits) -> Result<(), String> {
    for (name, v) in [
        ("memcpy_bits_per_s", l.memcpy_bits_per_s),
        ("c2c_bits_per_s", l.c2c_bits_per_s),
        ("c2c_two_copy_bits_per_s", l.c2c_two_copy_bits_per_s),
    ] {
        if let Some(v) = v {
            finite_non_negative(v, MAX_BITS_PER_S).map_err(|e| format!("{name} {e}"))?;
            if v == 0.0 {
                return Err(format!("{name} is 0: no machine moves nothing"));
            }
        }
    }
    if let Some(v) = l.floor_ns {
        time(v).map_err(|e| format!("floor_ns {e}"))?;
    }
    Ok(())
}

/// Check an NPB result's figures (the outcomes' own checks are the
/// verification's); the error names the first offending field.
pub fn npb(r: &NpbResult) -> Result<(), String> {
    finite_non_negative(r.wall_s, MAX_WALL_S).map_err(|e| format!("wall_s {e}"))?;
    for (i, run) in r.runs.iter().enumerate() {
        if run.nprocs == 0 {
            return Err(format!("runs[{i}].nprocs is 0"));
        }
        for (name, v, max) in [
            ("best_mop_s", run.best_mop_s, MAX_MOP_S),
            ("median_mop_s", run.median_mop_s, MAX_MOP_S),
            (
                "best_mop_s_per_process",
                run.best_mop_s_per_process,
                MAX_MOP_S,
            ),
            ("speedup", run.speedup, MAX_RATIO),
            ("parallel_efficiency", run.parallel_efficiency, MAX_RATIO),
        ] {
            if let Some(v) = v {
                finite_non_negative(v, max).map_err(|e| format!("runs[{i}].{name} {e}"))?;
            }
        }
        if let Some(w) = &run.cpu_whole {
            whole(w).map_err(|e| format!("runs[{i}].cpu_whole.{e}"))?;
        }
    }
    Ok(())
}

/// A whole CPU cost's figures: CPU times and per-byte figures as times, a
/// machine share within 0..=1, ratios bounded (a crafted 1.7e308 once made
/// a chart's axis loop forever).
fn whole(w: &crate::load::whole::WholeCpu) -> Result<(), String> {
    let optional = [
        ("ns_per_byte", w.ns_per_byte, MAX_TIME_NS),
        ("ns_per_message", w.ns_per_message, MAX_TIME_NS),
        (
            "getrusage_ns_per_byte",
            w.getrusage_ns_per_byte,
            MAX_TIME_NS,
        ),
        ("whole_over_getrusage", w.whole_over_getrusage, MAX_RATIO),
        ("background_cpu_ns", w.background_cpu_ns, MAX_TIME_NS),
        ("kernel_cpu_ns", w.kernel_cpu_ns, MAX_TIME_NS),
    ];
    for (name, v, max) in [
        ("cpu_ns", Some(w.cpu_ns), MAX_TIME_NS),
        ("machine_share", Some(w.machine_share), 1.0),
    ]
    .into_iter()
    .chain(optional)
    {
        if let Some(v) = v {
            finite_non_negative(v, max).map_err(|e| format!("{name} {e}"))?;
        }
    }
    Ok(())
}

/// A time per operation: finite, from [`MIN_TIME_NS`] to [`MAX_TIME_NS`].
fn time(v: f64) -> Result<(), String> {
    finite_non_negative(v, MAX_TIME_NS)?;
    if v < MIN_TIME_NS {
        return Err(format!(
            "is {v:e} ns, shorter than any measurement (at least {MIN_TIME_NS} ns)"
        ));
    }
    Ok(())
}

fn finite_non_negative(v: f64, max: f64) -> Result<(), String> {
    if !v.is_finite() {
        Err(format!("is {v}, not a finite number"))
    } else if v < 0.0 {
        Err(format!("is negative ({v})"))
    } else if v > max {
        Err(format!("is {v:e}, beyond any measurement"))
    } else {
        Ok(())
    }
}

/// Most rounds (or steps) a matrix can have: a tournament of the largest
/// cluster wulf expects (2^16 nodes) has fewer.
const MAX_ROUNDS: usize = 1 << 16;

/// Check a matrix result: every node index (cells, analysis) names a node
/// of `nodes`, rounds are bounded, and every cell's figures are physical
/// (three crafted indices once made `wulf report` panic, and an agent's
/// negative or 1e308 cells were saved as they came).
pub fn matrix(r: &crate::result::matrix::MatrixResult) -> Result<(), String> {
    let n = r.nodes.len();
    let node = |what: String, i: usize| -> Result<(), String> {
        if i < n {
            Ok(())
        } else {
            Err(format!("{what} is node {i}, but the file lists {n} nodes"))
        }
    };
    if r.rounds > MAX_ROUNDS {
        return Err(format!("rounds is {}, above {MAX_ROUNDS}", r.rounds));
    }
    for (name, v) in [
        ("wall_s", r.wall_s),
        ("rounds_s", r.rounds_s),
        ("coordinator_cpu_s", r.coordinator_cpu_s),
    ] {
        finite_non_negative(v, MAX_WALL_S).map_err(|e| format!("{name} {e}"))?;
    }
    for (i, c) in r.cells.iter().enumerate() {
        node(format!("cells[{i}].from"), c.from)?;
        node(format!("cells[{i}].to"), c.to)?;
        if c.from == c.to {
            return Err(format!(
                "cells[{i}] measures node {} against itself: a cell joins two nodes",
                c.from
            ));
        }
        if c.round > MAX_ROUNDS {
            return Err(format!(
                "cells[{i}].round is {}, above {MAX_ROUNDS}",
                c.round
            ));
        }
        cell(c).map_err(|e| format!("cells[{i}].{e}"))?;
    }
    let a = &r.analysis;
    for (i, o) in a.outlier_cells.iter().enumerate() {
        node(format!("analysis.outlier_cells[{i}].from"), o.from)?;
        node(format!("analysis.outlier_cells[{i}].to"), o.to)?;
    }
    for (i, s) in a.slow_nodes.iter().enumerate() {
        node(format!("analysis.slow_nodes[{i}].node"), s.node)?;
    }
    for (i, p) in a.asymmetric_pairs.iter().enumerate() {
        node(format!("analysis.asymmetric_pairs[{i}].a"), p.a)?;
        node(format!("analysis.asymmetric_pairs[{i}].b"), p.b)?;
    }
    for (i, d) in a.fingerprint_differences.iter().enumerate() {
        for (j, v) in d.values.iter().enumerate() {
            for &k in &v.nodes {
                node(
                    format!("analysis.fingerprint_differences[{i}].values[{j}].nodes"),
                    k,
                )?;
            }
        }
    }
    for (i, s) in a.node_summary.iter().enumerate() {
        node(format!("analysis.node_summary[{i}].node"), s.node)?;
    }
    for (i, c) in a.contention.iter().enumerate() {
        node(format!("analysis.contention[{i}].node"), c.node)?;
    }
    for (i, l) in a.lossy_links.iter().enumerate() {
        node(format!("analysis.lossy_links[{i}].a"), l.a)?;
        node(format!("analysis.lossy_links[{i}].b"), l.b)?;
    }
    warnings(&r.warnings)?;
    matrix_pairs(a)?;
    matrix_figures(a).map_err(|e| format!("analysis.{e}"))
}

/// The analysis's pairs join two nodes (a self-cell once passed).
fn matrix_pairs(a: &crate::result::matrix::MatrixAnalysis) -> Result<(), String> {
    let pairs = a
        .outlier_cells
        .iter()
        .map(|o| ("outlier_cells", o.from, o.to))
        .chain(
            a.asymmetric_pairs
                .iter()
                .map(|p| ("asymmetric_pairs", p.a, p.b)),
        )
        .chain(a.lossy_links.iter().map(|l| ("lossy_links", l.a, l.b)));
    let mut index = std::collections::HashMap::new();
    for (list, x, y) in pairs {
        let i = index.entry(list).or_insert(0usize);
        if x == y {
            return Err(format!(
                "analysis.{list}[{i}] joins node {x} with itself: a pair is two nodes"
            ));
        }
        *i += 1;
    }
    Ok(())
}

/// The analysis's figures: finite and within the bounds of a
/// measurement (medians of -1e308 once passed); scores finite either way.
fn matrix_figures(a: &crate::result::matrix::MatrixAnalysis) -> Result<(), String> {
    let mut figures: Vec<(String, f64)> = Vec::new();
    let mut add = |name: String, v: Option<f64>| figures.extend(v.map(|v| (name, v)));
    for (name, s) in [("latency", &a.latency), ("bandwidth", &a.bandwidth)] {
        if let Some(s) = s {
            add(format!("{name}.median"), Some(s.median));
            add(format!("{name}.mad"), Some(s.mad));
        }
    }
    for (i, o) in a.outlier_cells.iter().enumerate() {
        add(format!("outlier_cells[{i}].value"), Some(o.value));
        add(format!("outlier_cells[{i}].median"), Some(o.median));
    }
    for (i, s) in a.slow_nodes.iter().enumerate() {
        add(format!("slow_nodes[{i}].value"), Some(s.value));
        add(format!("slow_nodes[{i}].median"), Some(s.median));
        add(
            format!("slow_nodes[{i}].share_outlying"),
            Some(s.share_outlying),
        );
    }
    for (i, p) in a.asymmetric_pairs.iter().enumerate() {
        add(format!("asymmetric_pairs[{i}].a_to_b"), Some(p.a_to_b));
        add(format!("asymmetric_pairs[{i}].b_to_a"), Some(p.b_to_a));
        add(format!("asymmetric_pairs[{i}].ratio"), Some(p.ratio));
    }
    for (i, n) in a.node_summary.iter().enumerate() {
        add(format!("node_summary[{i}].latency_ns"), n.latency_ns);
        add(format!("node_summary[{i}].bits_per_s"), n.bits_per_s);
        add(
            format!("node_summary[{i}].sent_bits_per_s"),
            n.sent_bits_per_s,
        );
        add(
            format!("node_summary[{i}].received_bits_per_s"),
            n.received_bits_per_s,
        );
    }
    for (i, s) in a.steps.iter().enumerate() {
        add(
            format!("steps[{i}].aggregate_bits_per_s"),
            Some(s.aggregate_bits_per_s),
        );
        add(format!("steps[{i}].min_bits_per_s"), Some(s.min_bits_per_s));
        add(
            format!("steps[{i}].median_bits_per_s"),
            Some(s.median_bits_per_s),
        );
        add(
            format!("steps[{i}].pingpong_rate_per_s"),
            Some(s.pingpong_rate_per_s),
        );
        add(
            format!("steps[{i}].rate_messages_per_s"),
            s.rate_messages_per_s,
        );
        add(format!("steps[{i}].rate_bits_per_s"), s.rate_bits_per_s);
        add(
            format!("steps[{i}].alone_median_bits_per_s"),
            s.alone_median_bits_per_s,
        );
    }
    for (i, c) in a.contention.iter().enumerate() {
        add(
            format!("contention[{i}].loaded_bits_per_s"),
            Some(c.loaded_bits_per_s),
        );
        add(
            format!("contention[{i}].alone_bits_per_s"),
            Some(c.alone_bits_per_s),
        );
        add(format!("contention[{i}].kept"), Some(c.kept));
    }
    for (i, l) in a.lossy_links.iter().enumerate() {
        add(
            format!("lossy_links[{i}].retrans_share"),
            Some(l.retrans_share),
        );
        add(
            format!("lossy_links[{i}].others_share"),
            Some(l.others_share),
        );
    }
    if let Some(h) = &a.host_bound {
        add("host_bound.link_share".into(), Some(h.link_share));
        add("host_bound.cpu_busy_share".into(), Some(h.cpu_busy_share));
        add("host_bound.alone_link_share".into(), h.alone_link_share);
    }
    // Times and rates share one bound: the larger of the two.
    for (name, v) in figures {
        finite_non_negative(v, MAX_BITS_PER_S).map_err(|e| format!("{name} {e}"))?;
    }
    for (i, o) in a.outlier_cells.iter().enumerate() {
        if !o.score.is_finite() {
            return Err(format!(
                "outlier_cells[{i}].score is {}, not a finite number",
                o.score
            ));
        }
    }
    Ok(())
}

/// A matrix cell's figures: each point physical, the time bounded.
pub fn cell(c: &crate::result::matrix::MatrixCell) -> Result<(), String> {
    for (name, p) in [
        ("latency", &c.latency),
        ("bandwidth", &c.bandwidth),
        ("rate", &c.rate),
        ("alone_bandwidth", &c.alone_bandwidth),
    ] {
        if let Some(p) = p {
            point(p).map_err(|e| format!("{name}.{e}"))?;
        }
    }
    finite_non_negative(c.measure_s, MAX_WALL_S).map_err(|e| format!("measure_s {e}"))
}
