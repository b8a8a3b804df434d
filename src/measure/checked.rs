//! Checked timed blocks (`--integrity all`): every timed message carries
//! the integrity pattern and every one received is checked, so a sweep
//! vouches for each byte it timed, not only for the separate pass of
//! three messages per size that `--integrity` runs.
//!
//! Why not the integrity pass's loop: it computes the pattern byte by
//! byte (about a nanosecond a byte), which inside a timed loop would add
//! 60 us to a 64 KiB message. Here the pattern of a size is computed once
//! per size, outside the timed region ([`Patterns`]); a message is then a
//! copy of it (`memcpy`) with its first bytes overwritten by a stamp that
//! depends on the operation number, and the check is the stamp plus a
//! `memcmp` of the rest. The stamp catches a stale or repeated message,
//! the rest a shifted, truncated, corrupted or crossed one (both depend
//! on the direction). What stays inside the timed region: one copy per
//! message sent and one comparison per message received (their cost is
//! measured in docs/validation.md, "integrity of every message").
//!
//! Stream mode sends one message per call here (the plain mode hands a
//! window of messages from one buffer to each call), so each can carry
//! its own stamp.

use std::io;

use super::loops::{BlockMeasure, Pools, Readings, CLIENT_TO_SERVER, SERVER_TO_CLIENT};
use crate::message::pattern::pattern_byte;
use crate::result::Mode;
use crate::transport::Endpoint;

/// Leading bytes of a message that carry its operation number.
const STAMP_BYTES: usize = 8;
/// The operation number the fixed part of every message is computed for
/// (never a real operation's: blocks count from 0).
const FIXED_OP: u64 = u64::MAX;

/// Bytes the patterns of checked blocks hold at most for messages of up
/// to `max_bytes` (one per direction): a server counts them against its
/// `--max-memory` with the two buffer pools, as any block a client asks
/// for may be a checked one (they were once left out: a server at its
/// limit allocated twice the largest message more).
pub fn patterns_bytes(max_bytes: u64) -> u64 {
    max_bytes.saturating_mul(2)
}

/// The fixed part of each direction's messages at the current size,
/// computed outside the timed region when the size changes.
#[derive(Default)]
pub struct Patterns {
    by_dir: [Vec<u8>; 2],
}

impl Patterns {
    /// Make the patterns `bytes` long (no work when they already are).
    pub fn prepare(&mut self, bytes: usize) {
        for (dir, p) in self.by_dir.iter_mut().enumerate() {
            if p.len() != bytes {
                p.clear();
                // Exactly: amortised growth could hold up to twice the
                // largest size, past what `patterns_bytes` counts.
                p.reserve_exact(bytes);
                p.extend((0..bytes).map(|i| pattern_byte(i, FIXED_OP, dir as u64)));
            }
        }
    }

    /// Fill `out` as message `op` in direction `dir`: the fixed part and
    /// the stamp.
    #[inline]
    pub fn fill(&self, out: &mut [u8], op: u64, dir: u64) {
        out.copy_from_slice(&self.by_dir[dir as usize][..out.len()]);
        for (i, b) in out.iter_mut().take(STAMP_BYTES).enumerate() {
            *b = pattern_byte(i, op, dir);
        }
    }

    /// Whether `inp` is message `op` in direction `dir`; the error (built
    /// only on a mismatch) names the size and the first wrong byte.
    #[inline]
    pub fn check(&self, inp: &[u8], op: u64, dir: u64, side: &str) -> Option<io::Error> {
        let stamp = inp.len().min(STAMP_BYTES);
        let stamp_ok = inp[..stamp]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern_byte(i, op, dir));
        if stamp_ok && inp[stamp..] == self.by_dir[dir as usize][stamp..inp.len()] {
            return None;
        }
        Some(self.mismatch(inp, op, dir, side))
    }

    #[cold]
    fn mismatch(&self, inp: &[u8], op: u64, dir: u64, side: &str) -> io::Error {
        let mut expected = self.by_dir[dir as usize][..inp.len()].to_vec();
        self.fill(&mut expected, op, dir);
        let at = inp
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "integrity check failed on the {side}: {}-byte timed message {op}, byte offset {at}: expected 0x{:02x}, received 0x{:02x}",
                inp.len(),
                expected[at],
                inp[at]
            ),
        )
    }
}

