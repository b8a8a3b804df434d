//! NAS EP: Gaussian pairs by the acceptance-rejection (polar) method,
//! written from the specification (`shared/spec/npb.md`, "EP").
//!
//! `2^m` pairs of uniforms are drawn in batches of `2^16` pairs. Batch `k`
//! starts at state `seed * a^(2^17 k)` (a jump over the `2 * 2^16` numbers
//! of every earlier batch), so a rank computes any batch without the
//! others; ranks take contiguous runs of batches, as evenly as they go, so
//! any process count works. The only message is one reduction of the two
//! sums and ten counts at the end: EP measures computation, and how much
//! a noisy machine takes from it.
//!
//! Verification is NPB 3.4.2's: the sums of |X| and of |Y| and the number
//! of Gaussian pairs, each within 1e-8 of its reference. Earlier NPB
//! versions (and `shared/spec/npb.md`) verify the signed sums, whose terms
//! mostly cancel; wulf checks those too, so a run agrees with every NPB
//! version, and records the ten annulus counts NPB prints.

use anyhow::Result;

use super::outcome::{CheckedValue, NpbOutcome, RunShape, Timer};
use super::rng::{mul_mod, pow_mod, to_unit, MULTIPLIER, SEED_EP};
use super::Class;
use crate::comm::Communicator;

/// log2 of the pairs per batch (NPB's `MK`).
const BATCH_PAIRS_LOG2: u32 = 16;

/// Pairs per batch.
const BATCH_PAIRS: usize = 1 << BATCH_PAIRS_LOG2;

/// Pairs a pass of [`Tally::add_batch`] takes at a time (their accepted
/// pairs, 24 KiB, stay in the L1 cache).
const BLOCK_PAIRS: usize = 1 << 10;

/// Number of annuli counted (NPB's `NQ`): bin `l` holds the pairs with
/// `l <= max(|X|, |Y|) < l + 1`.
pub const ANNULI: usize = 10;

/// Largest relative error of `sx` and `sy` that still verifies.
pub const VERIFY_TOLERANCE: f64 = 1.0e-8;

/// What distinguishes one EP class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpParams {
    /// The class.
    pub class: Class,
    /// log2 of the number of pairs (NPB's `M`).
    pub pairs_log2: u32,
    /// NPB 3.4.2's references: the sums of |X| and |Y| and the number of
    /// Gaussian pairs.
    pub reference: [f64; 3],
    /// Earlier NPB versions' references: the signed sums of X and Y.
    pub signed_reference: [f64; 2],
}

impl EpParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        let (pairs_log2, reference, signed_reference) = match class {
            Class::S => (
                24,
                [
                    1.051_299_420_395_306e7,
                    1.051_517_131_857_535e7,
                    13_176_389.0,
                ],
                [-3.247_834_652_034_74e3, -6.958_407_078_382_297e3],
            ),
            Class::W => (
                25,
                [
                    2.102_505_525_182_392e7,
                    2.103_162_209_578_822e7,
                    26_354_769.0,
                ],
                [-2.863_319_731_645_753e3, -6.320_053_679_109_499e3],
            ),
            Class::A => (
                28,
                [
                    1.682_235_632_304_711e8,
                    1.682_195_123_368_299e8,
                    210_832_767.0,
                ],
                [-4.295_875_165_629_892e3, -1.580_732_573_678_431e4],
            ),
            Class::B => (
                30,
                [
                    6.728_927_543_423_024e8,
                    6.728_951_822_504_275e8,
                    843_345_606.0,
                ],
                [4.033_815_542_441_498e4, -2.660_669_192_809_235e4],
            ),
            Class::C => (
                32,
                [
                    2.691_444_083_862_931e9,
                    2.691_519_118_724_585e9,
                    3_373_275_903.0,
                ],
                [4.764_367_927_995_374e4, -8.084_072_988_043_731e4],
            ),
        };
        EpParams {
            class,
            pairs_log2,
            reference,
            signed_reference,
        }
    }

    /// Number of batches of [`BATCH_PAIRS`] pairs.
    pub fn batches(&self) -> u64 {
        1 << (self.pairs_log2 - BATCH_PAIRS_LOG2)
    }

    /// NPB's operation count: the `2^(m+1)` random numbers drawn.
    pub fn operation_count(&self) -> f64 {
        2f64.powi(self.pairs_log2 as i32 + 1)
    }

    /// The problem in a few words.
    pub fn describe(&self) -> String {
        format!("2^{} Gaussian pairs", self.pairs_log2)
    }
}

