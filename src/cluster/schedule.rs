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

/// The order in which the steps of `pattern` among `n` nodes are
/// measured, from `seed` (recorded in the result, `--seed` repeats it).
///
/// `pairs`: the tournament's rounds in a random order, as LinkTest does,
/// each round's two directions in a random order of their own, so that a
/// load spike or a drift over the run falls on different pairs each time
/// and a matrix repeated with another seed does not repeat its blind
/// spots. The other patterns keep their order: their steps are a series
/// (multipair's k = 1 .. N/2 pairs, shift's distances).
pub fn order(pattern: Pattern, n: usize, seed: u64) -> Vec<usize> {
    let steps = steps(pattern, n);
    if pattern != Pattern::Pairs {
        return (0..steps).collect();
    }
    let mut rng = SplitMix(seed);
    let mut rounds: Vec<usize> = (0..steps / 2).collect();
    rng.shuffle(&mut rounds);
    rounds
        .into_iter()
        .flat_map(|r| {
            let first = (rng.next() & 1) as usize;
            [2 * r + first, 2 * r + 1 - first]
        })
        .collect()
}

/// Shuffle `items` (the pairs of a round, measured one at a time with
/// `--serial`) from `seed`.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    SplitMix(seed).shuffle(items);
}

/// SplitMix64 (Steele, Lea and Flood 2014): a few lines of our own rather
/// than a crate's generator, so that a recorded seed gives the same order
/// in every later version of wulf.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher-Yates; the slight modulo bias is of no matter for an order.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_order_of_every_step_and_another_seed_another() {
        for n in 2..=12 {
            let a = order(Pattern::Pairs, n, 42);
            assert_eq!(
                a,
                order(Pattern::Pairs, n, 42),
                "n={n}: same seed, same order"
            );
            let mut sorted = a.clone();
            sorted.sort();
            assert_eq!(sorted, (0..steps(Pattern::Pairs, n)).collect::<Vec<_>>());
            // A round's two directions stay together.
            for w in a.chunks(2) {
                assert_eq!(w[0] / 2, w[1] / 2, "n={n}: {a:?}");
            }
        }
        // SplitMix64's first output for seed 0 (its reference value), so
        // a change of generator cannot pass unseen.
        assert_eq!(SplitMix(0).next(), 0xe220_a839_7b1d_cdaf);
        let orders: std::collections::HashSet<Vec<usize>> =
            (0..20).map(|s| order(Pattern::Pairs, 8, s)).collect();
        assert!(orders.len() > 10, "seeds give different orders");
        assert_eq!(order(Pattern::Shift, 5, 7), vec![0, 1, 2, 3]);
    }
}
