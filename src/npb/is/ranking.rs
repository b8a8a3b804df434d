//! One IS ranking on one rank: bucket counts, the split of buckets among
//! ranks, the all-to-all of counts and keys, and the per-value counts that
//! give every key's global rank. Buffers are allocated once (and grown by
//! the untimed first ranking), so the timed rankings do not allocate.
//!
//! # How the keys reach their rank, and why this way
//!
//! NPB's buckets (the top bits of a key) decide which rank ranks which
//! keys: every rank counts its keys per bucket, the counts are summed over
//! the ranks, and each rank gets a contiguous run of buckets holding about
//! `N / P` keys. NPB then writes all its keys out bucket by bucket (a
//! scatter into 1024 places at once) before the all-to-all, and counts the
//! received keys per value.
//!
//! Only the split needs the buckets: a rank's keys need to be grouped by
//! the rank they go to, not by bucket. So here they are grouped by
//! destination, which is far cheaper than the 1024-way scatter (whose
//! stores miss the cache; measured on this project's machine, class A: 21
//! to 25 ms against 5 ms for a two-way split, 8M keys):
//!
//! * one rank: every key stays, and the all-to-all sends straight from the
//!   key array (no layout pass at all);
//! * two ranks: one pass splits the keys at the boundary value into two
//!   runs, with both write positions in registers (no branch to mispredict
//!   and no counter in memory to wait on);
//! * more ranks: NPB's scatter by bucket, which leaves each rank's buckets
//!   contiguous.
//!
//! The receiver then counts its keys per value in an array covering its
//! values (for class A on one rank, 2 MiB: it stays in the L2 cache), and
//! a running sum turns the counts into ranks. The keys exchanged, their
//! counts, the ranks and both verifications are those of NPB.

use anyhow::Result;
use bytemuck::cast_slice;

use super::params::{IsParams, TEST_KEYS};
use crate::comm::Communicator;

/// The most buckets of any class (NPB's `NUM_BUCKETS`, 2^10 from class W
/// up; class S has 2^9). Per-bucket arrays have this fixed length, so the
/// hot loops index them with a key's bucket masked to it and need no
/// bounds check.
const MAX_BUCKETS: usize = 1 << 10;

/// One counter per bucket.
type Buckets = [u32; MAX_BUCKETS];

/// The bucket of key `k`: its top bits. Keys lie below the class's
/// `max_key`, so `k >> shift` is below its bucket count, at most
/// [`MAX_BUCKETS`]; the mask changes nothing for them and lets the compiler
/// see that the index is in bounds.
#[inline(always)]
fn bucket_of(k: u32, shift: u32) -> usize {
    (k >> shift) as usize & (MAX_BUCKETS - 1)
}

/// Counts `keys` per bucket into `counts` (overwriting it).
fn count_buckets(keys: &[u32], shift: u32, counts: &mut Buckets) {
    counts.fill(0);
    for &k in keys {
        counts[bucket_of(k, shift)] += 1;
    }
}

/// Writes `keys` into `out` bucket by bucket, in their order within each
/// bucket: `at[b]` is where bucket `b`'s first key goes, and ends where
/// the next bucket begins. `out` must hold every key at the positions `at`
/// gives (the counts of [`count_buckets`] added up), or this panics.
fn scatter_by_bucket(keys: &[u32], shift: u32, at: &mut Buckets, out: &mut [i32]) {
    for &k in keys {
        let slot = &mut at[bucket_of(k, shift)];
        // Keys are below 2^31 (checked in `Ranker::new`): the 4-byte
        // integer NPB sends holds them.
        out[*slot as usize] = k as i32;
        *slot += 1;
    }
}

/// Splits `keys` into `out` in two runs, keeping their order within each:
/// first the keys below `bound`, which must number `below`, then the
/// others. `out` must be as long as `keys`, or this panics.
fn split_at_value(keys: &[u32], bound: u32, below: usize, out: &mut [i32]) {
    let (mut low, mut high) = (0, below);
    for &k in keys {
        // Both positions stay in registers and the choice is a
        // conditional move: the keys are random, a branch would be
        // mispredicted every other key.
        let up = k >= bound;
        out[if up { high } else { low }] = k as i32;
        low += usize::from(!up);
        high += usize::from(up);
    }
}

