//! The precision a point's budget can reach on a quiet machine.
//!
//! A point's median is of blocks that each average many operations; every
//! operation varies a little even on an idle machine (a blocking wait's
//! wake-up, cache and TLB state, a VM's timer exits). If one operation's
//! time has a relative spread `c`, the median over `n` blocks of `r`
//! operations each has a 95% interval of about `1.96 * 1.2533 * c /
//! sqrt(r * n)` of itself (the normal median's standard error is 1.2533
//! times the mean's): what matters is the operations the point's budget
//! holds, `N = r * n`, not how they are cut into blocks. A point whose
//! budget holds few operations (a large message, a slow blocking round
//! trip, a short `wulf run` share) cannot reach a tight precision however
//! quiet the machine; calling it noisy would blame the machine for the
//! budget. [`reachable_precision`] is that bound, and the noise verdict
//! holds a point to the larger of it and the precision asked for.

/// z of a two-sided 95% interval times the normal median's standard
/// error over the mean's (sqrt(pi / 2)).
const MEDIAN_HALF_WIDTH_Z: f64 = 1.959_964 * 1.253_314;

/// The relative spread of one operation's time on a quiet 2-vCPU VM,
/// as a standard deviation over the mean: the calibration of
/// [`reachable_precision`]. Clean blocks on the development VM imply
/// 0.02 (tcp, unix) to 0.32 (memcpy's large copies, c2c) per operation;
/// blocking waits on an idle VM add a halted CPU's wake-up, tens of us on
/// a round trip of 50-180 us. A quarter covers all but the worst.
pub const QUIET_OP_SPREAD: f64 = 0.25;

/// The relative half-width of a median's 95% interval that `operations`
/// operations, each of relative spread `op_spread`, can reach at best
/// (infinite for none).
pub fn reachable_precision(operations: f64, op_spread: f64) -> f64 {
    if operations.is_nan() || operations < 1.0 {
        return f64::INFINITY;
    }
    MEDIAN_HALF_WIDTH_Z * op_spread / operations.sqrt()
}

/// The precision a point is held to: the one asked for, or, when its
/// budget (`budget_ns`) holds too few operations of `op_ns` to reach it
/// on a quiet machine, what that budget can reach.
pub fn precision_within_budget(asked: f64, budget_ns: f64, op_ns: f64) -> f64 {
    let operations = budget_ns / op_ns.max(1.0);
    asked.max(reachable_precision(operations, QUIET_OP_SPREAD))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_holding_many_operations_keeps_the_precision_asked_for() {
        // shm 8 B: 300 ns an operation, 20 ms: 66,666 operations reach 0.24%.
        assert_eq!(precision_within_budget(0.02, 20e6, 300.0), 0.02);
    }

    #[test]
    fn a_point_holding_few_operations_is_held_to_what_they_can_reach() {
        // tcp blocked on an idle VM: 100 us a round trip, 20 ms: 200
        // operations reach 2.456 * 0.25 / sqrt(200) = 4.34%.
        let p = precision_within_budget(0.02, 20e6, 100e3);
        assert!((p - 0.0434).abs() < 1e-3, "{p}");
        // 8 MiB copies of 1 ms in 8 ms: eight operations, 21.7%.
        let p = precision_within_budget(0.02, 8e6, 1e6);
        assert!((p - 0.217).abs() < 1e-3, "{p}");
    }

    #[test]
    fn quadrupling_the_operations_halves_the_reach() {
        let a = reachable_precision(100.0, 0.25);
        let b = reachable_precision(400.0, 0.25);
        assert!((a / b - 2.0).abs() < 1e-12);
    }

    #[test]
    fn no_operation_reaches_nothing() {
        assert!(reachable_precision(0.0, 0.25).is_infinite());
        assert!(reachable_precision(f64::NAN, 0.25).is_infinite());
        assert!(precision_within_budget(0.02, 0.0, 100.0).is_infinite());
    }
}
