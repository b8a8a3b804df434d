//! NAS IS: integer bucket sort, written from the specification
//! (`shared/spec/npb.md`, "IS").
//!
//! Rank `p` of `P` generates keys `[p N / P, (p + 1) N / P)` of NPB's
//! sequence (jumping the generator ahead by four draws a key). Each
//! ranking then:
//!
//! 1. counts the rank's keys per bucket;
//! 2. sums the bucket counts over all ranks (one all-reduce of 4-byte
//!    integers that also carries the test keys' values, as NPB's), gives
//!    each rank a contiguous run of buckets holding about `N / P` keys
//!    (the same split on every rank, from the same sums), and groups its
//!    keys by the rank they go to (see `ranking` for why not bucket by
//!    bucket, as NPB);
//! 3. exchanges the counts, then the keys, with one all-to-all each, as
//!    4-byte integers (NPB's MPI_INT: half the bytes of an `f64`);
//! 4. counts the received keys per value: with the keys of all lower
//!    ranks' buckets added, that is every key's global rank.
//!
//! Partial verification runs every iteration on the rank whose buckets
//! hold the value just below each test key; full verification, after the
//! timed section, checks that every rank received only keys of its own
//! buckets and that no key was lost or changed on the way (count and sum).

mod params;
mod ranking;

pub use params::{IsParams, ITERATIONS, TEST_KEYS};

use anyhow::Result;

use self::ranking::Ranker;
use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::rng::{jump, randlc, MULTIPLIER, SEED_MG};
use super::Class;
use crate::comm::Communicator;

/// The keys of global indices `[first, first + out.len())`:
/// `floor(max_key / 4 * (r1 + r2 + r3 + r4))` from four draws each.
pub fn generate_keys(params: &IsParams, first: usize, out: &mut [u32]) {
    let mut x = jump(SEED_MG, MULTIPLIER, 4 * first as u64);
    let quarter = (params.max_key() / 4) as f64;
    for key in out.iter_mut() {
        let mut sum = randlc(&mut x, MULTIPLIER);
        sum += randlc(&mut x, MULTIPLIER);
        sum += randlc(&mut x, MULTIPLIER);
        sum += randlc(&mut x, MULTIPLIER);
        *key = (quarter * sum) as u32;
    }
}

/// The global indices `[first, end)` of rank `rank`'s keys.
pub fn keys_of(keys: usize, nprocs: usize, rank: usize) -> (usize, usize) {
    (rank * keys / nprocs, (rank + 1) * keys / nprocs)
}

/// Runs NPB IS of `class` on this rank of `comm` (every rank must call
/// it) and verifies it; an unverified run is an error.
pub fn run_is(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = IsParams::of(class);
    let (first, end) = keys_of(params.keys(), comm.size(), comm.rank());
    let mut keys = vec![0u32; end - first];
    generate_keys(&params, first, &mut keys);

    let mut ranker = Ranker::new(&params, comm, first, keys.len());
    // Untimed: one ranking first, as NPB does; it also sizes the buffers.
    ranker.rank(&keys, comm)?;

    let timer = Timer::start(comm)?;
    let mut passed = 0usize;
    for it in 1..=ITERATIONS {
        for index in [it, it + ITERATIONS] {
            if (first..end).contains(&index) {
                keys[index - first] = params.key_at(index, 0, it);
            }
        }
        ranker.rank(&keys, comm)?;
        // The test keys' values come with the bucket sizes, as NPB's do
        // (they never change: only keys 1..=20 do).
        let generated = ranker.test_values();
        for (i, (&index, &value)) in params.test_index.iter().zip(&generated).enumerate() {
            let k = params.key_at(index, value, it) as usize;
            // NPB checks a test key only in this range; out of it, the check
            // is missing and the count of passes falls short.
            if k == 0 || k > params.keys() - 1 {
                continue;
            }
            if let Some(rank) = ranker.global_rank_below(k) {
                passed += usize::from(rank as i64 == params.expected_rank(i, it));
            }
        }
    }
    let elapsed = timer.stop(comm)?;
    // After the timed section, as NPB sums its partial verifications.
    let mut tally = [passed as f64];
    comm.allreduce_sum_f64(&mut tally)?;

    let in_order = ranker.full_verification(&keys, comm)?;
    let checks = vec![
        CheckedValue::new(
            "partial verifications passed",
            tally[0],
            (TEST_KEYS * ITERATIONS) as f64,
        ),
        CheckedValue::new("keys in order", in_order, params.keys() as f64),
    ];
    let shape = RunShape {
        proc_grid: [comm.size(), 1, 1],
        iterations: ITERATIONS,
        elapsed,
        operations: params.operation_count(),
    };
    // Both counts are exact: any difference fails.
    NpbOutcome::checked("IS", class, comm, checks, 0.0, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_generation_continues_the_serial_sequence() {
        let p = IsParams::of(Class::S);
        let mut all = vec![0u32; 64];
        generate_keys(&p, 0, &mut all);
        let mut tail = vec![0u32; 24];
        generate_keys(&p, 40, &mut tail);
        assert_eq!(&all[40..], &tail[..]);
        assert!(all.iter().all(|&k| (k as usize) < p.max_key()));
        // The first key from four draws of the seed, by hand.
        let mut x = SEED_MG;
        let sum: f64 = (0..4).map(|_| randlc(&mut x, MULTIPLIER)).sum();
        assert_eq!(all[0], (512.0 * sum) as u32);
    }

    #[test]
    fn each_ranking_sends_npbs_three_collectives() {
        // Per rank and iteration, as NPB-MPI: one all-reduce of the
        // bucket sizes and the five test keys (4-byte integers), one
        // all-to-all of counts (4 bytes to each other rank), one of keys
        // (to each other rank with keys for it); the partial
        // verifications are summed after the timed section.
        let p = IsParams::of(Class::S);
        for np in [2, 4] {
            let outs = crate::comm::ThreadComm::run(np, |c| {
                run_is(Class::S, &crate::comm::Counted::new(c))
            })
            .unwrap();
            let per_iteration = (1 + 2 * (np - 1)) as u64;
            let fixed = (4 * (p.buckets() + TEST_KEYS) + 4 * (np - 1)) as u64;
            for out in outs {
                assert!(out.verified);
                let (messages, bytes) = (out.sent_messages.unwrap(), out.sent_bytes.unwrap());
                assert_eq!(
                    messages,
                    np as u64 * ITERATIONS as u64 * per_iteration,
                    "np {np}"
                );
                // Keys are 4 bytes each: what is left after the fixed
                // parts is whole keys.
                let keys = bytes - np as u64 * ITERATIONS as u64 * fixed;
                assert!(keys > 0 && keys.is_multiple_of(4), "np {np}: {bytes}");
            }
        }
    }

    #[test]
    fn keys_are_split_whole() {
        for nprocs in [1, 2, 4, 8] {
            let mut next = 0;
            for rank in 0..nprocs {
                let (first, end) = keys_of(1 << 16, nprocs, rank);
                assert_eq!(first, next);
                next = end;
            }
            assert_eq!(next, 1 << 16);
        }
    }
}
