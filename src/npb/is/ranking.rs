//! One IS ranking on one rank: bucket counts, the split of buckets among
//! ranks, the all-to-all of counts and keys, and the per-value counts that
//! give every key's global rank. Buffers are allocated once (and grown by
//! the untimed first ranking), so the timed rankings do not allocate.

use anyhow::Result;

use super::params::IsParams;
use crate::npb::comm::Communicator;

/// The state of the rankings of one rank.
pub struct Ranker {
    shift: u32,
    keys_total: usize,
    rank: usize,
    /// This rank's keys per bucket.
    bucket_counts: Vec<usize>,
    /// Every rank's keys per bucket, summed (exact in f64: at most 2^27).
    bucket_totals: Vec<f64>,
    /// Where the next key of each bucket goes in `send`.
    bucket_at: Vec<usize>,
    /// This rank's keys, bucket by bucket, as the exchange carries them:
    /// 4-byte integers, as NPB sends them (keys are below 2^27).
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
    /// Buffers for ranking `local_keys` keys on this rank of `comm`.
    pub fn new(params: &IsParams, comm: &dyn Communicator, local_keys: usize) -> Ranker {
        let (size, buckets) = (comm.size(), params.buckets());
        Ranker {
            shift: params.bucket_shift(),
            keys_total: params.keys(),
            rank: comm.rank(),
            bucket_counts: vec![0; buckets],
            bucket_totals: vec![0.0; buckets],
            bucket_at: vec![0; buckets],
            send: vec![0; local_keys],
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
        self.bucket_counts.fill(0);
        for &k in keys {
            self.bucket_counts[(k >> self.shift) as usize] += 1;
        }
        let mut at = 0;
        for (start, &n) in self.bucket_at.iter_mut().zip(&self.bucket_counts) {
            *start = at;
            at += n;
        }
        for &k in keys {
            let b = (k >> self.shift) as usize;
            self.send[self.bucket_at[b]] = k as i32;
            self.bucket_at[b] += 1;
        }
        for (total, &n) in self.bucket_totals.iter_mut().zip(&self.bucket_counts) {
            *total = n as f64;
        }
        comm.allreduce_sum_f64(&mut self.bucket_totals)?;
        self.split_buckets();

        for j in 0..self.send_counts.len() {
            let n: usize = self.bucket_counts[self.split[j]..self.split[j + 1]]
                .iter()
                .sum();
            self.send_counts[j] = n;
            self.counts_out[j] = i32::try_from(n)?;
        }
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
        comm.alltoallv_i32(
            &self.send,
            &self.send_counts,
            &mut self.recv,
            &self.recv_counts,
        )?;
        if self.corrupt {
            if let Some(k) = self.recv.first_mut() {
                *k += 1;
            }
        }
        self.count_values();
        Ok(())
    }

    /// Gives each rank a contiguous run of buckets: rank `j`'s run ends at
    /// the first bucket where the keys so far reach `(j + 1) N / P`, and
    /// the last rank takes whatever is left (as NPB splits them).
    fn split_buckets(&mut self) {
        let size = self.split.len() - 1;
        let per_rank = (self.keys_total / size) as f64;
        let mut j = 0;
        let mut sum = 0.0;
        self.split[0] = 0;
        for (b, &n) in self.bucket_totals.iter().enumerate() {
            sum += n;
            if j + 1 < size && sum >= (j + 1) as f64 * per_rank {
                j += 1;
                self.split[j] = b + 1;
            }
        }
        let buckets = self.bucket_totals.len();
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
        counts.fill(0);
        self.misplaced = 0;
        for &k in &self.recv {
            let v = k as usize;
            if (lo..hi).contains(&v) {
                counts[v - lo] += 1;
            } else {
                self.misplaced += 1;
            }
        }
        let mut running = 0;
        for c in counts.iter_mut() {
            running += *c;
            *c = running;
        }
        self.lesser = self.bucket_totals[..self.split[self.rank]]
            .iter()
            .sum::<f64>() as usize;
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
