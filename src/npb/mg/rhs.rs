//! The right-hand side v: ten +1 and ten -1 charges placed by the random
//! stream (spec: "The right-hand side v"; NPB's `zran3`).
//!
//! Point (i, j, k) of the n^3 grid, counted from 0, draws output number
//! `m = 1 + i + n*j + n*n*k` of the generator from seed 314159265. Each rank
//! fills only its own block, jumping ahead to the first output of each row,
//! so the values do not depend on the process count. Each rank then keeps
//! its ten largest and ten smallest values with their global positions; an
//! allgather of those candidates lets every rank pick the same global ten
//! of each, and set the charges that fall in its block.

use super::decomp::Decomposition;
use super::kernels::Shape;
use crate::comm::Communicator;
use crate::npb::rng::{jump, mul_mod, pow_mod, vranlc, MULTIPLIER, SEED_MG};
use anyhow::{ensure, Result};

/// Number of charges of each sign.
pub const CHARGES: usize = 10;

/// Values exchanged per rank: values and positions of the ten largest,
/// then of the ten smallest. Positions travel as f64, exact below 2^53.
const CANDIDATE_LEN: usize = 4 * CHARGES;

/// Marks an unused candidate slot (a block with fewer than ten points).
const NO_POSITION: f64 = -1.0;

/// The `CHARGES` most extreme values seen so far in one direction, worst
/// first, with their global positions.
struct Extremes {
    values: [f64; CHARGES],
    positions: [f64; CHARGES],
    /// True to keep the largest values, false for the smallest.
    largest: bool,
}

impl Extremes {
    fn new(largest: bool) -> Self {
        // Generator values lie in (0, 1), so these sentinels lose to all.
        let sentinel = if largest { -1.0 } else { 2.0 };
        Extremes {
            values: [sentinel; CHARGES],
            positions: [NO_POSITION; CHARGES],
            largest,
        }
    }

    fn beats(&self, a: f64, b: f64) -> bool {
        if self.largest {
            a > b
        } else {
            a < b
        }
    }

    /// Offers one value; keeps it if it beats the worst kept.
    #[inline]
    fn offer(&mut self, value: f64, position: f64) {
        if !self.beats(value, self.values[0]) {
            return;
        }
        self.values[0] = value;
        self.positions[0] = position;
        // Bubble the newcomer up past every kept value it beats.
        let mut i = 0;
        while i + 1 < CHARGES && self.beats(self.values[i], self.values[i + 1]) {
            self.values.swap(i, i + 1);
            self.positions.swap(i, i + 1);
            i += 1;
        }
    }
}

