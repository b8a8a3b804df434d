//! How much the soakers (`--cost soak`, cyclesoak's method) change what
//! they measure, measured rather than assumed (issue 30, item 2).
//!
//! An idle-class spinner on every CPU keeps the CPUs out of their idle
//! states: wakeups get faster (issue 30: tcp 64 B latency fell from
//! 95-1790 us to 15-20 us on a busy VM) and the ends' own CPU time rises
//! (+56% at 64 B, +28% at 64 KiB on an idle 16-core machine). So with
//! `--cost soak` the command measures short sweeps of the same points
//! without and with the soakers, interleaved (ABAB, [`PAIRS`] pairs), and
//! records per size the change of the median one-way time and of both
//! ends' getrusage CPU per byte, each with its 95% interval over the
//! pairs ([`crate::stats::paired`]). A change whose interval excludes zero
//! is beyond the noise, and the result says so in a warning; the kernel's
//! accounting (`--cost whole`, the default whole-cost method) perturbs
//! nothing and is what the warning points to.

use serde::{Deserialize, Serialize};

use crate::stats::paired::{paired_change, PairedChange};

/// Interleaved pairs (without, with the soakers) the probe measures.
pub const PAIRS: usize = 3;

/// A change this large (as a fraction) is a perturbation worth naming even
/// where the noise is larger: the issue's bar for soakers that "do not
/// perturb".
pub const BAR: f64 = 0.05;

/// One size: what it measured without and with the soakers, per pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairSample {
    /// Median one-way time without the soakers, ns.
    pub plain_ns: f64,
    /// Median one-way time with the soakers, ns.
    pub soaked_ns: f64,
    /// Both ends' getrusage CPU per byte without the soakers, ns.
    pub plain_cpu_ns_per_byte: f64,
    /// Both ends' getrusage CPU per byte with the soakers, ns.
    pub soaked_cpu_ns_per_byte: f64,
}

/// A change with its interval, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// With the soakers against without, as a fraction (0.1: 10% more;
    /// geometric mean of the pairs' ratios, minus 1).
    pub change: f64,
    /// Lower end of the 95% interval over the pairs.
    pub low: f64,
    /// Upper end of the 95% interval over the pairs.
    pub high: f64,
}

impl Change {
    fn of(c: PairedChange) -> Change {
        Change {
            change: c.change,
            low: c.low,
            high: c.high,
        }
    }

    /// Whether the interval excludes no change.
    pub fn beyond_noise(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }

    fn text(&self) -> String {
        format!(
            "{:+.0}% (95%: {:+.0}% .. {:+.0}%)",
            self.change * 100.0,
            self.low * 100.0,
            self.high * 100.0
        )
    }
}

/// What the soakers did to one message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerturbedPoint {
    /// Message size, bytes.
    pub bytes: u64,
    /// Change of the median one-way time; absent when a pair lacked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Change>,
    /// Change of both ends' getrusage CPU per byte; absent when a pair
    /// lacked it (a peer that reports no CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub getrusage: Option<Change>,
    /// Either change's interval excludes zero: the soakers changed this
    /// size beyond the noise.
    pub beyond_noise: bool,
}

/// The soakers' perturbation of one sweep, measured before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SoakPerturbation {
    /// Interleaved pairs (without, with the soakers) measured.
    pub pairs: usize,
    /// Budget of each of the probe's sweeps, ms.
    pub budget_ms: f64,
    /// Per size.
    pub points: Vec<PerturbedPoint>,
    /// A change at or beyond this (fraction) and beyond the noise makes
    /// the soakers' figures untrustworthy.
    pub bar: f64,
    /// True when some size changed beyond the noise and by at least `bar`.
    pub perturbs: bool,
}

