//! Derived figures from results: latency, peak, n_1/2, the saturation point,
//! Hockney segments and their switch-overs, and drop-outs with their likely
//! causes.
//!
//! Everything here is a pure function of the per-size medians and their
//! confidence intervals (no I/O, no clock), so the report, `wulf compare`
//! and the tests all see the same figures. The work is bounded, so that
//! the commands can look at the stop flag between the steps (reading,
//! analysing, drawing) and stop promptly; the one long loop, `wulf
//! compare`'s bootstrap, looks at a stop function its caller gives
//! ([`compare::CompareOptions::stop`]).
//! The bounds: at most `result::validate::MAX_POINTS` points,
//! drop-out windows of at most `dropout::MAX_RUN_POINTS` points, and a
//! segmentation linear in the points above `hockney::MAX_EXACT_POINTS`. [`analyse_curve`] works on plain
//! slices; [`Analysis::of`] feeds it a [`SweepResult`].
//!
//! # Rules
//!
//! Times are the median one-way (or exchange) times t(n) of each size n;
//! throughput is x(n) = 8 n / t(n), doubled in the bidirectional mode as in
//! the result's `definitions.throughput`.
//!
//! * **Latency**: t at the smallest size measured (the result's definition).
//! * **Peak**: the largest x(n) and the size where it occurs.
//! * **n_1/2**: the smallest measured size whose throughput reaches half the
//!   peak (Hockney 1994, "The communication challenge for MPP", Parallel
//!   Computing 20:389; measured rather than alpha * beta, which only holds
//!   on a single Hockney line).
//! * **Drop-outs** ([`dropout`]): a point or run of points whose upper
//!   throughput bound lies more than [`DROPOUT_MIN_DEPTH`] (or the noise
//!   of the intervals, if larger) below the lower bounds of its neighbours
//!   interpolated along the Hockney chord between them, which is not
//!   one side of a step, and from which the curve comes back (a level
//!   change that lasts is a switch-over); each with a likely cause from
//!   [`CauseHints`] ([`causes`]), which takes the machine's cache levels
//!   from the result's fingerprint.
//! * **Segments and switch-overs** ([`hockney`], [`line_fit`]): t = alpha +
//!   n / beta fitted piecewise by least squares on relative residuals, each
//!   line physical (alpha >= 0, beta > 0, with a 95% interval for each
//!   parameter; a segment that wants a negative alpha is bandwidth-bound),
//!   the number of pieces
//!   chosen by BIC (Bai & Perron 2003) with at least [`MIN_SEGMENT_POINTS`]
//!   points each and a floor on residuals of [`NOISE_FLOOR_REL`] or the
//!   points' own confidence half-widths, whichever is larger. Drop-out
//!   points are left out of the fit (a dip is not a regime) and then join
//!   the neighbouring segment they fit best. The switch-overs are the first
//!   sizes of the second and later segments; each gets a likely cause by
//!   the drop-out rules, as if it were a drop-out starting there. A
//!   switch-over stays only when each side's intervals lie apart from the
//!   other side's line (`significance`).
//! * **Confirmation** ([`confirm`]): a sweep measures the sizes around each
//!   candidate event again; [`Analysis::of`] judges every event against
//!   those fresh trials when the result carries them, and drops events
//!   that rest on noisy points alone unless confirmed.
//! * **Saturation point**: on the saturation graph (log t against log n)
//!   time grows linearly with size once the slope reaches 1. Under a Hockney
//!   line that slope is d ln t / d ln n = (n / beta) / t = x(n) / beta, and
//!   the latency share alpha / t is one minus it. The saturation point is
//!   the smallest measured size from which every larger size (drop-outs
//!   aside) has, on its own segment's fitted line, a latency share of at
//!   most [`SATURATION_LATENCY_SHARE`] (1/5): the slope is at least 0.8,
//!   the message gets at least 80% of its regime's beta, and no larger
//!   block can add more than a quarter. On a single Hockney line this is
//!   the first size at or above 4 n_1/2 = 4 alpha beta. The threshold is
//!   calibrated on León Carri et al. 2004, which reads its saturation points off the
//!   graphs: TCP latency 42 us at about 90 Mbit/s on Fast Ethernet gives
//!   n_1/2 = 470 B and 4 n_1/2 = 1.9 KB (read: 2 KB); about 160 Mbit/s over
//!   two bonded links gives 4 n_1/2 = 3.4 KB (read: 4 KB). Using each
//!   segment's own line keeps a slower last regime (out of cache) from
//!   moving the point earlier. `None` when the largest sizes are still
//!   latency-bound. When a segment's line does not fit its points (rms
//!   relative residual above [`MAX_FIT_RMS_REL`]) no line is trusted and
//!   the point is read off the measured curve instead (see `saturation`).