/// The batches `[first, first + count)` rank `rank` of `nprocs` computes:
/// contiguous, the first `batches % nprocs` ranks one more than the rest.
pub fn batches_of(batches: u64, nprocs: usize, rank: usize) -> (u64, u64) {
    let (p, r) = (nprocs as u64, rank as u64);
    let (base, extra) = (batches / p, batches % p);
    let count = base + u64::from(r < extra);
    (r * base + r.min(extra), count)
}

/// The generator state batch `batch` starts from: the seed advanced over
/// the `2 * BATCH_PAIRS` numbers of each earlier batch.
pub fn batch_seed(batch: u64) -> u64 {
    let per_batch = pow_mod(MULTIPLIER, 2 * BATCH_PAIRS as u64);
    mul_mod(SEED_EP, pow_mod(per_batch, batch))
}

/// Fills `out` with the values of NPB's sequence that follow state `x`
/// (what [`vranlc`] gives), computing four independent chains at once:
/// value `i + 4` is value `i`'s state times `a^4`. One chain waits for
/// each multiplication before the next; four keep the multiplier busy.
/// The values are the same, bit for bit.
pub fn uniforms(x: u64, out: &mut [f64]) {
    let mut s = x;
    let mut lanes = [0u64; 4];
    for lane in &mut lanes {
        s = mul_mod(s, MULTIPLIER);
        *lane = s;
    }
    let step = pow_mod(MULTIPLIER, 4);
    let mut quads = out.chunks_exact_mut(4);
    for quad in &mut quads {
        for (value, lane) in quad.iter_mut().zip(&mut lanes) {
            *value = to_unit(*lane);
            *lane = mul_mod(*lane, step);
        }
    }
    // The states of the values not yet written: lane 0 is the next one.
    let mut rest = lanes[0];
    for value in quads.into_remainder() {
        *value = to_unit(rest);
        rest = mul_mod(rest, MULTIPLIER);
    }
}

/// Sums of the deviates and counts per annulus of some batches.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tally {
    /// Sum of the X deviates.
    pub sx: f64,
    /// Sum of the Y deviates.
    pub sy: f64,
    /// Sum of |X| (what NPB 3.4.2 verifies).
    pub sx_abs: f64,
    /// Sum of |Y|.
    pub sy_abs: f64,
    /// Accepted pairs per annulus.
    pub counts: [f64; ANNULI],
}

impl Tally {
    /// Adds the pairs of one batch of uniforms (`x[2i]`, `x[2i + 1]`).
    ///
    /// In two passes over blocks of [`BLOCK_PAIRS`] pairs: the first keeps
    /// the accepted pairs (`t <= 1`), without a branch (a pair is written
    /// at the next free place, which advances only when it is accepted: a
    /// fifth of the pairs are rejected at random, so a branch there would
    /// be mispredicted often); the second turns them into deviates. The
    /// accepted pairs are taken in their order, so the sums are added in
    /// the same order as one pass would, bit for bit. Counts are integers
    /// (a floating-point count in memory makes each pair wait for the
    /// previous pair's addition when both land in the same annulus, as
    /// half of them do).
    pub fn add_batch(&mut self, x: &[f64]) {
        let mut kept = [[0.0; 3]; BLOCK_PAIRS];
        let mut counts = [0u64; ANNULI];
        for block in x.chunks(2 * BLOCK_PAIRS) {
            let mut n = 0;
            for pair in block.chunks_exact(2) {
                let x1 = 2.0 * pair[0] - 1.0;
                let x2 = 2.0 * pair[1] - 1.0;
                let t = x1 * x1 + x2 * x2;
                // `n` is at most the number of pairs seen before this
                // one, below BLOCK_PAIRS: the index is in bounds.
                kept[n] = [x1, x2, t];
                n += usize::from(t <= 1.0);
            }
            for &[x1, x2, t] in &kept[..n] {
                let factor = (-2.0 * t.ln() / t).sqrt();
                let (gx, gy) = (x1 * factor, x2 * factor);
                // A deviate of 10 or more has probability near e^-50; it
                // joins the last annulus rather than leave the table.
                let annulus = (gx.abs().max(gy.abs()) as usize).min(ANNULI - 1);
                counts[annulus] += 1;
                self.sx += gx;
                self.sy += gy;
                self.sx_abs += gx.abs();
                self.sy_abs += gy.abs();
            }
        }
        for (total, n) in self.counts.iter_mut().zip(counts) {
            *total += n as f64;
        }
    }

