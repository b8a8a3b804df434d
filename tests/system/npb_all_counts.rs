//! `wulf npb all` with a process count only some kernels can use runs
//! those and skips the others, saying so (issue 31, item 6): `--np 3`
//! runs EP, which takes any count, where it refused everything before.

use crate::common;

#[test]
fn all_runs_the_kernels_that_can_use_the_counts_given() {
    let _serial = common::serial();
    let out = common::run(&[
        "npb",
        "all",
        "--class",
        "S",
        "--np",
        "3",
        "--via",
        "shm",
        "--repetitions",
        "1",
    ]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), common::stderr(&out));
    assert!(out.status.success(), "{text}{err}");
    assert!(text.contains("NAS EP class S"), "{text}");
    assert!(text.contains("best of 1 verified run"), "{text}");
    for kernel in ["cg", "is", "mg"] {
        assert!(
            err.contains(&format!("wulf: {kernel}: skipped")),
            "{kernel} not said skipped: {err}"
        );
        assert!(!text.contains(&format!("NAS {} class", kernel.to_uppercase())));
    }
}
