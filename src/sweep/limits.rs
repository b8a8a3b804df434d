//! The physical limits a sweep between two processes on one machine is
//! measured against: memcpy bandwidth at each message size, the cache-line
//! floor between the two CPUs the ends run on, and the core-to-core copy
//! limits between those CPUs at each size (single copy and the serial
//! two-copy hand-off).
//!
//! They come from the in-process baselines (`memcpy`, `cacheline`, `c2c`,
//! `c2c-2copy`), through the ordinary repetition policy. Within one wulf
//! process they are kept in a table: `wulf run` measures the baselines
//! first, and their points serve every later transport of the run; a lone
//! `wulf sweep` measures what is missing before its first point, with a
//! small share of its budget ([`MEMCPY_BUDGET_SHARE`],
//! [`FLOOR_BUDGET_SHARE`], [`C2C_BUDGET_SHARE`]); an MPI job's rank 0
//! starts from the launching process's table ([`super::limits_carry`]).
//! Limits are keyed by
//! everything that changes them: buffer mode (`--nocache`), `--offset`, and
//! the CPUs. A size the table lacks between two it holds at most
//! [`BRACKET_RATIO`] apart (NetPIPE's perturbed sizes, 3 bytes either side
//! of the baselines' 2^k and 1.5 x 2^k) takes the log-log interpolation of
//! the two: limit curves are smooth there, and measuring each perturbed
//! size again took 25-35% of every transport's budget in `wulf run`, which
//! left its points too little time to reach their precision (issue 44).
//! The core-to-core limits of a `--nocache` sweep are the cold
//! ones (`c2c --nocache`: messages copied out of and into buffers rotated
//! past the last-level cache), so its "of c2c" efficiency is against the
//! cold limit; a warm sweep's is against the warm one.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use anyhow::Result;

use super::floor::{floor_wait, measure_floor};
use super::in_process::BaselineRunner;
use super::runner::plan_for;
use super::spec::SweepSpec;
use crate::measure::policy::measure_point;
use crate::result::{Limits as PointLimits, Mode, Point};
use crate::transport::baseline::{Baseline, BaselineSetup, LimitKind};
use crate::transport::c2c::{C2cBench, Copies};
use crate::transport::cacheline::FLOOR_BYTES;
use crate::transport::memcpy::MemcpyBench;
use crate::transport::WaitMode;

/// Share of a sweep's budget spent measuring missing memcpy limits.
pub const MEMCPY_BUDGET_SHARE: f64 = 0.08;
/// Share of a sweep's budget spent measuring a missing floor.
pub const FLOOR_BUDGET_SHARE: f64 = 0.02;
/// Share of a sweep's budget spent measuring each missing core-to-core
/// limit (single copy, two-copy hand-off).
pub const C2C_BUDGET_SHARE: f64 = 0.05;
/// Widest ratio of the two measured sizes a missing size's limit is
/// interpolated between (adjacent baseline sizes are 1.33-1.5 apart).
pub const BRACKET_RATIO: u64 = 2;
/// Bounds of the floor's budget.
pub(super) const FLOOR_BUDGET_NS: (u64, u64) = (20_000_000, 200_000_000);

/// What memcpy limits depend on: `--nocache`, `--offset`, the copying CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct CopyKey {
    pub(super) nocache: bool,
    pub(super) offset_bytes: u64,
    pub(super) cpu: Option<usize>,
}

/// What the floor depends on: the two CPUs.
pub(super) type FloorKey = (Option<usize>, Option<usize>);

/// What the core-to-core limits depend on: `--nocache` (cold or warm),
/// `--offset` and the two CPUs.
pub(super) type C2cKey = (bool, u64, FloorKey);

/// The limits this process knows (see the module notes), by key.
#[derive(Default)]
pub(super) struct Table {
    pub(super) memcpy: HashMap<(CopyKey, u64), f64>,
    pub(super) floor: HashMap<FloorKey, f64>,
    pub(super) c2c: HashMap<(C2cKey, u64), f64>,
    pub(super) c2c_two_copy: HashMap<(C2cKey, u64), f64>,
    /// Sizes a baseline or an earlier sweep already tried to measure,
    /// measured or dropped at its budget: not tried again. `wulf run`'s
    /// transports each spent 25% of their budgets (their limits' deadline)
    /// re-measuring the core-to-core sizes the baselines' budget had not
    /// reached, and reached them no better (issue 44).
    pub(super) tried_memcpy: HashSet<(CopyKey, u64)>,
    pub(super) tried_c2c: HashSet<(LimitKind, C2cKey, u64)>,
}

