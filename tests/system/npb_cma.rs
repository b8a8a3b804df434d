//! Every NAS kernel over cma (single copy with `process_vm_readv`): class
//! S verified at the process counts each kernel takes, and the bytes it
//! sent equal to what the same run sends over shm (the transport moves
//! the messages; it must not change them). Issue 31's "over tcp, shm, cma
//! and each MPI". Skipped, saying why, where the kernel or a container
//! forbids `process_vm_readv`.

use crate::common;
use common::*;

use crate::npb_kernels::npb;

/// cma needs process_vm_readv between processes; some containers forbid it.
fn cma_available() -> bool {
    let cma = wulf::transport::find("cma", &Default::default()).unwrap();
    let why = cma.availability().err();
    why.iter().for_each(|why| eprintln!("cma skipped: {why}"));
    why.is_none()
}

/// Each kernel and a process count it takes besides 1 (SP and BT: squares).
const KERNELS: &[(&str, &str)] = &[
    ("cg", "2"),
    ("ep", "2"),
    ("is", "2"),
    ("mg", "2"),
    ("lu", "2"),
    ("ft", "2"),
    ("sp", "4"),
    ("bt", "4"),
];

#[test]
fn every_kernel_verifies_over_cma_and_sends_what_it_sends_over_shm() {
    let _s = serial();
    if !cma_available() {
        return;
    }
    for (kernel, np) in KERNELS {
        let r = npb(kernel, "S", np, "cma,shm");
        assert_eq!(r.runs.len(), 2, "{kernel}");
        let mut sent = Vec::new();
        for run in &r.runs {
            let label = format!("{kernel} {} np={}", run.via, run.nprocs);
            assert!(run.error.is_none(), "{label}: {:?}", run.error);
            let o = &run.outcomes[0];
            assert!(o.verified, "{label}");
            sent.push((o.sent_bytes, o.sent_messages));
        }
        assert!(sent[0].0.is_some_and(|b| b > 0), "{kernel}: {sent:?}");
        assert_eq!(sent[0], sent[1], "{kernel}: cma against shm");
    }
}
