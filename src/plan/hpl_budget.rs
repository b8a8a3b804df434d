//! `wulf hpl` without `--n`: N chosen from a time budget.
//!
//! N from memory alone (10% of it) once chose N=17664 on a machine whose
//! HPL rate is about 0.25 Gflop/s: 2/3 N^3 flops took hours. Now a small
//! probe run is measured first ([`probe_n`]), and N is the largest multiple
//! of NB whose estimated wall time, with [`HEADROOM`], fits what the probe
//! left of `--budget` ([`n_for_budget`]), and at most the memory's N.
//!
//! The estimate ([`estimated_wall_s`]) scales the probe's two parts: HPL's
//! own time as its flop count at the probe's rate (2/3 N^3 + 2 N^2 flops;
//! the rate only grows with N, so this over-estimates), and the rest of
//! HPC Challenge's run (launch, PTRANS, STREAM, RandomAccess, FFT, b_eff,
//! sized by HPCC from the matrix's memory) as N^2, never below what it
//! took. At N=1024 on the loaded 2-vCPU VM HPL took 1.1 s of a 26.5 s run:
//! the rest dominates, so a budget that counted HPL alone would overrun.

/// What the probe run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// The probe's N.
    pub n: usize,
    /// HPL's rate at that N, Gflop/s.
    pub gflops: f64,
    /// The whole run's wall time (launch and every HPCC test), s.
    pub wall_s: f64,
}

/// Factor the estimate is multiplied by before it must fit: a loaded
/// machine's second run is seldom as quick as its first.
pub const HEADROOM: f64 = 1.25;

/// The probe's N for block size `nb`: four blocks a side (at least 256),
/// a second or two of HPL on a 0.25 Gflop/s machine.
pub fn probe_n(nb: usize) -> usize {
    let nb = nb.max(1);
    (4 * nb).max(256usize.div_ceil(nb) * nb)
}

/// HPL's flop count at order `n`: 2/3 N^3 + 2 N^2.
pub fn hpl_flops(n: usize) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 2.0 * n * n
}

/// Estimated wall time of a run at order `n`, s, from `probe`.
pub fn estimated_wall_s(probe: &Probe, n: usize) -> f64 {
    let rate = (probe.gflops * 1e9).max(1.0);
    let probe_hpl_s = hpl_flops(probe.n) / rate;
    let rest_s = (probe.wall_s - probe_hpl_s).max(0.0);
    let scale = (n as f64 / probe.n.max(1) as f64).powi(2).max(1.0);
    rest_s * scale + hpl_flops(n) / rate
}

/// The largest N, a multiple of `nb` above the probe's and at most
/// `max_n`, whose estimated wall time times [`HEADROOM`] fits `left_s`;
/// None when none does (the probe's own result then stands).
pub fn n_for_budget(probe: &Probe, left_s: f64, nb: usize, max_n: usize) -> Option<usize> {
    let nb = nb.max(1);
    let fits = |n: usize| estimated_wall_s(probe, n) * HEADROOM <= left_s;
    let mut lo = probe.n / nb + 1;
    if lo * nb > max_n || !fits(lo * nb) {
        return None;
    }
    // Binary search over multiples of nb: the estimate grows with N.
    let mut hi = max_n / nb;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid * nb) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo * nb)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The VM's figures: 0.25 Gflop/s, a 6.5 s probe at N=512.
    fn vm() -> Probe {
        Probe {
            n: 512,
            gflops: 0.25,
            wall_s: 6.5,
        }
    }

    #[test]
    fn the_chosen_n_fits_the_budget_with_headroom_and_the_next_does_not() {
        let p = vm();
        let n = n_for_budget(&p, 53.5, 128, 17664).expect("an N above the probe's");
        assert_eq!(n % 128, 0);
        assert!(n > 512 && n < 17664, "{n}");
        assert!(estimated_wall_s(&p, n) * HEADROOM <= 53.5);
        assert!(estimated_wall_s(&p, n + 128) * HEADROOM > 53.5);
    }

    #[test]
    fn the_memory_caps_n_and_no_room_keeps_the_probe() {
        let fast = Probe {
            n: 512,
            gflops: 1000.0,
            wall_s: 0.5,
        };
        assert_eq!(n_for_budget(&fast, 1e9, 128, 4096), Some(4096));
        assert_eq!(n_for_budget(&vm(), 5.0, 128, 17664), None);
        assert_eq!(n_for_budget(&vm(), 1e9, 128, 512), None);
    }

    #[test]
    fn the_estimate_counts_hpl_cubically_and_the_rest_quadratically() {
        let p = Probe {
            n: 1000,
            gflops: 1.0,
            wall_s: hpl_flops(1000) / 1e9 + 2.0,
        };
        let at = estimated_wall_s(&p, 2000);
        let want = 2.0 * 4.0 + hpl_flops(2000) / 1e9;
        assert!((at - want).abs() < 1e-9, "{at} {want}");
        // Never below the probe's own rest at a smaller N.
        assert!(estimated_wall_s(&p, 500) >= 2.0);
    }

    #[test]
    fn the_probe_is_a_few_blocks() {
        assert_eq!(probe_n(128), 512);
        assert_eq!(probe_n(32), 256);
        assert_eq!(probe_n(1), 256);
        assert_eq!(probe_n(4096), 16384);
    }
}