impl Table {
    /// The per-size table of a size-keyed limit (None for the floor).
    fn curve(&mut self, kind: LimitKind) -> Option<&mut HashMap<(C2cKey, u64), f64>> {
        match kind {
            LimitKind::C2cSingleCopy => Some(&mut self.c2c),
            LimitKind::C2cTwoCopy => Some(&mut self.c2c_two_copy),
            LimitKind::MemcpyBandwidth | LimitKind::CachelineFloor => None,
        }
    }
}

/// The value of `curve` for `key` at `bytes`: measured there, or
/// interpolated in log-log between the nearest measured sizes either side
/// when they are at most [`BRACKET_RATIO`] apart.
fn value_at<K: Eq + std::hash::Hash + Copy>(
    curve: &HashMap<(K, u64), f64>,
    key: K,
    bytes: u64,
) -> Option<f64> {
    if let Some(v) = curve.get(&(key, bytes)) {
        return Some(*v);
    }
    // The nearest measured (size, value) below and above `bytes`.
    let mut below: Option<(u64, f64)> = None;
    let mut above: Option<(u64, f64)> = None;
    for (&(k, b), &v) in curve {
        if k != key {
            continue;
        }
        if b < bytes && below.is_none_or(|(lo, _)| b > lo) {
            below = Some((b, v));
        }
        if b > bytes && above.is_none_or(|(hi, _)| b < hi) {
            above = Some((b, v));
        }
    }
    let ((lo, v_lo), (hi, v_hi)) = (below?, above?);
    if hi > lo.saturating_mul(BRACKET_RATIO) || v_lo <= 0.0 || v_hi <= 0.0 {
        return None;
    }
    let t = ((bytes as f64).ln() - (lo as f64).ln()) / ((hi as f64).ln() - (lo as f64).ln());
    Some((v_lo.ln() + t * (v_hi.ln() - v_lo.ln())).exp())
}

/// This process's table of limits.
pub(super) fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// The limits of one sweep, by message size.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// memcpy bandwidth by size, bits/s.
    pub memcpy_bits_per_s: HashMap<u64, f64>,
    /// The cache-line floor, ns.
    pub floor_ns: Option<f64>,
    /// Core-to-core single-copy rate by size, bits/s.
    pub c2c_bits_per_s: HashMap<u64, f64>,
    /// Core-to-core serial two-copy hand-off rate by size, bits/s.
    pub c2c_two_copy_bits_per_s: HashMap<u64, f64>,
    /// The floor was measured for this sweep (none was known): it is
    /// measured again after the sweep, and the lower kept. A floor from
    /// the table (`wulf run`'s cacheline baseline, or an earlier sweep's)
    /// is not: its own sweep took the fastest of many blocks.
    pub floor_measured_here: bool,
}

impl Limits {
    /// The limits at `bytes`, if any is known.
    pub fn at(&self, bytes: u64) -> Option<PointLimits> {
        let l = PointLimits {
            memcpy_bits_per_s: self.memcpy_bits_per_s.get(&bytes).copied(),
            floor_ns: self.floor_ns,
            c2c_bits_per_s: self.c2c_bits_per_s.get(&bytes).copied(),
            c2c_two_copy_bits_per_s: self.c2c_two_copy_bits_per_s.get(&bytes).copied(),
        };
        (l != PointLimits::default()).then_some(l)
    }
}

/// Smallest size checked for a slow mode: below it the hand-off, not the
/// copies, sets the time, and the two-copy limit says little.
const SLOW_MODE_MIN_BYTES: u64 = 64 << 10;
/// A point whose rate (per direction) is this many times below the serial
/// two-copy hand-off between the same CPUs is in a slow mode: no transport
/// that moves a message by copying needs four unpipelined copy-in/copy-out
/// times, so the rest went to something else.
pub const SLOW_MODE_FACTOR: f64 = 4.0;

