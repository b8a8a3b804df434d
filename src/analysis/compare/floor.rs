//! The between-run noise floor: the smallest change `wulf compare` will
//! call a change.
//!
//! # The rule
//!
//! Two runs of the same configuration on the same machine differ by more
//! than their trials' intervals say: each run gets its own CPU placement,
//! page layout and host load. The floor of a band is the change two groups
//! of runs of the *same* configuration stay within in about 95% of cases,
//! the largest of three terms (in log space, where it is symmetric):
//!
//! * 3%: below it the trials' own intervals (the sweep's default precision
//!   is 2%) cannot separate two medians;
//! * the runs' term, when a side has two or more runs: `t(0.975, df) * s *
//!   sqrt(1/n_a + 1/n_b)`, with `s` the standard deviation of ln(band
//!   figure) between the runs of a side (pooled over the sides, `df`
//!   degrees of freedom) and `n_a`, `n_b` the runs per side
//!   ([`crate::stats::hier_bootstrap::noise_bound`]);
//! * the machine's term, `f1`: the floor of one run against one that
//!   `wulf run --repeat N` recorded in the files (`run_to_run`, the largest
//!   if several), else the built-in default [`DEFAULT_ONE_RUN_FLOORS`],
//!   stated as such in the output. A few runs underestimate a heavy-tailed
//!   spread (a run that met a busy CPU is 100 times slower), so what the
//!   machine is known to do bounds the floor from below. It is not divided
//!   by the number of runs: runs made one after another share the
//!   machine's state, whose load changes over minutes, so averaging them
//!   does not average that out (`bench/compare_aa.sh` saw three-run groups
//!   differ as much as single runs).
//!
//! `--noise-floor PCT` replaces all three.

use crate::stats::hier_bootstrap::noise_bound;

/// The least floor, as a fraction.
pub const MIN_FLOOR_FRACTION: f64 = 0.03;

/// The built-in floors of one run against one, `(transport, floor per
/// band of [`super::SIZE_BANDS`])`, as fractions: the 97.5th percentile of
/// the change between two runs over every pair of 48 `wulf sweep` runs of
/// 3 to 4 s (A/A pairs) made over an hour on the 2-vCPU machine wulf was
/// developed on, shared with other engineers' builds (load average 5 to 7).
/// The 97.5th rather than the 95th: the load changes from one half-hour to
/// the next, and the 95th percentile of one half-hour left 92% of the next
/// one's A/A verdicts at "no change". Busy-polling shm suffers most from a
/// CPU it has to share: its runs differed up to 500-fold below 64 B. Other
/// transports get the larger of the two per band.
pub const DEFAULT_ONE_RUN_FLOORS: [(&str, [f64; 5]); 2] = [
    ("shm", [575.07, 136.5, 88.62, 16.51, 5.98]),
    ("tcp", [0.76, 0.72, 0.75, 2.34, 1.69]),
];

/// Where a floor came from: the term that set it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloorSource {
    /// `--noise-floor`: given, not estimated.
    Given,
    /// The spread between the runs compared.
    Runs {
        /// Standard deviation of ln(run figure).
        log_sd: f64,
        /// Its degrees of freedom.
        df: usize,
    },
    /// The one-run floor `wulf run --repeat N` recorded in the files.
    Recorded {
        /// Its N.
        repetitions: usize,
    },
    /// The built-in one-run floor ([`DEFAULT_ONE_RUN_FLOORS`]).
    Default,
    /// The least floor, [`MIN_FLOOR_FRACTION`].
    Minimum,
}

impl FloorSource {
    /// A short word for tables.
    pub fn word(self) -> &'static str {
        match self {
            FloorSource::Given => "given",
            FloorSource::Runs { .. } => "runs",
            FloorSource::Recorded { .. } => "recorded",
            FloorSource::Default => "default",
            FloorSource::Minimum => "minimum",
        }
    }
}

/// The floor of one band or figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    /// The least change called a change, as a fraction of the time
    /// (0.1: B 10% slower, or A 10% slower, i.e. B's time below 1/1.1).
    pub fraction: f64,
    /// The term that set it.
    pub source: FloorSource,
}

impl Floor {
    /// Whether a time ratio (B / A) lies beyond the floor either way; the
    /// floor is symmetric in log space, so "A faster" and "B faster" need
    /// the same evidence.
    pub fn exceeded_by(&self, ratio: f64) -> bool {
        let f = 1.0 + self.fraction;
        ratio > f || ratio * f < 1.0
    }
}

/// What the floor of one band or figure is estimated from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FloorInputs<'a> {
    /// `--noise-floor`, as a fraction.
    pub given: Option<f64>,
    /// Pooled spread `(s, df)` of the runs compared.
    pub runs: Option<(f64, usize)>,
    /// The largest one-run floor recorded in the files for the band, with
    /// the repetitions it came from.
    pub recorded: Option<(f64, usize)>,
    /// The band whose default applies.
    pub band: &'static str,
    /// The transport whose default applies (A's).
    pub transport: &'a str,
}

/// The floor by the rule of the module notes, for `n_a` and `n_b` runs.
pub fn floor(inputs: &FloorInputs<'_>, n_a: usize, n_b: usize) -> Floor {
    if let Some(f) = inputs.given {
        return Floor {
            fraction: f,
            source: FloorSource::Given,
        };
    }
    let (one_run, machine) = match inputs.recorded {
        Some((f, repetitions)) => (f, FloorSource::Recorded { repetitions }),
        None => (
            default_one_run_floor(inputs.transport, inputs.band),
            FloorSource::Default,
        ),
    };
    let mut terms = vec![
        (MIN_FLOOR_FRACTION.ln_1p(), FloorSource::Minimum),
        (one_run.ln_1p(), machine),
    ];
    if let Some((log_sd, df)) = inputs.runs {
        let bound = noise_bound(log_sd, df, n_a, n_b).ln();
        terms.push((bound, FloorSource::Runs { log_sd, df }));
    }
    let (log_floor, source) =
        terms
            .into_iter()
            .fold((f64::NEG_INFINITY, FloorSource::Minimum), |best, t| {
                if t.0 > best.0 {
                    t
                } else {
                    best
                }
            });
    Floor {
        fraction: log_floor.exp_m1(),
        source,
    }
}

/// The floor of one run against one that `log_sd` over `df + 1` repeated
/// runs gives (what `wulf run --repeat` records), at least the minimum.
pub fn one_run_floor(log_sd: f64, df: usize) -> f64 {
    (noise_bound(log_sd, df, 1, 1) - 1.0).max(MIN_FLOOR_FRACTION)
}

/// The built-in one-run floor of `band` for `transport` (see
/// [`DEFAULT_ONE_RUN_FLOORS`]).
pub fn default_one_run_floor(transport: &str, band: &str) -> f64 {
    let Some(k) = super::SIZE_BANDS.iter().position(|b| b.0 == band) else {
        return f64::INFINITY;
    };
    match DEFAULT_ONE_RUN_FLOORS.iter().find(|d| d.0 == transport) {
        Some(d) => d.1[k],
        None => DEFAULT_ONE_RUN_FLOORS
            .iter()
            .map(|d| d.1[k])
            .fold(0.0, f64::max),
    }
}
