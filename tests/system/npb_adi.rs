//! What the end-to-end tests of SP and BT share: both run NPB's
//! multi-partition (`p * p` ranks, `p` cells each) with the same face
//! exchange and the same line-sweep pipeline, differing only in the
//! values a pipeline stage carries per line; and both verify NPB's ten
//! values (five residual norms, five error norms).

use crate::npb_kernels::npb;
use wulf::result::NpbResult;

/// What SP or BT sends in its timed section of `steps` steps on `p * p`
/// ranks of a grid of `n` points a side, summed over the ranks, when a
/// forward pipeline stage carries `forward` values per line and a
/// backward one `backward`. Per step: the faces (NPB's `copy_faces`, two
/// layers of 5 values across each of the `p - 1` interfaces between
/// slabs, both ways, along 3 axes, one message per rank, axis and
/// direction); and the three sweeps, each `p - 1` stages forward and
/// `p - 1` back over the `(n - 2)^2` interior lines of a slab, one
/// message per rank and stage. One rank sends nothing.
pub(crate) fn adi_traffic(n: u64, steps: u64, p: u64, carries: [u64; 2]) -> (u64, u64) {
    if p == 1 {
        return (0, 0);
    }
    let faces = 3 * 2 * (p - 1) * 2 * 5 * n * n * 8;
    let sweeps = 3 * (p - 1) * (carries[0] + carries[1]) * (n - 2) * (n - 2) * 8;
    let messages = 6 * p * p + 3 * 2 * (p - 1) * p * p;
    (steps * (faces + sweeps), steps * messages)
}

/// `wulf npb KERNEL --class S --np 1,4 --via shm,tcp` for SP or BT: every
/// run verified its ten values within 1e-8 on a `p x p` grid and sent
/// what `traffic(p)` says.
pub(crate) fn check_class_s_on_1_and_4(kernel: &str, traffic: impl Fn(u64) -> (u64, u64)) {
    let r: NpbResult = npb(kernel, "S", "1,4", "shm,tcp");
    assert_eq!(r.kernel, kernel);
    assert!(r.complete);
    assert_eq!(r.runs.len(), 4);
    for run in &r.runs {
        let label = format!("{kernel} {} np={}", run.via, run.nprocs);
        assert!(run.error.is_none(), "{label}: {:?}", run.error);
        let o = &run.outcomes[0];
        assert!(o.verified, "{label}");
        assert_eq!(o.checks.len(), 10, "{label}");
        assert!(o.relative_error <= 1e-8, "{label}: {}", o.relative_error);
        let p = if run.nprocs == 1 { 1 } else { 2 };
        assert_eq!(o.proc_grid, [p, p, 1], "{label}");
        let (bytes, messages) = traffic(p as u64);
        assert_eq!(o.sent_bytes, Some(bytes), "{label}");
        assert_eq!(o.sent_messages, Some(messages), "{label}");
        assert!(o.mop_s > 0.0, "{label}");
    }
}