/// A warning when points from [`SLOW_MODE_MIN_BYTES`] on took more than
/// [`SLOW_MODE_FACTOR`] times the serial two-copy hand-off recorded beside
/// them (`limits.c2c_two_copy_bits_per_s`), naming those sizes: the slow
/// mode shared two-CPU machines show (an end descheduled while the other
/// spins, or both moved apart), said in the result instead of left for
/// the reader to guess from a curve.
pub fn slow_mode_warning(mode: Mode, points: &[Point]) -> Option<String> {
    let directions = mode.bytes_per_op(1) as f64;
    let checked: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.bytes >= SLOW_MODE_MIN_BYTES && p.bits_per_s > 0.0)
        .filter_map(|p| {
            let limit = p.limits?.c2c_two_copy_bits_per_s?;
            Some((p.bytes, limit / (p.bits_per_s / directions)))
        })
        .collect();
    let slow: Vec<&(u64, f64)> = checked
        .iter()
        .filter(|(_, x)| *x > SLOW_MODE_FACTOR)
        .collect();
    if slow.is_empty() {
        return None;
    }
    let listed: Vec<String> = slow
        .iter()
        .take(6)
        .map(|(b, x)| format!("{} ({x:.1}x)", crate::units::format_bytes(*b)))
        .collect();
    let more = if slow.len() > listed.len() {
        ", ..."
    } else {
        ""
    };
    Some(format!(
        "slow mode: {} of {} sizes from {} on took more than {SLOW_MODE_FACTOR}x the serial \
         two-copy hand-off between the same CPUs (c2c-2copy, measured just before): {}{more}. \
         That time went to something other than copying: on a busy machine, mostly an end \
         descheduled while the other waited; rerun on a quieter machine before reading these sizes",
        slow.len(),
        checked.len(),
        crate::units::format_bytes(SLOW_MODE_MIN_BYTES),
        listed.join(", ")
    ))
}

/// Keep the points of a baseline sweep as limits for later sweeps.
pub fn remember(kind: LimitKind, spec: &SweepSpec, cpus: FloorKey, points: &[Point]) {
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    match kind {
        LimitKind::MemcpyBandwidth => {
            let key = copy_key(spec, cpus.0);
            for p in points {
                t.memcpy.insert((key, p.bytes), p.bits_per_s);
            }
            t.tried_memcpy.extend(spec.sizes.iter().map(|&b| (key, b)));
        }
        LimitKind::CachelineFloor => {
            if spec.channel.wait == floor_wait(cpus) {
                if let Some(p) = points.iter().find(|p| p.bytes == FLOOR_BYTES) {
                    // The fastest trial, and the least of every floor this
                    // process measured: nothing makes the floor faster.
                    let f = super::floor::floor_of(p);
                    let kept = t.floor.entry(cpus).or_insert(f);
                    *kept = kept.min(f);
                }
            }
        }
        LimitKind::C2cSingleCopy | LimitKind::C2cTwoCopy => {
            if spec.channel.wait == floor_wait(cpus) {
                let key = (spec.nocache, spec.offset_bytes, cpus);
                if let Some(curve) = t.curve(kind) {
                    for p in points {
                        curve.insert((key, p.bytes), p.bits_per_s);
                    }
                }
                t.tried_c2c
                    .extend(spec.sizes.iter().map(|&b| (kind, key, b)));
            }
        }
    }
}

/// Keep `floor_ns` for `cpus` if it is lower than the floor known there;
/// returns the floor kept (the least of every measurement in this process:
/// nothing makes the floor faster, a busier moment makes it slower).
pub(super) fn keep_lowest_floor(cpus: FloorKey, floor_ns: f64) -> f64 {
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    let kept = t.floor.entry(cpus).or_insert(floor_ns);
    *kept = kept.min(floor_ns);
    *kept
}

fn copy_key(spec: &SweepSpec, cpu: Option<usize>) -> CopyKey {
    CopyKey {
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        cpu,
    }
}