pub mod causes;
pub mod compare;
pub mod confirm;
pub mod dropout;
pub mod hockney;
pub mod line_fit;
pub mod matrix;
pub mod matrix_confirm;
pub mod matrix_host;
pub mod matrix_loss;
mod saturation;
mod significance;

#[cfg(test)]
mod cause_tests;
#[cfg(test)]
mod detection_tests;
#[cfg(test)]
mod synth;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::result::SweepResult;

pub use causes::CauseHints;
pub use dropout::{DROPOUT_MAX_SPAN_RATIO, DROPOUT_MIN_DEPTH};
pub use hockney::{LineFit, MAX_SEGMENTS, MIN_SEGMENT_POINTS, NOISE_FLOOR_REL};

/// Largest share of a message's time that the fixed cost alpha may take
/// for the message to count as saturated (see the module notes).
pub const SATURATION_LATENCY_SHARE: f64 = 0.2;

/// Largest root-mean-square relative residual (15%) at which a Hockney
/// line still describes its segment. Sweeps of a quiet machine fit within
/// a few percent (tcp loopback on the 2-vCPU development VM: 6-10%); all
/// 64 sweeps made under load in one check were single segments with
/// residuals of 31-70%, whose alpha and beta described nothing. It applies to the free line through the points (a segment
/// held at alpha = 0 by the physical constraints may scatter more about
/// its constrained line and still be one regime). Above it a segment is
/// marked [`Segment::poor_fit`] and the
/// saturation point is read off the curve itself.
pub const MAX_FIT_RMS_REL: f64 = 0.15;

/// Figures derived from one sweep. Rates are in bit/s, SI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Points analysed: sizes with a positive, finite median time.
    pub points: usize,
    /// Median time at the smallest size, in ns.
    pub latency_ns: Option<f64>,
    /// Highest median throughput.
    pub peak_bits_per_s: Option<f64>,
    /// Size at which the peak occurs.
    pub peak_bytes: Option<u64>,
    /// Smallest size reaching half the peak throughput.
    pub n_half_bytes: Option<u64>,
    /// Smallest size from which time grows linearly with size.
    pub saturation_bytes: Option<u64>,
    /// Hockney segments, in order, together covering every point.
    pub segments: Vec<Segment>,
    /// First size of each segment after the first: the switch-overs.
    pub switchovers: Vec<u64>,
    /// Drop-outs, in order of size.
    pub dropouts: Vec<Dropout>,
}

