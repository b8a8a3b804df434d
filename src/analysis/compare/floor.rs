//! The between-run noise floor: the smallest change `wulf compare` will
//! call a change.
//!
//! # The rule
//!
//! Two runs of the same configuration on the same machine differ by more
//! than their trials' intervals say: each run gets its own CPU placement,
//! page layout and host load. The floor of a band is the change two groups
//! of runs of the *same* configuration stay within in 95% of cases:
//!
//! `floor = max(3%, exp(t(0.975, df) * s * sqrt(1/n_a + 1/n_b)) - 1)`
//!
//! where `n_a`, `n_b` are the runs per side and `s` is the standard
//! deviation of ln(band figure) between runs with `df` degrees of freedom
//! ([`crate::stats::hier_bootstrap::noise_bound`]). `s` comes from the
//! first of:
//!
//! 1. `--noise-floor PCT`: the floor is PCT, nothing is estimated;
//! 2. the runs given, when a side has two or more (pooled over the sides);
//! 3. the spread `wulf run --repeat N` recorded in the files (`run_to_run`;
//!    the largest when several files carry one);
//! 4. the built-in default, [`DEFAULT_SPREADS`], measured on the machine
//!    wulf was developed on and stated as such in the output.
//!
//! 3% is the least: below it the trials' own intervals (the sweep's
//! default precision is 2%) cannot separate two medians.

use crate::stats::hier_bootstrap::noise_bound;

/// The least floor, as a fraction.
pub const MIN_FLOOR_FRACTION: f64 = 0.03;

/// The built-in between-run spreads, `(transport, s per band of
/// [`super::SIZE_BANDS`])`: the standard deviation of ln(band figure) over
/// eight 4-second `wulf sweep shm` and `wulf sweep tcp` runs made a minute
/// apart, interleaved, on the 2-vCPU machine wulf was developed on, shared
/// with other builds (load average 5 to 7). Busy-polling shm suffers most
/// from a CPU it has to share: its runs differed up to 400-fold below
/// 64 KiB. Other transports get the larger of the two per band. Used only
/// when nothing better is known, and said so.
pub const DEFAULT_SPREADS: [(&str, [f64; 5]); 2] = [
    ("shm", [1.805, 1.891, 1.850, 0.832, 0.473]),
    ("tcp", [0.121, 0.130, 0.123, 0.334, 0.132]),
];

/// Degrees of freedom of [`DEFAULT_SPREADS`] (eight runs each).
pub const DEFAULT_DF: usize = 7;

/// Where a floor's between-run spread came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloorSource {
    /// `--noise-floor`: given, not estimated.
    Given,
    /// The runs compared (sides with two or more runs).
    Runs {
        /// Standard deviation of ln(run figure).
        log_sd: f64,
        /// Its degrees of freedom.
        df: usize,
    },
    /// Recorded in the files by `wulf run --repeat N`.
    Recorded {
        /// Standard deviation of ln(run figure).
        log_sd: f64,
        /// Its degrees of freedom (N - 1).
        df: usize,
    },
    /// The built-in default ([`DEFAULT_SPREADS`]).
    Default {
        /// Standard deviation of ln(run figure).
        log_sd: f64,
        /// Its degrees of freedom.
        df: usize,
    },
}

impl FloorSource {
    /// A short word for tables.
    pub fn word(self) -> &'static str {
        match self {
            FloorSource::Given => "given",
            FloorSource::Runs { .. } => "runs",
            FloorSource::Recorded { .. } => "recorded",
            FloorSource::Default { .. } => "default",
        }
    }
}

/// The floor of one band or figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    /// The least change called a change, as a fraction of the time
    /// (0.1: B 10% slower, or A 10% slower, i.e. B's time below 1/1.1).
    pub fraction: f64,
    /// Where its spread came from.
    pub source: FloorSource,
    /// The spread gave less than [`MIN_FLOOR_FRACTION`], which applies.
    pub at_minimum: bool,
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
    /// The largest spread `(s, df)` recorded in the files for the band.
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
            at_minimum: false,
        };
    }
    let (source, s, df) = match (inputs.runs, inputs.recorded) {
        (Some((log_sd, df)), _) => (FloorSource::Runs { log_sd, df }, log_sd, df),
        (None, Some((log_sd, df))) => (FloorSource::Recorded { log_sd, df }, log_sd, df),
        (None, None) => {
            let (log_sd, df) = default_spread(inputs.transport, inputs.band);
            (FloorSource::Default { log_sd, df }, log_sd, df)
        }
    };
    let spread = noise_bound(s, df, n_a, n_b) - 1.0;
    Floor {
        fraction: spread.max(MIN_FLOOR_FRACTION),
        source,
        at_minimum: !(spread >= MIN_FLOOR_FRACTION),
    }
}

/// The built-in spread of `band` for `transport` (see [`DEFAULT_SPREADS`]).
pub fn default_spread(transport: &str, band: &str) -> (f64, usize) {
    let Some(k) = super::SIZE_BANDS.iter().position(|b| b.0 == band) else {
        return (f64::INFINITY, DEFAULT_DF);
    };
    let s = match DEFAULT_SPREADS.iter().find(|d| d.0 == transport) {
        Some(d) => d.1[k],
        None => DEFAULT_SPREADS.iter().map(|d| d.1[k]).fold(0.0, f64::max),
    };
    (s, DEFAULT_DF)
}