/// The limits for a sweep whose ends run on `client_cpu` and `server_cpu`
/// of this machine: from the table, measuring what is missing (this thread
/// must already be pinned to `client_cpu`). A failure is a warning, never
/// the sweep's end.
pub fn for_sweep(
    spec: &SweepSpec,
    llc_bytes: Option<u64>,
    client_cpu: Option<usize>,
    server_cpu: Option<usize>,
    warnings: &mut Vec<String>,
) -> Option<Limits> {
    match gather(spec, llc_bytes, (client_cpu, server_cpu), warnings) {
        Ok(l) => Some(l),
        Err(e) => {
            warnings.push(format!("the physical limits could not be measured: {e:#}"));
            None
        }
    }
}

fn gather(
    spec: &SweepSpec,
    llc_bytes: Option<u64>,
    cpus: FloorKey,
    warnings: &mut Vec<String>,
) -> Result<Limits> {
    // After this the limits still missing are dropped.
    let deadline = Instant::now() + spec.budget.mul_f64(LIMITS_DEADLINE_SHARE);
    let key = copy_key(spec, cpus.0);
    let (missing, floor) = {
        let t = table().lock().unwrap_or_else(|e| e.into_inner());
        let missing: Vec<u64> = spec
            .sizes
            .iter()
            .copied()
            .filter(|b| value_at(&t.memcpy, key, *b).is_none())
            .filter(|b| !t.tried_memcpy.contains(&(key, *b)))
            .collect();
        (missing, t.floor.get(&cpus).copied())
    };
    if !missing.is_empty() {
        let budget_ns = (spec.budget.as_nanos() as f64 * MEMCPY_BUDGET_SHARE) as u64;
        let max = missing.iter().copied().max().unwrap_or(1);
        let mut bench = MemcpyBench::new(&setup(spec, Mode::Stream, max, llc_bytes))?;
        let curve = measure_curve(
            spec,
            &mut bench,
            Mode::Stream,
            &missing,
            (budget_ns, deadline),
        )?;
        warnings.extend(curve.dropped_warning("memcpy", budget_ns));
        let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
        for (b, r) in curve.rates {
            t.memcpy.insert((key, b), r);
        }
        t.tried_memcpy.extend(missing.iter().map(|&b| (key, b)));
    }
    if floor.is_none() {
        let budget_ns = ((spec.budget.as_nanos() as f64 * FLOOR_BUDGET_SHARE) as u64)
            .clamp(FLOOR_BUDGET_NS.0, FLOOR_BUDGET_NS.1);
        let f = measure_floor(spec, cpus, budget_ns)?;
        table()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .floor
            .insert(cpus, f);
    }
    let c2c_key = (spec.nocache, spec.offset_bytes, cpus);
    // The core-to-core limits are defined between two distinct pinned
    // CPUs. With one end unpinned (a `wulf serve` peer that was not asked
    // to pin) or both on one CPU, each hand-off waits for the scheduler:
    // the "limit" would measure ticks, not copies, and overran its share
    // of the budget 30-fold (27 s before a sweep's first point).
    let distinct_cpus = matches!(cpus, (Some(a), Some(b)) if a != b);
    if distinct_cpus {
        for (kind, copies) in [
            (LimitKind::C2cSingleCopy, Copies::One),
            (LimitKind::C2cTwoCopy, Copies::Two),
        ] {
            warnings.extend(gather_c2c(spec, (llc_bytes, deadline), cpus, kind, copies)?);
        }
    }
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    let mut by_size = |kind: LimitKind| -> HashMap<u64, f64> {
        let curve = t.curve(kind).map(|c| &*c);
        spec.sizes
            .iter()
            .filter_map(|b| value_at(curve?, c2c_key, *b).map(|r| (*b, r)))
            .collect()
    };
    let c2c_bits_per_s = by_size(LimitKind::C2cSingleCopy);
    let c2c_two_copy_bits_per_s = by_size(LimitKind::C2cTwoCopy);
    Ok(Limits {
        memcpy_bits_per_s: spec
            .sizes
            .iter()
            .filter_map(|b| value_at(&t.memcpy, key, *b).map(|r| (*b, r)))
            .collect(),
        floor_ns: t.floor.get(&cpus).copied(),
        floor_measured_here: floor.is_none(),
        c2c_bits_per_s,
        c2c_two_copy_bits_per_s,
    })
}