/// One piece of the piecewise Hockney fit t = alpha + n / beta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// First size covered.
    pub from_bytes: u64,
    /// Last size covered (inclusive).
    pub to_bytes: u64,
    /// Points that shaped the line (drop-outs excluded).
    pub points: usize,
    /// Start-up time in ns: the line's time for an empty message, never
    /// negative (the fit is constrained, see [`line_fit`]). For a segment
    /// of large sizes this is an extrapolation.
    pub alpha_ns: f64,
    /// 95% interval of `alpha_ns` (low, high), by
    /// [`line_fit::INTERVAL_METHOD`]; `None` with fewer than three points.
    #[serde(default)]
    pub alpha_ci_ns: Option<(f64, f64)>,
    /// Asymptotic bandwidth of the line; `None` when time does not grow
    /// with size in this segment (latency-bound).
    pub beta_bits_per_s: Option<f64>,
    /// 95% interval of `beta_bits_per_s` (low, high); high is `None` when
    /// the data do not bound beta above.
    #[serde(default)]
    pub beta_ci_bits_per_s: Option<(f64, Option<f64>)>,
    /// The segment wanted a negative start-up time and was fitted with
    /// alpha = 0: its time grows in proportion to size.
    #[serde(default)]
    pub bandwidth_bound: bool,
    /// Root mean square of the relative residuals of the fitted points.
    pub rms_rel_residual: f64,
    /// No straight line describes the segment's points: the free
    /// (unconstrained) line's rms relative residual is above
    /// [`MAX_FIT_RMS_REL`]. Its alpha and beta are then no figures of the
    /// transport (a sweep under load scatters about any line) and reports
    /// say "does not fit" instead of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poor_fit: bool,
    /// For a segment after the first: the recorded threshold (eager limit,
    /// socket buffer, MSS...) its start most likely comes from, by the
    /// drop-out rules applied to the sizes either side of the switch-over.
    pub likely_cause: Option<String>,
    /// For a segment after the first: whether the confirmation pass found
    /// its switch-over again (`None`: no pass ran, e.g. an older result).
    #[serde(default)]
    pub confirmed: Option<bool>,
}

/// A run of sizes whose throughput falls below its neighbours'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropout {
    /// First size of the run.
    pub from_bytes: u64,
    /// Last size of the run (inclusive).
    pub to_bytes: u64,
    /// Sizes in the run.
    pub points: usize,
    /// Largest throughput deficit against the neighbours' line, 0..1
    /// (0.8 = throughput fell to a fifth).
    pub depth_fraction: f64,
    /// Threshold the run most likely comes from, when one is recorded.
    pub likely_cause: Option<String>,
    /// Whether the confirmation pass found the drop-out again (`None`: no
    /// pass ran, e.g. an older result).
    #[serde(default)]
    pub confirmed: Option<bool>,
    /// For a drop-out the pass did not confirm: its edges that held on
    /// their own ([`confirm::edges`]), as (first size of the new level,
    /// direction). A step the first pass saw as the end of a drop-out is
    /// one such edge: what to report instead of the drop-out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmed_edges: Vec<(u64, confirm::edges::Direction)>,
}

impl Analysis {
    /// Analyse a result, taking cause hints from `options.transport` and
    /// counting both directions in the bidirectional mode.
    pub fn of(result: &SweepResult) -> Analysis {
        let p = &result.points;
        let bytes: Vec<u64> = p.iter().map(|p| p.bytes).collect();
        let median: Vec<f64> = p.iter().map(|p| p.median_ns).collect();
        let low: Vec<f64> = p.iter().map(|p| p.ci_low_ns).collect();
        let high: Vec<f64> = p.iter().map(|p| p.ci_high_ns).collect();
        let noisy: Vec<bool> = p.iter().map(|p| p.noisy).collect();
        let hints = CauseHints::from_transport(&result.options.transport)
            .with_offset(result.options.offset_bytes)
            .with_caches(result.host.caches.as_deref());
        let directions = result.mode.bytes_per_op(1) as f64;
        let first = analyse(&bytes, &median, &low, &high, &hints, directions, &|_| false);
        let events = confirm::events(&first);
        let verdicts = result.confirmation.as_ref().map(|c| {
            let curve = (&median[..], &low[..], &high[..]);
            confirm::judge_known(&bytes, curve, &c.points, &events, &hints)
        });
        // Noisy points alone never make an event: one resting only on
        // noisy points stands only when the fresh trials confirmed it.
        let veto = |e: &confirm::Event| {
            let k = events.iter().position(|x| x == e);
            let confirmed = matches!((&verdicts, k), (Some(v), Some(k)) if v[k]);
            !confirmed && confirm::indices(&bytes, e).iter().all(|&i| noisy[i])
        };
        let mut a = if events.iter().any(veto) {
            analyse(&bytes, &median, &low, &high, &hints, directions, &veto)
        } else {
            first
        };
        if let (Some(v), Some(c)) = (verdicts, result.confirmation.as_ref()) {
            let verdict = |e: confirm::Event| events.iter().position(|x| *x == e).map(|k| v[k]);
            for d in &mut a.dropouts {
                let e = confirm::Event {
                    kind: confirm::EventKind::Dropout,
                    from_bytes: d.from_bytes,
                    to_bytes: d.to_bytes,
                };
                d.confirmed = verdict(e);
                if d.confirmed == Some(false) {
                    let both = confirm::edges::of_dropout(&bytes, &e);
                    let held = confirm::edges::holds(&bytes, &c.points, &both);
                    d.confirmed_edges = both
                        .iter()
                        .zip(held)
                        .filter(|(_, h)| *h)
                        .map(|(x, _)| (x.bytes, x.direction))
                        .collect();
                }
            }
            for s in a.segments.iter_mut().skip(1) {
                s.confirmed = verdict(confirm::Event {
                    kind: confirm::EventKind::Switchover,
                    from_bytes: s.from_bytes,
                    to_bytes: s.from_bytes,
                });
            }
        }
        a
    }