/// Counts the `keys` per value into `counts`, which covers the values
/// `lo..lo + counts.len()` and is cleared first; returns how many keys
/// fall outside them.
fn count_values(keys: &[i32], lo: usize, counts: &mut [u32]) -> usize {
    counts.fill(0);
    let mut outside = 0;
    for &k in keys {
        // One unsigned comparison checks both ends (a key below `lo`, or
        // negative, wraps to a huge offset) and proves the index in bounds.
        let v = (k as u32 as usize).wrapping_sub(lo);
        match counts.get_mut(v) {
            Some(c) => *c += 1,
            None => outside += 1,
        }
    }
    outside
}

/// Turns per-value counts into "how many at most this value".
fn running_sum(counts: &mut [u32]) {
    let mut running = 0u32;
    for c in counts {
        running += *c;
        *c = running;
    }
}

/// The state of the rankings of one rank.
pub struct Ranker {
    shift: u32,
    keys_total: usize,
    rank: usize,
    /// This rank's keys per bucket (the first `buckets` entries).
    bucket_counts: Box<Buckets>,
    /// Every rank's keys per bucket, summed, then the values of NPB's test
    /// keys (each from the rank that holds it): one all-reduce of 4-byte
    /// integers, as NPB's (at most 2^27 keys, values below 2^31).
    bucket_totals: Vec<i32>,
    /// Where each test key lies among this rank's keys, if it does.
    test_at: [Option<usize>; TEST_KEYS],
    /// Where the next key of each bucket goes in `send` (more than two
    /// ranks).
    bucket_at: Box<Buckets>,
    /// This rank's keys, grouped by the rank they go to, as the exchange
    /// carries them: 4-byte integers, as NPB sends them (keys are below
    /// 2^27). Unused on one rank, where the keys are sent as they are.
    send: Vec<i32>,
    /// `split[j]..split[j + 1]`: the buckets of rank `j`.
    split: Vec<usize>,
    send_counts: Vec<usize>,
    recv_counts: Vec<usize>,
    /// One value per rank: how the key counts are exchanged.
    ones: Vec<usize>,
    counts_out: Vec<i32>,
    counts_in: Vec<i32>,
    /// The keys of this rank's buckets, from every rank.
    recv: Vec<i32>,
    /// Over this rank's values: how many received keys are at most each.
    at_most: Vec<u32>,
    /// Keys of all lower ranks' buckets.
    lesser: usize,
    /// Received keys outside this rank's buckets (a corrupted exchange).
    misplaced: usize,
    /// The test hook asked for a corrupted key ([`crate::npb::fault`]).
    corrupt: bool,
}

impl Ranker {
    /// Buffers for ranking `local_keys` keys, the first of them key
    /// `first` of the whole sequence, on this rank of `comm`.
    pub fn new(
        params: &IsParams,
        comm: &dyn Communicator,
        first: usize,
        local_keys: usize,
    ) -> Ranker {
        let (size, buckets) = (comm.size(), params.buckets());
        assert!(buckets <= MAX_BUCKETS, "IS: {buckets} buckets");
        assert!(
            u32::try_from(params.keys()).is_ok() && params.max_key() <= 1 << 31,
            "IS: keys, their counts and their values must fit 32 bits"
        );
        Ranker {
            shift: params.bucket_shift(),
            keys_total: params.keys(),
            rank: comm.rank(),
            bucket_counts: Box::new([0; MAX_BUCKETS]),
            bucket_totals: vec![0; buckets + TEST_KEYS],
            test_at: params
                .test_index
                .map(|i| i.checked_sub(first).filter(|&at| at < local_keys)),
            bucket_at: Box::new([0; MAX_BUCKETS]),
            send: vec![0; if size > 1 { local_keys } else { 0 }],
            split: vec![0; size + 1],
            send_counts: vec![0; size],
            recv_counts: vec![0; size],
            ones: vec![1; size],
            counts_out: vec![0; size],
            counts_in: vec![0; size],
            recv: Vec::new(),
            at_most: vec![0; params.max_key()],
            lesser: 0,
            misplaced: 0,
            corrupt: crate::npb::fault::injected(comm, "is-key"),
        }
    }

