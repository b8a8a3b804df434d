//! `wulf tune tcp`: which TCP settings make this path fastest, and what to
//! change.
//!
//! Seeds 000 and 002 show socket buffers, the MTU and RFC 1323 options
//! changing TCP throughput by up to 2x, and end with advice (256 KB buffers,
//! larger MTUs, RFC 1323 on). This module automates that study: every
//! configuration is an ordinary sweep producing an ordinary result file
//! (the command in `commands::tune` runs them), and the functions here turn
//! the results into advice:
//!
//! * [`plan`]: the configurations (one factor at a time from a baseline)
//!   and the sharing of the time budget;
//! * [`bands`]: the best configuration per size band, and whether it beats
//!   the baseline by more than the noise (confidence intervals);
//! * [`baseline`]: the baseline measured first and last, merged so that a
//!   difference must also exceed the machine's drift over the session;
//! * [`sysctl`]: clamped buffer requests and the bandwidth-delay product
//!   turned into sysctls to raise;
//! * [`recommend`]: the bandwidth-delay product and every recommendation;
//! * [`wake`]: `--wake-up`, the remedies against a halted CPU's wake-up
//!   on every message and their advice;
//! * [`summary`]: `tune.json`; [`text`]: what the terminal shows.
//!
//! Everything here is pure: no sockets, files or clocks, so the logic is
//! tested on synthetic results.

pub mod bands;
pub mod baseline;
pub mod offload;
pub mod plan;
pub mod recommend;
pub mod summary;
pub mod sysctl;
pub mod text;
pub mod wake;

pub use plan::{Factor, TuneConfig};
pub use summary::{ConfigRun, TuneSummary, TUNE_SCHEMA_VERSION};
pub use sysctl::HostSysctls;

use bands::{BandBest, Comparison};
use recommend::{BandwidthDelay, Recommendation, Rfc1323State};

/// Everything derived from the measured configurations.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Best configuration per size band.
    pub bands: Vec<BandBest>,
    /// Every configuration against the baseline, band by band.
    pub comparisons: Vec<Comparison>,
    /// Bandwidth-delay product, when there are points to compute it from.
    pub bandwidth_delay: Option<BandwidthDelay>,
    /// RFC 1323 options of each host.
    pub rfc1323: Vec<Rfc1323State>,
    /// The advice.
    pub recommendations: Vec<Recommendation>,
    /// Doubts about the session as a whole (drift of the baseline).
    pub warnings: Vec<String>,
}

/// Analyse the runs of a tuning session; `hosts` are the sysctls of this
/// host and, when it is another machine, the peer's.
pub fn analyse(runs: &[ConfigRun], hosts: &[HostSysctls]) -> Analysis {
    let effective = baseline::effective_runs(runs);
    let comparisons = bands::all_comparisons(&effective);
    let bandwidth_delay = recommend::bandwidth_delay(&effective);
    let recommendations =
        recommend::recommend(&effective, &comparisons, bandwidth_delay.as_ref(), hosts);
    Analysis {
        bands: bands::best_by_band(&effective),
        comparisons,
        bandwidth_delay,
        rfc1323: hosts.iter().map(Rfc1323State::of).collect(),
        recommendations,
        warnings: baseline::drift(runs)
            .as_ref()
            .and_then(baseline::drift_warning)
            .into_iter()
            .chain(few_trials_warning(runs))
            .collect(),
    }
}

/// A warning when most points have too few trials for a 95% interval, so
/// that hardly anything can be told apart from the noise.
fn few_trials_warning(runs: &[ConfigRun]) -> Option<String> {
    let points = runs.iter().flat_map(|r| &r.points);
    let total = points.clone().count();
    let short = points.filter(|p| !p.has_ci()).count();
    (short * 2 > total).then(|| {
        format!(
            "{short} of {total} points got fewer than {} trials, too few for a 95% interval \
             of the median: few differences can be told from the noise; a larger --budget \
             or fewer --sizes helps",
            bands::MIN_TRIALS_FOR_CI
        )
    })
}
