//! Scarce or broken resources: few file descriptors, /dev/shm read-only or
//! full. Each is a clear error naming the resource, never a panic or a
//! crash (a full tmpfs used to kill shm sweeps with SIGBUS).

use crate::common;

use std::process::Command;

use common::*;

/// Run `script` with `W` set to the wulf binary; its output.
fn sh(script: &str, wrapper: &[&str]) -> std::process::Output {
    let full = format!("W={}\n{script}", wulf_bin());
    let mut args: Vec<&str> = wrapper.to_vec();
    args.extend(["sh", "-c", &full]);
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

fn root_with_unshare() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && in_path("unshare") {
        return true;
    }
    if std::env::var_os("WULF_REQUIRE_LAB").is_some() {
        panic!("resource tests need root and unshare");
    }
    eprintln!("SKIPPED: needs root and unshare");
    false
}

#[test]
fn few_file_descriptors_still_measure_or_say_why() {
    for (limit, transport) in [(24, "tcp"), (24, "unix"), (16, "shm"), (16, "cma")] {
        let o = sh(
            &format!(
                "ulimit -n {limit} && exec $W sweep {transport} --sizes 1,4Ki --budget 300ms --quiet --timeout 5s"
            ),
            &[],
        );
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{transport}: {e}");
        // Exit 1 (this end ran out) or 3 (the local peer ran out and
        // refused: shm and cma ends hold an abort pipe each since the
        // server ends a killed client's block at once), named either way.
        assert!(
            o.status.success()
                || (matches!(o.status.code(), Some(1 | 3))
                    && e.contains("wulf: error")
                    && e.contains("Too many open files")),
            "{transport} with {limit} descriptors: {:?} {e}",
            o.status
        );
    }
    // Too few to start at all: an error, not a crash.
    let o = sh(
        "ulimit -n 5 && exec $W sweep tcp --sizes 1 --budget 300ms --quiet",
        &[],
    );
    assert!(!o.status.success());
    assert!(
        o.status.code().is_some_and(|c| c < 100),
        "{:?} {}",
        o.status,
        stderr(&o)
    );
}

#[test]
fn a_read_only_dev_shm_makes_shm_and_cma_unavailable_with_the_reason() {
    if !root_with_unshare() {
        return;
    }
    let o = sh(
        "mount -t tmpfs -o ro,size=64k tmpfs /dev/shm || exit 99
$W sweep shm --sizes 1 --budget 300ms --quiet; echo \"shm=$?\"
$W sweep cma --sizes 1 --budget 300ms --quiet; echo \"cma=$?\"
$W sweep tcp --sizes 1 --budget 300ms --quiet >/dev/null; echo \"tcp=$?\"",
        &["unshare", "--mount"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let e = stderr(&o);
    assert!(out.contains("shm=1") && out.contains("cma=1"), "{out} {e}");
    assert!(out.contains("tcp=0"), "{out} {e}");
    assert_eq!(e.matches("unavailable here").count(), 2, "{e}");
    assert!(e.contains("Read-only file system"), "{e}");
}

#[test]
fn a_full_dev_shm_is_an_error_not_a_crash() {
    if !root_with_unshare() {
        return;
    }
    let o = sh(
        "mount -t tmpfs -o size=16k tmpfs /dev/shm || exit 99
$W sweep shm --sizes 1,1Mi --budget 300ms --quiet; echo \"shm=$?\"",
        &["unshare", "--mount"],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let e = stderr(&o);
    let code: i32 = out
        .trim()
        .rsplit('=')
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or(-1);
    assert!((1..100).contains(&code), "exit {code}: {e}");
    assert!(e.contains("No space left") || e.contains("full"), "{e}");
}