    /// Ranks `keys` (this rank's share) together with the other ranks.
    pub fn rank(&mut self, keys: &[u32], comm: &dyn Communicator) -> Result<()> {
        let buckets = self.bucket_totals.len() - TEST_KEYS;
        count_buckets(keys, self.shift, &mut self.bucket_counts);
        let (totals, tests) = self.bucket_totals.split_at_mut(buckets);
        for (total, &n) in totals.iter_mut().zip(&self.bucket_counts[..buckets]) {
            // Below 2^27 (checked in `new`).
            *total = n as i32;
        }
        for (value, at) in tests.iter_mut().zip(self.test_at) {
            *value = at.map_or(0, |at| keys[at] as i32);
        }
        comm.allreduce_sum_i32(&mut self.bucket_totals)?;
        self.split_buckets();

        for j in 0..self.send_counts.len() {
            let n: u32 = self.bucket_counts[self.split[j]..self.split[j + 1]]
                .iter()
                .sum();
            self.send_counts[j] = n as usize;
            self.counts_out[j] = i32::try_from(n)?;
        }
        self.lay_out(keys);
        comm.alltoallv_i32(
            &self.counts_out,
            &self.ones,
            &mut self.counts_in,
            &self.ones,
        )?;
        for (n, &x) in self.recv_counts.iter_mut().zip(&self.counts_in) {
            *n = usize::try_from(x)?;
        }
        let need: usize = self.recv_counts.iter().sum();
        if need > self.recv.capacity() {
            // Room for the counts to drift between iterations, so that only
            // the untimed first ranking allocates.
            self.recv
                .reserve_exact(need + need / 8 + 64 - self.recv.len());
        }
        self.recv.resize(need, 0);
        let send: &[i32] = if self.send_counts.len() == 1 {
            // One rank keeps all its keys: they go as they are (the same
            // 4 bytes each; keys are below 2^31).
            cast_slice(keys)
        } else {
            &self.send
        };
        comm.alltoallv_i32(send, &self.send_counts, &mut self.recv, &self.recv_counts)?;
        if self.corrupt {
            if let Some(k) = self.recv.first_mut() {
                *k += 1;
            }
        }
        self.count_values();
        Ok(())
    }

    /// Groups `keys` in `send` by the rank they go to, in rank order
    /// (nothing to do on one rank).
    fn lay_out(&mut self, keys: &[u32]) {
        match self.send_counts.len() {
            1 => {}
            2 => split_at_value(
                keys,
                (self.split[1] << self.shift) as u32,
                self.send_counts[0],
                &mut self.send,
            ),
            _ => {
                let mut at = 0;
                for (start, &n) in self.bucket_at.iter_mut().zip(&self.bucket_counts[..]) {
                    *start = at;
                    at += n;
                }
                scatter_by_bucket(keys, self.shift, &mut self.bucket_at, &mut self.send);
            }
        }
    }

    /// Gives each rank a contiguous run of buckets: rank `j`'s run ends at
    /// the first bucket where the keys so far reach `(j + 1) N / P`, and
    /// the last rank takes whatever is left (as NPB splits them).
    fn split_buckets(&mut self) {
        let size = self.split.len() - 1;
        let per_rank = self.keys_total / size;
        let buckets = self.bucket_totals.len() - TEST_KEYS;
        let mut j = 0;
        let mut sum = 0;
        self.split[0] = 0;
        for (b, &n) in self.bucket_totals[..buckets].iter().enumerate() {
            sum += n as usize;
            if j + 1 < size && sum >= (j + 1) * per_rank {
                j += 1;
                self.split[j] = b + 1;
            }
        }
        for s in &mut self.split[j + 1..] {
            *s = buckets;
        }
    }