    /// The tally summed over the ranks of `comm`, in NPB-MPI's three
    /// all-reduces a rank (the x sum, the y sum, the annulus counts), so
    /// that a run sends NPB's messages. Each sum travels with its sum of
    /// absolute values (the one NPB 3.4.2 verifies; the signed one is
    /// NPB 3.4's): 16 bytes where NPB's build of either version sends 8.
    fn reduce(self, comm: &dyn Communicator) -> Result<Tally> {
        let mut x = [self.sx, self.sx_abs];
        comm.allreduce_sum_f64(&mut x)?;
        let mut y = [self.sy, self.sy_abs];
        comm.allreduce_sum_f64(&mut y)?;
        let mut counts = self.counts;
        comm.allreduce_sum_f64(&mut counts)?;
        Ok(Tally {
            sx: x[0],
            sy: y[0],
            sx_abs: x[1],
            sy_abs: y[1],
            counts,
        })
    }

    /// The number of Gaussian pairs (accepted pairs), NPB's `gc`.
    pub fn pairs(&self) -> f64 {
        self.counts.iter().sum()
    }
}

/// Runs NPB EP of `class` on this rank of `comm` (every rank must call it)
/// and verifies the sums; an unverified run is an error.
pub fn run_ep(class: Class, comm: &dyn Communicator) -> Result<NpbOutcome> {
    let params = EpParams::of(class);
    let (first, count) = batches_of(params.batches(), comm.size(), comm.rank());
    let mut batch = vec![0.0; 2 * BATCH_PAIRS];
    // Untimed: touch the buffer and warm the generator, as NPB does.
    uniforms(SEED_EP, &mut batch);

    let timer = Timer::start(comm)?;
    let per_batch = pow_mod(MULTIPLIER, 2 * BATCH_PAIRS as u64);
    let mut state = batch_seed(first);
    let mut tally = Tally::default();
    for _ in 0..count {
        uniforms(state, &mut batch);
        tally.add_batch(&batch);
        state = mul_mod(state, per_batch);
    }
    let total = tally.reduce(comm)?;
    let elapsed = timer.stop(comm)?;

    let checks = vec![
        CheckedValue::new("sx", total.sx_abs, params.reference[0]),
        CheckedValue::new("sy", total.sy_abs, params.reference[1]),
        CheckedValue::new("gc", total.pairs(), params.reference[2]),
        CheckedValue::new("signed sx", total.sx, params.signed_reference[0]),
        CheckedValue::new("signed sy", total.sy, params.signed_reference[1]),
    ];
    let shape = RunShape {
        proc_grid: [comm.size(), 1, 1],
        iterations: 1,
        elapsed,
        operations: params.operation_count(),
    };
    let mut outcome = NpbOutcome::checked("EP", class, comm, checks, VERIFY_TOLERANCE, shape)?;
    outcome.annulus_counts = total.counts.iter().map(|&n| n as u64).collect();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npb::rng::randlc;

    #[test]
    fn batch_seeds_equal_stepping_the_generator() {
        let mut x = SEED_EP;
        for batch in 0..3 {
            assert_eq!(batch_seed(batch), x, "batch {batch}");
            for _ in 0..2 * BATCH_PAIRS {
                randlc(&mut x, MULTIPLIER);
            }
        }
    }

    #[test]
    fn batches_are_dealt_out_whole_and_in_order() {
        for nprocs in 1..=7 {
            let mut next = 0;
            for rank in 0..nprocs {
                let (first, count) = batches_of(256, nprocs, rank);
                assert_eq!(first, next);
                next += count;
            }
            assert_eq!(next, 256);
        }
    }

    #[test]
    fn accepted_pairs_land_in_their_annulus() {
        // (0.75, 0.5) -> (0.5, 0): t = 0.25, factor sqrt(8 ln 4) = 3.33,
        // so X = 1.67 lands in annulus 1.
        let mut t = Tally::default();
        t.add_batch(&[0.75, 0.5, 1.0, 1.0]);
        let f = (-2.0 * 0.25f64.ln() / 0.25).sqrt();
        assert_eq!(t.sx, 0.5 * f);
        assert_eq!(t.sy, 0.0);
        assert_eq!(t.sx_abs, 0.5 * f);
        // (1, 1) maps to (1, 1): t = 2, rejected.
        assert_eq!(t.counts.iter().sum::<f64>(), 1.0);
        assert_eq!(t.counts[1], 1.0);
    }

    #[test]
    fn four_chains_give_the_sequence_of_one() {
        use crate::npb::rng::vranlc;
        for len in [0, 1, 3, 4, 7, 64, 2 * BATCH_PAIRS] {
            let mut one = vec![0.0; len];
            let mut x = SEED_EP;
            vranlc(&mut x, MULTIPLIER, &mut one);
            let mut four = vec![-1.0; len];
            uniforms(SEED_EP, &mut four);
            assert_eq!(one, four, "{len} values");
        }
    }

    #[test]
    fn the_two_pass_tally_adds_as_one_pass_does() {
        // Enough uniforms for several blocks and a partial one.
        let mut x = vec![0.0; 2 * (3 * BLOCK_PAIRS + 77)];
        uniforms(SEED_EP, &mut x);
        let mut want = Tally::default();
        for pair in x.chunks_exact(2) {
            let x1 = 2.0 * pair[0] - 1.0;
            let x2 = 2.0 * pair[1] - 1.0;
            let t = x1 * x1 + x2 * x2;
            if t <= 1.0 {
                let factor = (-2.0 * t.ln() / t).sqrt();
                let (gx, gy) = (x1 * factor, x2 * factor);
                want.counts[(gx.abs().max(gy.abs()) as usize).min(ANNULI - 1)] += 1.0;
                want.sx += gx;
                want.sy += gy;
                want.sx_abs += gx.abs();
                want.sy_abs += gy.abs();
            }
        }
        let mut got = Tally::default();
        got.add_batch(&x);
        assert_eq!(got, want);
        assert!(want.counts.iter().sum::<f64>() > 2.0 * BLOCK_PAIRS as f64);
    }

    #[test]
    fn ranks_send_npbs_three_reductions() {
        // NPB-MPI's EP all-reduces sx, sy and the ten counts: three
        // messages a rank; here 16, 16 and 80 bytes (each sum with its
        // sum of absolute values).
        for np in [2, 4] {
            let outs = crate::comm::ThreadComm::run(np, |c| {
                run_ep(Class::S, &crate::comm::Counted::new(c))
            })
            .unwrap();
            for out in outs {
                assert!(out.verified);
                assert_eq!(out.sent_messages, Some(3 * np as u64), "np {np}");
                assert_eq!(out.sent_bytes, Some(112 * np as u64), "np {np}");
            }
        }
    }

    #[test]
    fn operation_counts_follow_the_class_sizes() {
        assert_eq!(EpParams::of(Class::S).operation_count(), 2f64.powi(25));
        assert_eq!(EpParams::of(Class::S).batches(), 256);
        assert_eq!(EpParams::of(Class::C).batches(), 65_536);
    }
}
