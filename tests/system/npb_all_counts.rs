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

/// A process of someone else's spinning beside an "unloaded" run: the run
/// records it (`foreign_cpus`, the CPU time of the processes wulf did
/// not start, from /proc), warns and marks its figures (issue 31, item 5). The
/// spinner runs for a bounded time and is killed either way.
#[test]
fn an_unloaded_run_beside_foreign_work_is_marked_and_warned() {
    let _serial = common::serial();
    let dir = common::tempdir();
    let json = common::file(&dir, "ep.json");
    let mut spinner = std::process::Command::new("sh")
        .args([
            "-c",
            "end=$(($(date +%s) + 60)); while [ $(date +%s) -lt $end ]; do :; done",
        ])
        .spawn()
        .expect("sh");
    let out = common::run(&[
        "npb",
        "ep",
        "--class",
        "S",
        "--np",
        "1",
        "--via",
        "shm",
        "--repetitions",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    let _ = spinner.kill();
    let _ = spinner.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", common::stderr(&out));
    let r = common::json(&json);
    let foreign = r["runs"][0]["foreign_cpus"].as_f64().expect("foreign_cpus");
    // The spinner alone is one CPU's worth; the shell's own forks add to it.
    assert!(
        foreign > 0.5,
        "a spinning process read as {foreign:.2} CPUs"
    );
    assert!(text.contains("other work kept"), "{text}");
    assert!(text.contains('*'), "{text}");
}
