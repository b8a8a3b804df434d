//! How to compare: the intervals' level, the equivalence margin, the
//! bootstrap's size and its stop function.

use crate::stats::hier_bootstrap::BootstrapOptions;

/// 1 - the coverage of the intervals, unless told otherwise.
pub const DEFAULT_LEVEL: f64 = 0.05;

/// The equivalence margin, as a fraction: "no change" needs the whole
/// widened interval within +-10%, unless `--margin` says otherwise.
pub const DEFAULT_MARGIN: f64 = 0.10;

/// How to compare.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// 1 - the intervals' coverage.
    pub level: f64,
    /// `--noise-floor`, as a fraction, replacing the estimated floor.
    pub noise_floor: Option<f64>,
    /// `--margin`, as a fraction: the equivalence margin of "no change".
    pub margin: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Whether to stop (the command's stop flag): the bootstrap looks at
    /// it between resamples, so the first Ctrl-C ends a long compare. A
    /// function the caller gives, so that `analysis` reads no process
    /// state itself.
    pub stop: fn() -> bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            level: DEFAULT_LEVEL,
            noise_floor: None,
            margin: DEFAULT_MARGIN,
            resamples: BootstrapOptions::default().resamples,
            stop: || false,
        }
    }
}

/// Most trials one band's bootstrap draws in all (resamples x trials):
/// above it the resamples are fewer, at least [`MIN_RESAMPLES`]. A band of
/// a default sweep draws far less (2,000 x 40 sizes x 5,000 trials x 2
/// sides is 8 x 10^8); files of millions of trials once made the 2,000
/// resamples take many minutes.
pub const MAX_BOOTSTRAP_DRAWS: usize = 1 << 31;

/// Fewest resamples of a band's bootstrap whatever its trials.
pub const MIN_RESAMPLES: usize = 200;
