//! The run-to-run spread of repeated runs of one configuration, as `wulf
//! run --repeat N` records it in each result (`run_to_run`), so that a later
//! comparison of single runs has a measured floor.

use crate::result::{BandSpread, SweepResult};
use crate::stats::hier_bootstrap::{log_spread, run_figure};

use super::floor::one_run_floor;
use super::{common_sizes, runs, SIZE_BANDS};

/// Per size band, the spread of the band figure over `repeats` (results
/// of one transport and mode); bands without a size every repetition
/// measured, or with fewer than two repetitions, are left out.
pub fn band_spreads(repeats: &[SweepResult]) -> Vec<BandSpread> {
    let common = common_sizes(repeats, repeats);
    SIZE_BANDS
        .iter()
        .filter_map(|&(band, lo, hi)| {
            let sizes: Vec<u64> = common
                .iter()
                .copied()
                .filter(|&s| s >= lo && s <= hi)
                .collect();
            let figures: Option<Vec<f64>> = runs(repeats, &sizes)
                .iter()
                .map(|r| run_figure(r))
                .collect();
            let (log_sd, df) = log_spread(&figures?)?;
            Some(BandSpread {
                band: band.into(),
                min_bytes: lo,
                max_bytes: hi,
                sizes: sizes.len() as u64,
                log_sd,
                df: df as u32,
                one_run_floor_fraction: one_run_floor(log_sd, df),
            })
        })
        .collect()
}