/// Measure the sizes of the core-to-core limit `kind` the table lacks;
/// returns a warning naming the sizes its budget share did not reach.
fn gather_c2c(
    spec: &SweepSpec,
    (llc_bytes, deadline): (Option<u64>, Instant),
    cpus: FloorKey,
    kind: LimitKind,
    copies: Copies,
) -> Result<Option<String>> {
    let key = (spec.nocache, spec.offset_bytes, cpus);
    let missing: Vec<u64> = {
        let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
        let tried = t.tried_c2c.clone();
        let curve = t.curve(kind).map(|c| &*c);
        spec.sizes
            .iter()
            .copied()
            .filter(|b| curve.is_some_and(|c| value_at(c, key, *b).is_none()))
            .filter(|b| !tried.contains(&(kind, key, *b)))
            .collect()
    };
    let Some(max) = missing.iter().copied().max() else {
        return Ok(None);
    };
    let mut s = setup(spec, Mode::Pingpong, max, llc_bytes);
    s.helper_cpu = cpus.1;
    s.wait = floor_wait(cpus);
    let mut bench = C2cBench::new(&s, copies)?;
    let budget_ns = (spec.budget.as_nanos() as f64 * C2C_BUDGET_SHARE) as u64;
    let measured = measure_curve(
        spec,
        &mut bench,
        Mode::Pingpong,
        &missing,
        (budget_ns, deadline),
    )?;
    let name = match copies {
        Copies::One => "c2c",
        Copies::Two => "c2c-2copy",
    };
    let warning = measured.dropped_warning(name, budget_ns);
    let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(curve) = t.curve(kind) {
        for (b, r) in measured.rates {
            curve.insert((key, b), r);
        }
    }
    t.tried_c2c.extend(missing.iter().map(|&b| (kind, key, b)));
    Ok(warning)
}

/// The setup of a limit's baseline for `spec`.
pub(super) fn setup(
    spec: &SweepSpec,
    mode: Mode,
    max_bytes: u64,
    llc: Option<u64>,
) -> BaselineSetup {
    BaselineSetup {
        mode,
        max_bytes,
        nocache: spec.nocache,
        offset_bytes: spec.offset_bytes,
        llc_bytes: llc,
        caches: Vec::new(),
        helper_cpu: None,
        wait: WaitMode::Spin,
        timeout: spec.channel.timeout(),
    }
}

/// A limit's curve as far as its budget reached.
#[derive(Debug, PartialEq)]
struct Curve {
    /// (size, bits/s) of each size measured.
    rates: Vec<(u64, f64)>,
    /// Sizes left unmeasured because the budget was spent.
    dropped: Vec<u64>,
    /// They were dropped at the limits' deadline
    /// ([`LIMITS_DEADLINE_SHARE`] of the sweep's budget), not for the
    /// curve's own overrun.
    at_deadline: bool,
}

impl Curve {
    /// A warning naming the sizes the limit `name` has no value at.
    fn dropped_warning(&self, name: &str, budget_ns: u64) -> Option<String> {
        if self.dropped.is_empty() {
            return None;
        }
        let sizes = sizes_named(&self.dropped);
        if self.at_deadline {
            return Some(format!(
                "the limits' deadline ({:.0}% of the budget) passed before the {name} limit reached {sizes}: no {name} limit there (a short --budget or a busy machine)",
                LIMITS_DEADLINE_SHARE * 100.0,
            ));
        }
        Some(format!(
            "the {name} limit took more than {} (its share of the budget is {}) before {sizes}: no {name} limit there (slow trials on a busy machine)",
            crate::units::format_ns(budget_ns.saturating_mul(OVERRUN_FACTOR).max(OVERRUN_FLOOR_NS) as f64),
            crate::units::format_ns(budget_ns as f64),
        ))
    }
}

/// Most sizes a warning names one by one; more read as a count and a range
/// (a quiet machine's `wulf run --quick` once listed all 124 sizes, twice,
/// in each MPI row's warning).
const SIZES_NAMED: usize = 6;

/// `sizes` (ascending) as a warning names them: each, or how many and
/// their range.
fn sizes_named(sizes: &[u64]) -> String {
    let text = |b: &u64| crate::units::format_bytes(*b);
    match sizes {
        [first, .., last] if sizes.len() > SIZES_NAMED => {
            format!("{} sizes ({}..{})", sizes.len(), text(first), text(last))
        }
        _ => sizes.iter().map(text).collect::<Vec<_>>().join(", "),
    }
}