/// The measuring side's timed part of a checked block (the primer was
/// sent): returns the first mismatch, if any, after the whole block.
pub fn client_timed(
    ep: &mut dyn Endpoint,
    pools: &mut Pools,
    mode: Mode,
    repeats: u64,
) -> io::Result<(BlockMeasure, Option<io::Error>)> {
    let Pools {
        tx,
        rx,
        checked,
        helpers,
    } = pools;
    let mut mismatch = None;
    let readings = Readings::start(helpers);
    for op in 0..repeats {
        let out = tx.next_buf();
        checked.fill(out, op, CLIENT_TO_SERVER);
        match mode {
            Mode::Pingpong => {
                ep.send(out)?;
                let inp = rx.next_buf();
                ep.recv(inp)?;
                note(
                    &mut mismatch,
                    checked.check(inp, op, SERVER_TO_CLIENT, "client"),
                );
            }
            Mode::Stream => ep.send(out)?,
            Mode::Bidir => {
                let inp = rx.next_buf();
                ep.exchange(out, inp)?;
                note(
                    &mut mismatch,
                    checked.check(inp, op, SERVER_TO_CLIENT, "client"),
                );
            }
        }
    }
    Ok((readings.finish(helpers), mismatch))
}

/// The peer's timed part of a checked block (its stream go, if any, was
/// sent); the clock started before the go, as in the plain loop.
pub fn server_timed(
    ep: &mut dyn Endpoint,
    pools: &mut Pools,
    mode: Mode,
    repeats: u64,
) -> io::Result<Option<io::Error>> {
    let Pools {
        tx, rx, checked, ..
    } = pools;
    let mut mismatch = None;
    for op in 0..repeats {
        let inp = rx.next_buf();
        match mode {
            Mode::Pingpong => {
                ep.recv(inp)?;
                note(
                    &mut mismatch,
                    checked.check(inp, op, CLIENT_TO_SERVER, "server"),
                );
                let out = tx.next_buf();
                checked.fill(out, op, SERVER_TO_CLIENT);
                ep.send(out)?;
            }
            Mode::Stream => {
                ep.recv(inp)?;
                note(
                    &mut mismatch,
                    checked.check(inp, op, CLIENT_TO_SERVER, "server"),
                );
            }
            Mode::Bidir => {
                let out = tx.next_buf();
                checked.fill(out, op, SERVER_TO_CLIENT);
                ep.exchange(out, inp)?;
                note(
                    &mut mismatch,
                    checked.check(inp, op, CLIENT_TO_SERVER, "server"),
                );
            }
        }
    }
    Ok(mismatch)
}

fn note(first: &mut Option<io::Error>, e: Option<io::Error>) {
    if first.is_none() {
        *first = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_passes_only_as_itself() {
        let mut p = Patterns::default();
        for bytes in [1usize, 7, 8, 9, 4099] {
            p.prepare(bytes);
            let mut m = vec![0u8; bytes];
            p.fill(&mut m, 5, 0);
            assert!(p.check(&m, 5, 0, "t").is_none(), "{bytes} B");
            assert!(p.check(&m, 6, 0, "t").is_some(), "{bytes} B stale");
            assert!(p.check(&m, 5, 1, "t").is_some(), "{bytes} B crossed");
            let last = bytes - 1;
            m[last] ^= 0x10;
            let e = p.check(&m, 5, 0, "t").unwrap().to_string();
            assert!(
                e.contains(&format!("{bytes}-byte timed message 5, byte offset {last}")),
                "{e}"
            );
        }
    }

    #[test]
    fn patterns_follow_the_size() {
        let mut p = Patterns::default();
        p.prepare(100);
        p.prepare(10);
        let mut m = vec![0u8; 10];
        p.fill(&mut m, 0, 1);
        assert!(p.check(&m, 0, 1, "t").is_none());
        let mut shifted = vec![0u8; 10];
        shifted[1..].copy_from_slice(&m[..9]);
        assert!(p.check(&shifted, 0, 1, "t").is_some());
    }

    #[test]
    fn the_patterns_never_hold_more_than_is_counted() {
        let mut p = Patterns::default();
        // Growing sizes, as a sweep's: each growth exactly to the size.
        for bytes in [100usize, 150, 1000, 1001, 10, 1001] {
            p.prepare(bytes);
        }
        let held: usize = p.by_dir.iter().map(Vec::capacity).sum();
        assert!(
            held as u64 <= patterns_bytes(1001),
            "{held} bytes held, {} counted",
            patterns_bytes(1001)
        );
        assert_eq!(patterns_bytes(1001), 2002);
    }
}