/// Builds v on this rank's block (interior only; the caller exchanges the
/// ghosts). `v` has shape `s`, the block of `decomp` in an `n^3` grid.
pub fn build_rhs(
    comm: &dyn Communicator,
    decomp: &Decomposition,
    n: usize,
    s: Shape,
    v: &mut [f64],
) -> Result<()> {
    let [(x0, lx), (y0, ly), (z0, lz)] = decomp.block(n);
    ensure!(
        s.n == [lx + 2, ly + 2, lz + 2],
        "block shape does not match the decomposition"
    );
    // Fill the interior with the random stream, as in NPB: a row start is
    // `a^n` after the previous row's, a plane start `a^(n^2)` after.
    let a_row = pow_mod(MULTIPLIER, n as u64);
    let a_plane = pow_mod(MULTIPLIER, (n * n) as u64);
    let first = (x0 + n * (y0 + n * z0)) as u64;
    let mut plane_start = jump(SEED_MG, MULTIPLIER, first);
    v.fill(0.0);
    for z in 1..=lz {
        let mut row_start = plane_start;
        for y in 1..=ly {
            let mut x = row_start;
            let at = s.at(1, y, z);
            vranlc(&mut x, MULTIPLIER, &mut v[at..at + lx]);
            row_start = mul_mod(row_start, a_row);
        }
        plane_start = mul_mod(plane_start, a_plane);
    }

    // Local candidates.
    let mut high = Extremes::new(true);
    let mut low = Extremes::new(false);
    for z in 1..=lz {
        for y in 1..=ly {
            let at = s.at(1, y, z);
            let row_position = (x0 + n * ((y0 + y - 1) + n * (z0 + z - 1))) as f64;
            for (i, &value) in v[at..at + lx].iter().enumerate() {
                let position = row_position + i as f64;
                high.offer(value, position);
                low.offer(value, position);
            }
        }
    }
    let mut mine = [0.0; CANDIDATE_LEN];
    mine[..CHARGES].copy_from_slice(&high.values);
    mine[CHARGES..2 * CHARGES].copy_from_slice(&high.positions);
    mine[2 * CHARGES..3 * CHARGES].copy_from_slice(&low.values);
    mine[3 * CHARGES..].copy_from_slice(&low.positions);
    let mut all = vec![0.0; CANDIDATE_LEN * comm.size()];
    comm.allgather_f64(&mine, &mut all)?;

    // Global choice: the same on every rank, as it sees the same candidates.
    let mut global_high = Extremes::new(true);
    let mut global_low = Extremes::new(false);
    for block in all.chunks_exact(CANDIDATE_LEN) {
        for i in 0..CHARGES {
            if block[CHARGES + i] != NO_POSITION {
                global_high.offer(block[i], block[CHARGES + i]);
            }
            if block[3 * CHARGES + i] != NO_POSITION {
                global_low.offer(block[2 * CHARGES + i], block[3 * CHARGES + i]);
            }
        }
    }
    ensure!(
        global_high
            .positions
            .iter()
            .chain(&global_low.positions)
            .all(|&p| p != NO_POSITION),
        "grid too small for {CHARGES} charges of each sign"
    );

    v.fill(0.0);
    let charges = global_low
        .positions
        .iter()
        .map(|&p| (p, -1.0))
        .chain(global_high.positions.iter().map(|&p| (p, 1.0)));
    for (position, charge) in charges {
        let p = position as usize;
        let (gx, gy, gz) = (p % n, (p / n) % n, p / (n * n));
        let inside = |g: usize, origin: usize, len: usize| g >= origin && g < origin + len;
        if inside(gx, x0, lx) && inside(gy, y0, ly) && inside(gz, z0, lz) {
            v[s.at(gx - x0 + 1, gy - y0 + 1, gz - z0 + 1)] = charge;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{SerialComm, ThreadComm};

    /// Global positions and signs of the charges this rank holds.
    fn charges_on(comm: &dyn Communicator, n: usize) -> Result<Vec<(usize, f64)>> {
        let d = Decomposition::new(comm.size(), comm.rank())?;
        let block = d.block(n);
        let s = Shape::with_interior(block.map(|(_, len)| len));
        let mut v = vec![0.0; s.len()];
        build_rhs(comm, &d, n, s, &mut v)?;
        let [(x0, lx), (y0, ly), (z0, lz)] = block;
        let mut found = Vec::new();
        for z in 1..=lz {
            for y in 1..=ly {
                for x in 1..=lx {
                    let value = v[s.at(x, y, z)];
                    if value != 0.0 {
                        let g = (x0 + x - 1) + n * ((y0 + y - 1) + n * (z0 + z - 1));
                        found.push((g, value));
                    }
                }
            }
        }
        Ok(found)
    }

    #[test]
    fn charges_do_not_depend_on_the_process_count() {
        let n = 32;
        let mut serial = charges_on(&SerialComm::new(), n).unwrap();
        serial.sort_by_key(|&(g, _)| g);
        assert_eq!(serial.len(), 2 * CHARGES);
        assert_eq!(serial.iter().filter(|&&(_, v)| v == 1.0).count(), CHARGES);
        for nprocs in [2, 4, 8] {
            let mut parallel: Vec<_> = ThreadComm::run(nprocs, |comm| charges_on(comm, n))
                .unwrap()
                .into_iter()
                .flatten()
                .collect();
            parallel.sort_by_key(|&(g, _)| g);
            assert_eq!(parallel, serial, "{nprocs} ranks");
        }
    }

    #[test]
    fn extremes_keep_the_ten_best_in_order() {
        let mut high = Extremes::new(true);
        let mut low = Extremes::new(false);
        let values: Vec<f64> = (0..100)
            .map(|i| ((i * 37) % 100) as f64 / 100.0 + 0.001)
            .collect();
        for (i, &v) in values.iter().enumerate() {
            high.offer(v, i as f64);
            low.offer(v, i as f64);
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(high.values.to_vec(), sorted[90..].to_vec());
        let mut lows = low.values.to_vec();
        lows.reverse();
        assert_eq!(lows, sorted[..10].to_vec());
        for (v, p) in high.values.iter().zip(&high.positions) {
            assert_eq!(values[*p as usize], *v);
        }
    }
}