/// The rate of `bench` in `mode` at each of `sizes` (ascending), bits/s,
/// within `budget_ns` shared evenly among the sizes left.
fn measure_curve(
    spec: &SweepSpec,
    bench: &mut dyn Baseline,
    mode: Mode,
    sizes: &[u64],
    (budget_ns, deadline): (u64, Instant),
) -> Result<Curve> {
    let overhead = crate::measure::timer::clock_read_cost_ns();
    let mut runner = BaselineRunner::new(bench, mode, overhead);
    let mut max_repeats = u64::MAX;
    curve_within(sizes, (budget_ns, deadline), |bytes, share_ns| {
        let plan = plan_for(share_ns, spec.precision, max_repeats);
        // At the limits' deadline a size keeps the trials it has, at
        // least three (the sizes after it are then dropped).
        let asked = std::cell::Cell::new(0usize);
        let stop = || {
            asked.set(asked.get() + 1);
            super::interrupted() || (asked.get() > 3 && Instant::now() >= deadline)
        };
        let o = measure_point(&mut runner, bytes, &plan, &stop)?;
        if (o.interrupted && super::interrupted()) || o.trials_ns.is_empty() {
            anyhow::bail!("interrupted");
        }
        max_repeats = o.repeats;
        let p = super::point::make_point(bytes, mode, &o);
        Ok((p.bits_per_s, o.wall_ns))
    })
}

/// How far a limit's curve may overrun its budget share before the sizes
/// left are dropped. Not 1: the repetition policy's least work per size
/// (its minimum trials) exceeds an even split of a small share, which is
/// normal on a loaded machine and in MPI ranks, whose own processes
/// measure their limits again with a small budget (`wulf run --quick`, at
/// load average 17: with a factor of 1 the c2c limit of MPI sweeps kept
/// 12 of 124 sizes). The overrun this bounds was 30-fold.
const OVERRUN_FACTOR: u64 = 4;
/// Time a limit's curve may always take, whatever its share: a short
/// sweep's share (15 ms for the c2c limit of a 300 ms sweep) is less than
/// a single size needs on a loaded machine.
const OVERRUN_FLOOR_NS: u64 = 1_000_000_000;
/// The share of a sweep's budget after which every limit still missing
/// is dropped, whatever the floors above allow: the limits come out of
/// the budget, and on a busy VM they once took 6.1 s of a 10 s sweep
/// (4 KiB socket buffers; each limit at its 1 s floor or 4x its share).
pub const LIMITS_DEADLINE_SHARE: f64 = 0.25;

/// Run `measure(bytes, share_ns) -> (bits/s, wall ns)` for each of `sizes`,
/// each with an even share of what is left of `budget_ns`, and drop the
/// sizes that remain once [`OVERRUN_FACTOR`] times the budget is spent: the
/// repetition policy cannot cut a single trial short, so one slow trial (a
/// descheduled helper thread) once took 27 s of a 0.8 s share; now it
/// costs the sizes after it their limit, and the warning says which.
fn curve_within(
    sizes: &[u64],
    (budget_ns, deadline): (u64, Instant),
    mut measure: impl FnMut(u64, u64) -> Result<(f64, u64)>,
) -> Result<Curve> {
    let mut rates = Vec::with_capacity(sizes.len());
    let mut spent = 0u64;
    for (i, &bytes) in sizes.iter().enumerate() {
        let at_deadline = Instant::now() >= deadline;
        if at_deadline
            || spent
                >= budget_ns
                    .saturating_mul(OVERRUN_FACTOR)
                    .max(OVERRUN_FLOOR_NS)
        {
            return Ok(Curve {
                rates,
                dropped: sizes[i..].to_vec(),
                at_deadline,
            });
        }
        let left = (sizes.len() - i) as u64;
        let (rate, wall_ns) = measure(bytes, budget_ns.saturating_sub(spent) / left)?;
        spent = spent.saturating_add(wall_ns);
        rates.push((bytes, rate));
    }
    Ok(Curve {
        rates,
        dropped: Vec::new(),
        at_deadline: false,
    })
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