impl SoakPerturbation {
    /// From `samples` (per size, one [`PairSample`] per pair) of sweeps of
    /// `budget_ms` each.
    pub fn from_samples(samples: &[(u64, Vec<PairSample>)], budget_ms: f64) -> SoakPerturbation {
        let mut pairs = 0;
        let points: Vec<PerturbedPoint> = samples
            .iter()
            .map(|(bytes, s)| {
                pairs = pairs.max(s.len());
                let lat: Vec<(f64, f64)> = s.iter().map(|p| (p.plain_ns, p.soaked_ns)).collect();
                let cpu: Vec<(f64, f64)> = s
                    .iter()
                    .map(|p| (p.plain_cpu_ns_per_byte, p.soaked_cpu_ns_per_byte))
                    .collect();
                let latency = paired_change(&lat).map(Change::of);
                let getrusage = paired_change(&cpu).map(Change::of);
                let beyond_noise = [latency, getrusage]
                    .iter()
                    .flatten()
                    .any(Change::beyond_noise);
                PerturbedPoint {
                    bytes: *bytes,
                    latency,
                    getrusage,
                    beyond_noise,
                }
            })
            .collect();
        let perturbs = points.iter().any(|p| {
            [p.latency, p.getrusage]
                .iter()
                .flatten()
                .any(|c| c.beyond_noise() && c.change.abs() >= BAR)
        });
        SoakPerturbation {
            pairs,
            budget_ms,
            points,
            bar: BAR,
            perturbs,
        }
    }

    /// The warning a result carries when the soakers changed some size
    /// beyond the noise.
    pub fn warning(&self) -> Option<String> {
        let named: Vec<String> = self
            .points
            .iter()
            .filter(|p| p.beyond_noise)
            .map(|p| {
                let mut parts = Vec::new();
                if let Some(l) = p.latency.filter(Change::beyond_noise) {
                    parts.push(format!("latency {}", l.text()));
                }
                if let Some(g) = p.getrusage.filter(Change::beyond_noise) {
                    parts.push(format!("the ends' getrusage {}", g.text()));
                }
                format!(
                    "{}: {}",
                    crate::units::format_bytes(p.bytes),
                    parts.join(", ")
                )
            })
            .collect();
        (!named.is_empty()).then(|| {
            format!(
                "--cost soak: the soakers changed what they measure beyond the noise ({} interleaved \
                 pairs without and with them): {}; the figures measured with them are not those of \
                 the machine without them (--cost whole, the kernel's accounting, perturbs nothing)",
                self.pairs,
                named.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(plain_ns: f64, soaked_ns: f64, plain_cpu: f64, soaked_cpu: f64) -> PairSample {
        PairSample {
            plain_ns,
            soaked_ns,
            plain_cpu_ns_per_byte: plain_cpu,
            soaked_cpu_ns_per_byte: soaked_cpu,
        }
    }

    #[test]
    fn a_steady_change_is_named_and_a_disagreeing_one_is_noise() {
        let samples = vec![
            // The busy-VM case: wakeups several times faster, the
            // ends' CPU up by half, in every pair.
            (
                64,
                vec![
                    s(95e3, 20e3, 400.0, 600.0),
                    s(120e3, 18e3, 410.0, 640.0),
                    s(300e3, 16e3, 390.0, 590.0),
                ],
            ),
            // Up in one pair, down in two: no verdict.
            (
                65536,
                vec![
                    s(10e3, 11e3, 0.5, 0.45),
                    s(10e3, 9.5e3, 0.5, 0.55),
                    s(10e3, 9.8e3, 0.5, 0.5),
                ],
            ),
        ];
        let p = SoakPerturbation::from_samples(&samples, 500.0);
        assert_eq!(p.pairs, 3);
        assert!(p.perturbs);
        let small = &p.points[0];
        assert!(small.beyond_noise);
        assert!(small.latency.unwrap().change < -0.7, "{small:?}");
        assert!(small.getrusage.unwrap().low > 0.0, "{small:?}");
        assert!(!p.points[1].beyond_noise, "{:?}", p.points[1]);
        let w = p.warning().unwrap();
        assert!(
            w.contains("64 B: latency") && w.contains("getrusage +"),
            "{w}"
        );
        assert!(!w.contains("64 KiB"), "{w}");
    }

    #[test]
    fn no_change_no_warning_and_too_few_pairs_no_figures() {
        let same = vec![(8, vec![s(1e3, 1e3, 1.0, 1.0), s(1.1e3, 1.1e3, 1.0, 1.0)])];
        let p = SoakPerturbation::from_samples(&same, 100.0);
        assert!(!p.perturbs && p.warning().is_none(), "{p:?}");
        let one = vec![(8, vec![s(1e3, 2e3, 1.0, 2.0)])];
        let p = SoakPerturbation::from_samples(&one, 100.0);
        assert_eq!(p.points[0].latency, None);
        assert!(!p.perturbs && p.warning().is_none());
    }
}
