//! The summary figures of a comparison: the latency and the peak, each
//! tested at one size as a band is, and n_1/2 and the saturation point,
//! read off many sizes and untested.

use super::{band_of, BandDiff, Context, FigureDiff, Verdict};
use crate::analysis::Analysis;
use crate::result::SweepResult;

impl Context<'_> {
    /// The summary figures. A tested figure is one size of a band, so it
    /// needs at least that band's run-to-run band (one size varies more
    /// between runs than a band's mean over many, never less), and it
    /// claims no change its band does not show: the A/A pair of two shm
    /// runs read "A faster" at one size (+146%) while every band was
    /// inconclusive.
    pub(super) fn figures(&self, common: &[u64], bands: &[BandDiff]) -> Vec<FigureDiff> {
        let mut out = Vec::new();
        let tested = |name, bytes: Option<u64>, rate: bool, value: &dyn Fn(f64, u64) -> f64| {
            let at = bytes?;
            let band = bands.iter().find(|b| b.name == band_of(at));
            let (interval, own, a_ns, b_ns) = self.test(&[at], band_of(at))?;
            let floor = match band {
                Some(b) if b.floor.fraction > own.fraction => b.floor,
                _ => own,
            };
            let verdict = Verdict::of(&interval, &floor, self.opts.margin);
            let shown = |v: Verdict| matches!(v, Verdict::AFaster | Verdict::BFaster);
            let verdict = match band {
                Some(b) if shown(verdict) && b.verdict != verdict => Verdict::Inconclusive,
                _ => verdict,
            };
            let (a, b) = (value(a_ns, at), value(b_ns, at));
            Some(FigureDiff {
                name,
                a: Some(a),
                b: Some(b),
                change: (a > 0.0).then(|| b / a - 1.0),
                tested_at_bytes: Some(at),
                interval: Some(interval),
                floor: Some(floor),
                verdict,
                rate,
            })
        };
        let untested = |name| FigureDiff {
            name,
            a: None,
            b: None,
            change: None,
            tested_at_bytes: None,
            interval: None,
            floor: None,
            verdict: Verdict::Untested,
            rate: false,
        };
        let latency = tested("latency", common.first().copied(), false, &|ns, _| ns);
        out.push(latency.unwrap_or_else(|| untested("latency")));
        let mode = self.a.first().map(|r| r.mode);
        let rate = |ns: f64, bytes: u64| {
            let moved = mode.map_or(bytes, |m| m.bytes_per_op(bytes));
            moved as f64 * 8.0 / (ns * 1e-9)
        };
        // The peak size is where both sides together are fastest (the
        // geometric mean of their rates), the same size whichever side
        // comes first; both sides' rates are read there, where the test
        // is. A's own peak picked the size where A's run happened to be
        // fastest, so an A/A pair read "A faster" there (and B's own peak
        // at another size compared unlike things).
        let peak_at = common
            .iter()
            .filter_map(|&s| {
                let both = self.mean_median(self.a, s)? * self.mean_median(self.b, s)?;
                Some((s, rate(both.sqrt(), s)))
            })
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .map(|p| p.0);
        let peak = tested("peak", peak_at, true, &rate).unwrap_or_else(|| FigureDiff {
            rate: true,
            ..untested("peak")
        });
        out.push(peak);
        let median_of = |side: &[SweepResult], f: &dyn Fn(&Analysis) -> Option<u64>| {
            let mut v: Vec<f64> = side
                .iter()
                .filter_map(|r| f(&Analysis::of(r)))
                .map(|x| x as f64)
                .collect();
            v.sort_by(f64::total_cmp);
            (!v.is_empty()).then(|| crate::stats::quantile_sorted(&v, 0.5))
        };
        type Pick = fn(&Analysis) -> Option<u64>;
        let derived: [(&str, Pick); 2] = [
            ("n_1/2", |x| x.n_half_bytes),
            ("saturation", |x| x.saturation_bytes),
        ];
        for (name, pick) in derived {
            let (a, b) = (median_of(self.a, &pick), median_of(self.b, &pick));
            out.push(FigureDiff {
                a,
                b,
                change: match (a, b) {
                    (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
                    _ => None,
                },
                ..untested(name)
            });
        }
        out
    }
}