    /// This rank's values, `[lo, hi)`.
    fn values(&self) -> (usize, usize) {
        (
            self.split[self.rank] << self.shift,
            self.split[self.rank + 1] << self.shift,
        )
    }

    /// Counts the received keys per value, then turns the counts into
    /// "keys at most this value" over this rank's values.
    fn count_values(&mut self) {
        let (lo, hi) = self.values();
        let counts = &mut self.at_most[lo..hi];
        self.misplaced = count_values(&self.recv, lo, counts);
        running_sum(counts);
        self.lesser = self.bucket_totals[..self.split[self.rank]]
            .iter()
            .map(|&n| n as usize)
            .sum();
    }

    /// The values of NPB's test keys, as the last ranking's reduction
    /// carried them to every rank.
    pub fn test_values(&self) -> [u32; TEST_KEYS] {
        let tests = &self.bucket_totals[self.bucket_totals.len() - TEST_KEYS..];
        std::array::from_fn(|i| tests[i] as u32)
    }

    /// The global count of keys below `k` (NPB's rank of a test key of
    /// value `k`), if value `k - 1` is in this rank's buckets.
    pub fn global_rank_below(&self, k: usize) -> Option<usize> {
        let (lo, hi) = self.values();
        let v = k.checked_sub(1)?;
        (lo..hi)
            .contains(&v)
            .then(|| self.lesser + self.at_most[v] as usize)
    }

    /// NPB's full verification of the last ranking, as a count that must
    /// equal the number of keys: the keys that arrived in their own rank's
    /// buckets (so that the ranks' sorted runs follow each other in order),
    /// or 0 when the keys received differ from the keys sent (count or sum).
    pub fn full_verification(&self, keys: &[u32], comm: &dyn Communicator) -> Result<f64> {
        let sent: f64 = keys.iter().map(|&k| f64::from(k)).sum();
        let received: f64 = self.recv.iter().map(|&k| f64::from(k)).sum();
        let mut tally = [
            sent,
            keys.len() as f64,
            received,
            self.recv.len() as f64,
            self.misplaced as f64,
        ];
        comm.allreduce_sum_f64(&mut tally)?;
        let [sent, sent_n, received, received_n, misplaced] = tally;
        Ok(if sent == received && sent_n == received_n {
            received_n - misplaced
        } else {
            0.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{SerialComm, ThreadComm};
    use crate::npb::is::{generate_keys, keys_of};
    use crate::npb::Class;

    /// Keys below `max_key` from a small generator of our own, with runs
    /// of equal keys and the extremes.
    fn some_keys(n: usize, max_key: u32, seed: u64) -> Vec<u32> {
        let mut x = seed | 1;
        let mut keys: Vec<u32> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % u64::from(max_key)) as u32
            })
            .collect();
        keys.extend([0, 0, max_key - 1, max_key - 1, 7, 7, 7]);
        keys
    }

    #[test]
    fn buckets_are_counted_and_scattered_in_order() {
        let shift = 3;
        let keys = some_keys(5000, 1 << 13, 1);
        let mut counts = [0; MAX_BUCKETS];
        count_buckets(&keys, shift, &mut counts);
        for (b, &n) in counts.iter().enumerate() {
            let want = keys.iter().filter(|&&k| (k >> shift) as usize == b).count();
            assert_eq!(n as usize, want, "bucket {b}");
        }
        let mut at = [0; MAX_BUCKETS];
        let mut next = 0;
        for (a, &n) in at.iter_mut().zip(&counts) {
            *a = next;
            next += n;
        }
        let mut out = vec![-1; keys.len()];
        scatter_by_bucket(&keys, shift, &mut at, &mut out);
        // A stable sort by bucket gives the same layout.
        let mut want = keys.clone();
        want.sort_by_key(|&k| k >> shift);
        assert_eq!(out, want.iter().map(|&k| k as i32).collect::<Vec<_>>());
    }

