//! The order in which a matrix measures its pairs: the round-robin
//! tournament (the circle method), as JSC's LinkTest does. N nodes give
//! N-1 rounds (N odd: N rounds, one node sitting out each) of disjoint
//! pairs, so every pair meets exactly once and the pairs of a round can be
//! measured at the same time without any node taking part twice.
//!
//! Memory and work per round are linear in N: a round is computed on its
//! own from its index, never the whole schedule at once.

/// One pair of node indices, `a < b`.
pub type Pair = (usize, usize);

/// Rounds of a tournament among `n` nodes (0 for fewer than two).
pub fn rounds(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        n if n % 2 == 0 => n - 1,
        n => n,
    }
}

/// The pairs of round `r` (0-based, below [`rounds`]) among `n` nodes.
///
/// Circle method: with m = n rounded up to even, seat m-1 players on a
/// circle and one (the last, a bye when n is odd) in the middle; in round
/// r the middle meets seat r, and seats r-k and r+k (mod m-1) meet.
pub fn round(n: usize, r: usize) -> Vec<Pair> {
    let m = n + n % 2;
    if n < 2 || r >= m - 1 {
        return Vec::new();
    }
    let ring = m - 1;
    let mut pairs = Vec::with_capacity(m / 2);
    let mut add = |a: usize, b: usize| {
        // The extra player of an odd tournament is the bye.
        if a < n && b < n {
            pairs.push((a.min(b), a.max(b)));
        }
    };
    add(m - 1, r);
    for k in 1..m / 2 {
        add((r + ring - k) % ring, (r + k) % ring);
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_pair_meets_once_in_disjoint_rounds() {
        for n in 0..=33 {
            let mut met = HashSet::new();
            for r in 0..rounds(n) {
                let mut busy = HashSet::new();
                for (a, b) in round(n, r) {
                    assert!(a < b && b < n);
                    assert!(busy.insert(a) && busy.insert(b), "n={n} r={r}");
                    assert!(met.insert((a, b)), "n={n}: ({a},{b}) twice");
                }
                // Everyone plays, but one node when n is odd.
                assert_eq!(busy.len(), n - n % 2, "n={n} r={r}");
            }
            assert_eq!(met.len(), n * n.saturating_sub(1) / 2, "n={n}");
        }
    }
}
