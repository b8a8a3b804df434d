//! The bandwidth stream's size, fitted to the budget over a slow link
//! (issue 44: a budget is a deadline).
//!
//! A cell's stream point takes at least
//! [`crate::sweep::link_fit::LEAST_BLOCKS`] blocks of at least one
//! message each (the engine never keeps fewer trials, so that every point
//! has a 95% interval). Over the 100 Mbit/s links of `--lab fe` one 4 MiB
//! message takes 0.36 s, so a cell's stream alone took 2.9 s however
//! short its share: a 4-node matrix with `--budget 12s` measured for
//! 27.5 s, whether the machine was idle or busy. Measuring fewer trials
//! would keep the budget but leave points without an interval; a shorter
//! message keeps both: over a link this slow a stream of 256 KiB messages
//! already runs at the link's rate (its window holds several messages),
//! so the bandwidth figure does not change, only the time it takes.
//!
//! So when the size was not given (`--bandwidth-size`), it is halved from
//! 4 MiB until the stream's fewest blocks fit in half a cell's stream
//! share at the slowest node's link rate (the other half is the sweep's
//! set-up and calibration), never below [`LEAST_FITTED_BYTES`]. The rate
//! is the nodes' own interface limits (speed, shaper) as their
//! fingerprints read them; where none is known (a cluster whose
//! interfaces say no speed) nothing is fitted and the budget's own
//! warnings say what overran. A size the user gave is kept, and the
//! budget warns when it cannot hold it. Pure: the caller passes the
//! nodes' fingerprints and the plan's numbers.

use std::time::Duration;

use crate::result::matrix::MatrixNode;
use crate::result::{LinkEfficiency, Mode};
use crate::sweep::link_fit::LEAST_BLOCKS;
use crate::sys::IpVersion;

/// The least size the stream is fitted down to: below it a stream's
/// messages are small enough for per-message costs to count against a
/// fast link's rate, which the figure would then understate.
pub const LEAST_FITTED_BYTES: u64 = 64 << 10;

/// Share of a cell's stream budget its fewest blocks may take: the rest
/// is set-up, calibration and a block under way.
const FEWEST_BLOCKS_SHARE: f64 = 0.5;

/// What fitting the stream to the budget decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The stream size to measure with, bytes.
    pub bytes: u64,
    /// Why it is smaller than asked, for the result's warnings; None when
    /// it was kept.
    pub note: Option<String>,
}

/// A cell's share of the budget for its bandwidth stream: the rounds'
/// share (`rounds`) over `slots` slots, halved when the pairs stream again
/// alone after each step, then the stream's weight among a cell's parts
/// (`other_parts` parts of weight 1 beside the stream's 2).
pub fn stream_share(rounds: Duration, slots: usize, alone: bool, other_parts: u32) -> Duration {
    let slot = rounds / slots.max(1) as u32;
    let slot = if alone { slot / 2 } else { slot };
    slot.mul_f64(2.0 / (2.0 + f64::from(other_parts)))
}

/// The slowest egress among `nodes`' interfaces toward the coordinator
/// (each node's first interface: speed or shaper), bits/s; None when no
/// node's limit is known.
pub fn slowest_egress_bits_per_s(nodes: &[MatrixNode]) -> Option<f64> {
    nodes
        .iter()
        .filter_map(|n| n.host.as_ref()?.interfaces.first())
        .filter_map(|i| {
            LinkEfficiency::for_path(Some(i), None, Mode::Stream, IpVersion::V4, true, None)
        })
        .map(|l| l.limit_bits_per_s)
        .filter(|r| r.is_finite() && *r > 0.0)
        .min_by(f64::total_cmp)
}

/// The stream size for `asked` bytes when `share` is a cell's stream
/// budget and the slowest link runs at `rate_bits_per_s`: halved until
/// the fewest blocks fit (see the module notes), never below
/// [`LEAST_FITTED_BYTES`] nor above `asked`.
pub fn fit(asked: u64, share: Duration, rate_bits_per_s: f64) -> Fitted {
    let fewest_s = |bytes: u64| LEAST_BLOCKS as f64 * bytes as f64 * 8.0 / rate_bits_per_s;
    let room_s = share.as_secs_f64() * FEWEST_BLOCKS_SHARE;
    let mut bytes = asked;
    while bytes > LEAST_FITTED_BYTES && fewest_s(bytes) > room_s {
        bytes = (bytes / 2).max(LEAST_FITTED_BYTES);
    }
    let note = (bytes < asked).then(|| {
        format!(
            "the bandwidth stream is {} messages, not {}: at the slowest link's {} a {} stream's \
             fewest {LEAST_BLOCKS} blocks take {:.2} s, more than a cell's share of the budget \
             ({:.2} s for its stream) allows; the figure is the link's rate either way (give \
             --bandwidth-size to keep {}, and a --budget that holds it)",
            crate::units::format_bytes(bytes),
            crate::units::format_bytes(asked),
            crate::units::format_bits_per_s(rate_bits_per_s),
            crate::units::format_bytes(asked),
            fewest_s(asked),
            share.as_secs_f64(),
            crate::units::format_bytes(asked),
        )
    });
    Fitted { bytes, note }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FE: f64 = 94.9e6;

    #[test]
    fn a_4_node_fe_matrix_in_12_s_streams_what_fits() {
        // 6 steps in the rounds' 9.6 s, latency beside the stream: 1.07 s
        // for the stream, half of it for 8 blocks: 512 KiB (0.35 s), not
        // 1 MiB (0.71 s).
        let share = stream_share(Duration::from_millis(9600), 6, false, 1);
        assert_eq!(share.as_millis(), 1066);
        let f = fit(4 << 20, share, FE);
        assert_eq!(f.bytes, 512 << 10);
        let note = f.note.expect("said why");
        assert!(note.contains("512 KiB") && note.contains("4 MiB"), "{note}");
    }

    #[test]
    fn a_size_that_fits_is_kept_and_a_tiny_share_stops_at_the_least() {
        let ge = fit(4 << 20, Duration::from_secs(2), 941e6);
        assert_eq!(
            ge,
            Fitted {
                bytes: 4 << 20,
                note: None
            }
        );
        let tiny = fit(4 << 20, Duration::from_millis(1), FE);
        assert_eq!(tiny.bytes, LEAST_FITTED_BYTES);
        // Never above what was asked.
        assert_eq!(fit(1000, Duration::from_millis(1), FE).bytes, 1000);
    }

    #[test]
    fn the_stream_share_follows_the_cells_parts() {
        let s = Duration::from_secs(12);
        assert_eq!(stream_share(s, 6, false, 0), Duration::from_secs(2));
        assert_eq!(stream_share(s, 6, true, 0), Duration::from_secs(1));
        assert_eq!(stream_share(s, 6, false, 2), Duration::from_secs(1));
    }
}