    #[test]
    fn a_split_at_a_value_keeps_each_side_in_order() {
        let keys = some_keys(3001, 1 << 11, 2);
        for bound in [0, 1, 7, 8, 1000, (1 << 11) - 1, 1 << 11] {
            let below = keys.iter().filter(|&&k| k < bound).count();
            let mut out = vec![-1; keys.len()];
            split_at_value(&keys, bound, below, &mut out);
            let want: Vec<i32> = keys
                .iter()
                .filter(|&&k| k < bound)
                .chain(keys.iter().filter(|&&k| k >= bound))
                .map(|&k| k as i32)
                .collect();
            assert_eq!(out, want, "bound {bound}");
        }
    }

    #[test]
    fn values_are_counted_in_range_and_strays_reported() {
        let keys = [5, 6, 6, 9, 4, 10, -1, 7, 6];
        let mut counts = [99; 5];
        // Values 5..10: 4, 10 and -1 lie outside.
        assert_eq!(count_values(&keys, 5, &mut counts), 3);
        assert_eq!(counts, [1, 3, 1, 0, 1]);
        running_sum(&mut counts);
        assert_eq!(counts, [1, 4, 5, 5, 6]);
    }

    /// Every key's rank by brute force: the number of keys below each
    /// value `v + 1`, i.e. at most `v`.
    fn ranks_below(all: &[u32], max_key: usize) -> Vec<usize> {
        let mut at_most = vec![0; max_key];
        for &k in all {
            at_most[k as usize] += 1;
        }
        running_sum_usize(&mut at_most);
        at_most
    }

    fn running_sum_usize(v: &mut [usize]) {
        let mut r = 0;
        for x in v {
            r += *x;
            *x = r;
        }
    }

    /// Ranks class S's keys (with the extremes set, as the iterations
    /// do) on `nprocs` ranks and checks every value's rank and the full
    /// verification on each rank.
    fn ranks_match_brute_force(nprocs: usize) {
        let params = IsParams::of(Class::S);
        let mut all = vec![0u32; params.keys()];
        generate_keys(&params, 0, &mut all);
        all[1] = 1;
        all[11] = (params.max_key() - 1) as u32;
        all[2] = 0;
        let want = ranks_below(&all, params.max_key());
        let all = &all;
        let want = &want;
        let checked = |comm: &dyn Communicator| -> Result<usize> {
            let (first, end) = keys_of(params.keys(), comm.size(), comm.rank());
            let keys = &all[first..end];
            let mut ranker = Ranker::new(&params, comm, first, keys.len());
            let mut seen = 0;
            for _ in 0..2 {
                ranker.rank(keys, comm)?;
                seen = 0;
                for k in 1..params.max_key() {
                    if let Some(r) = ranker.global_rank_below(k) {
                        assert_eq!(r, want[k - 1], "rank of value {}", k - 1);
                        seen += 1;
                    }
                }
            }
            let in_order = ranker.full_verification(keys, comm)?;
            assert_eq!(in_order, params.keys() as f64);
            Ok(seen)
        };
        let seen: usize = if nprocs == 1 {
            checked(&SerialComm::new()).unwrap()
        } else {
            ThreadComm::run(nprocs, checked).unwrap().iter().sum()
        };
        // Every value but the largest is some rank's `k - 1`, once.
        assert_eq!(seen, params.max_key() - 1);
    }

    #[test]
    fn one_rank_ranks_every_value() {
        ranks_match_brute_force(1);
    }

    #[test]
    fn two_ranks_split_at_a_value_and_rank_every_value() {
        ranks_match_brute_force(2);
    }

    #[test]
    fn four_and_eight_ranks_scatter_by_bucket_and_rank_every_value() {
        ranks_match_brute_force(4);
        ranks_match_brute_force(8);
    }
}
