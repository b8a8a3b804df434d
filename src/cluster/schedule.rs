//! The order in which a matrix measures its pairs: the round-robin
//! tournament (the circle method), as JSC's LinkTest does. N nodes give
//! N-1 rounds (N odd: N rounds, one node sitting out each) of disjoint
//! pairs, so every pair meets exactly once and the pairs of a round can be
//! measured at the same time without any node taking part twice.
//!
//! Memory and work per round are linear in N: a round is computed on its
//! own from its index, never the whole schedule at once.

use crate::result::matrix::Pattern;

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

/// Steps of `pattern` among `n` nodes (0 for fewer than two).
pub fn steps(pattern: Pattern, n: usize) -> usize {
    if n < 2 {
        return 0;
    }
    match pattern {
        Pattern::Pairs => 2 * rounds(n),
        Pattern::Shift => n - 1,
        Pattern::Bisection => 2,
        Pattern::Multipair => n / 2,
    }
}

/// The directed pairs (measuring node or sender first) of step `s` of
/// `pattern` among `n` nodes, all measured at the same time.
pub fn step(pattern: Pattern, n: usize, s: usize) -> Vec<Pair> {
    let half = n / 2;
    match pattern {
        Pattern::Pairs => round(n, s / 2)
            .into_iter()
            .map(|(a, b)| if s.is_multiple_of(2) { (a, b) } else { (b, a) })
            .collect(),
        Pattern::Shift => (0..n).map(|i| (i, (i + s + 1) % n)).collect(),
        Pattern::Bisection => (0..half)
            .map(|i| if s == 0 { (i, i + half) } else { (i + half, i) })
            .collect(),
        Pattern::Multipair => (0..=s.min(half.saturating_sub(1)))
            .map(|i| (i, i + half))
            .collect(),
    }
}

/// The tournament round a step of [`Pattern::Pairs`] belongs to; for the
/// other patterns, the step itself.
pub fn round_of(pattern: Pattern, s: usize) -> usize {
    if pattern == Pattern::Pairs {
        s / 2
    } else {
        s
    }
}

#[cfg(test)]
mod pattern_tests {
    use super::*;

    #[test]
    fn patterns_have_their_shapes() {
        assert_eq!(steps(Pattern::Pairs, 4), 6);
        assert_eq!(step(Pattern::Pairs, 4, 1).len(), 2);
        assert!(step(Pattern::Pairs, 4, 1).iter().all(|&(a, b)| a > b));
        assert_eq!(step(Pattern::Shift, 4, 0), [(0, 1), (1, 2), (2, 3), (3, 0)]);
        assert_eq!(step(Pattern::Shift, 4, 2), [(0, 3), (1, 0), (2, 1), (3, 2)]);
        assert_eq!(steps(Pattern::Shift, 4), 3);
        assert_eq!(step(Pattern::Bisection, 5, 0), [(0, 2), (1, 3)]);
        assert_eq!(step(Pattern::Bisection, 4, 1), [(2, 0), (3, 1)]);
        assert_eq!(steps(Pattern::Multipair, 6), 3);
        assert_eq!(step(Pattern::Multipair, 6, 0), [(0, 3)]);
        assert_eq!(step(Pattern::Multipair, 6, 2), [(0, 3), (1, 4), (2, 5)]);
        for p in [
            Pattern::Pairs,
            Pattern::Shift,
            Pattern::Bisection,
            Pattern::Multipair,
        ] {
            assert_eq!(steps(p, 1), 0);
        }
    }
}