    /// The drop-outs the confirmation pass confirmed: the ones worth a mark
    /// on a chart.
    pub fn confirmed_dropouts(&self) -> impl Iterator<Item = &Dropout> {
        self.dropouts.iter().filter(|d| d.confirmed == Some(true))
    }

    /// The segments after the first whose switch-over the confirmation
    /// pass confirmed.
    pub fn confirmed_switchovers(&self) -> impl Iterator<Item = &Segment> {
        self.segments
            .iter()
            .skip(1)
            .filter(|s| s.confirmed == Some(true))
    }
}

/// Analyse a curve given as parallel slices: message sizes, median times
/// and the 95% confidence bounds of the medians (ns). One message per
/// operation (use [`Analysis::of`] for bidirectional results).
///
/// Sizes need not be sorted; a repeated size keeps its first point; points
/// with a non-positive or non-finite median are ignored; a missing or
/// inverted bound is replaced by the median (the point then counts as
/// exact, which only makes it easier to flag, so results should carry
/// their intervals).
pub fn analyse_curve(
    bytes: &[u64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
    hints: &CauseHints,
) -> Analysis {
    analyse(bytes, median_ns, ci_low_ns, ci_high_ns, hints, 1.0, &|_| {
        false
    })
}

/// The analysis, with `directions` messages counted per operation, leaving
/// out the events `veto` rejects (such drop-outs are not excluded from the
/// fit, and such switch-overs join their two segments).
fn analyse(
    bytes: &[u64],
    median_ns: &[f64],
    ci_low_ns: &[f64],
    ci_high_ns: &[f64],
    hints: &CauseHints,
    directions: f64,
    veto: &dyn Fn(&confirm::Event) -> bool,
) -> Analysis {
    let curve = Curve::clean(bytes, median_ns, ci_low_ns, ci_high_ns);
    let len = curve.bytes.len();
    let size = |i: usize| curve.bytes[i] as u64;
    let throughput: Vec<f64> = (0..len)
        .map(|i| directions * 8e9 * curve.bytes[i] / curve.median[i])
        .collect();
    let peak = (0..len).fold(None, |best: Option<usize>, i| match best {
        Some(b) if throughput[b] >= throughput[i] => Some(b),
        _ => Some(i),
    });
    let n_half = peak.and_then(|p| (0..len).find(|&i| throughput[i] >= throughput[p] / 2.0));

    let mut runs = dropout::find_dropouts(&curve.bytes, &curve.median, &curve.low, &curve.high);
    runs.retain(|r| {
        !veto(&confirm::Event {
            kind: confirm::EventKind::Dropout,
            from_bytes: size(r.first),
            to_bytes: size(r.last),
        })
    });
    let mut include = vec![true; len];
    for r in &runs {
        include[r.first..=r.last]
            .iter_mut()
            .for_each(|f| *f = false);
    }
    let half_width_rel: Vec<f64> = (0..len)
        .map(|i| (curve.high[i] - curve.low[i]) / (2.0 * curve.median[i]))
        .collect();
    let fits = hockney::fit_segments(&curve.bytes, &curve.median, &half_width_rel, &include);
    let points = significance::Points {
        bytes: &curve.bytes,
        median: &curve.median,
        low: &curve.low,
        high: &curve.high,
        include: &include,
    };
    let fits = significance::merge_insignificant(fits, &points);
    let fits = significance::merge_at(fits, &points, |first| {
        veto(&confirm::Event {
            kind: confirm::EventKind::Switchover,
            from_bytes: size(first),
            to_bytes: size(first),
        })
    });
    let unfit: Vec<bool> = fits
        .iter()
        .map(|f| {
            hockney::free_rms_rel(&curve.bytes, &curve.median, &include, f.first, f.last)
                > MAX_FIT_RMS_REL
        })
        .collect();
    let fitted = !unfit.contains(&true);
    let saturation = if fitted {
        saturation::on_lines(&curve.bytes, &fits, &include)
    } else {
        saturation::on_curve(&curve.bytes, &curve.median, &include)
    };

    let segments: Vec<Segment> = fits
        .iter()
        .enumerate()
        .map(|(s, f)| Segment {
            from_bytes: size(f.first),
            to_bytes: size(f.last),
            points: f.line.points,
            alpha_ns: f.line.alpha_ns,
            alpha_ci_ns: f.line.alpha_ci_ns,
            beta_bits_per_s: f.line.beta_bits_per_s().map(|b| b * directions),
            beta_ci_bits_per_s: f
                .line
                .beta_ci_bits_per_s()
                .map(|(lo, hi)| (lo * directions, hi.map(|h| h * directions))),
            bandwidth_bound: f.line.bound == line_fit::Bound::BandwidthBound,
            rms_rel_residual: f.line.rms_rel(),
            poor_fit: unfit[s],
            // No good size after a switch-over to pin a page boundary on.
            likely_cause: match s {
                0 => None,
                _ => hints.likely_cause(size(f.first - 1), size(f.first), size(f.first), u64::MAX),
            },
            confirmed: None,
        })
        .collect();
    let dropouts = runs
        .iter()
        .map(|r| Dropout {
            from_bytes: size(r.first),
            to_bytes: size(r.last),
            points: r.last - r.first + 1,
            depth_fraction: r.depth_fraction,
            likely_cause: hints.likely_cause(
                size(r.first - 1),
                size(r.first),
                size(r.last),
                size(r.last + 1),
            ),
            confirmed: None,
            confirmed_edges: Vec::new(),
        })
        .collect();
    Analysis {
        points: len,
        latency_ns: curve.median.first().copied(),
        peak_bits_per_s: peak.map(|p| throughput[p]),
        peak_bytes: peak.map(size),
        n_half_bytes: n_half.map(size),
        saturation_bytes: saturation.map(size),
        switchovers: segments.iter().skip(1).map(|s| s.from_bytes).collect(),
        segments,
        dropouts,
    }
}

/// The valid points of a curve, sorted by size, sizes as f64.
struct Curve {
    bytes: Vec<f64>,
    median: Vec<f64>,
    low: Vec<f64>,
    high: Vec<f64>,
}

impl Curve {
    fn clean(bytes: &[u64], median_ns: &[f64], ci_low_ns: &[f64], ci_high_ns: &[f64]) -> Curve {
        let n = bytes.len().min(median_ns.len());
        let mut order: Vec<usize> = (0..n)
            .filter(|&i| median_ns[i].is_finite() && median_ns[i] > 0.0)
            .collect();
        // Stable, so a repeated size keeps its first point.
        order.sort_by_key(|&i| bytes[i]);
        order.dedup_by_key(|i| bytes[*i]);
        let bound = |v: Option<&f64>, m: f64, pick: fn(f64, f64) -> f64| match v {
            Some(&b) if b.is_finite() => pick(b, m),
            _ => m,
        };
        Curve {
            bytes: order.iter().map(|&i| bytes[i] as f64).collect(),
            median: order.iter().map(|&i| median_ns[i]).collect(),
            low: order
                .iter()
                .map(|&i| bound(ci_low_ns.get(i), median_ns[i], f64::min))
                .collect(),
            high: order
                .iter()
                .map(|&i| bound(ci_high_ns.get(i), median_ns[i], f64::max))
                .collect(),
        }
    }
}
