//! Where results are written: only a regular file is ever replaced. A
//! device, FIFO or socket is written through (as root, `--json /dev/null`
//! once replaced /dev/null with a regular file for the whole machine); a
//! symlink's target is replaced and the link kept; a directory is refused
//! before anything is measured.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::common::*;

fn sweep_to(outputs: &[&str]) -> std::process::Output {
    let mut args = vec!["sweep", "tcp", "--sizes", "8"];
    args.extend_from_slice(QUICK);
    args.extend_from_slice(outputs);
    run(&args)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_device_is_written_through_never_replaced() {
    if !is_root() {
        assert!(
            std::env::var_os("WULF_REQUIRE_LAB").is_none(),
            "mknod needs root, and this run requires the root tests"
        );
        eprintln!("skipped: mknod needs root");
        return;
    }
    let dir = tempdir();
    // A private null device (1, 3), so that a regression cannot break the
    // machine's own /dev/null.
    let null = file(&dir, "null");
    let made = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&null)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(made.success());
    let n = null.to_str().unwrap();
    let o = sweep_to(&["--json", n, "--csv", n, "--openmetrics", n]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp-pingpong.json");
    let o = run(&["report", fixture.to_str().unwrap(), "-o", n]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kind = std::fs::symlink_metadata(&null).unwrap().file_type();
    assert!(
        kind.is_char_device(),
        "the device node was replaced: {kind:?}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn a_fifo_is_written_through_to_its_reader() {
    let dir = tempdir();
    let fifo = file(&dir, "fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = sweep_to(&["--json", fifo.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Checked before joining: had the FIFO been replaced, its reader would
    // wait for a writer forever.
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let text = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("a whole result came through");
    assert_eq!(v["points"][0]["bytes"], 8);
}

#[test]
fn a_symlink_keeps_its_place_and_its_target_is_replaced() {
    let dir = tempdir();
    let target = file(&dir, "target.json");
    std::fs::write(&target, "old").unwrap();
    let link = file(&dir, "link.json");
    std::os::unix::fs::symlink("target.json", &link).unwrap();
    // And a dangling link creates the file it names.
    let dangling = file(&dir, "dangling.json");
    std::os::unix::fs::symlink("sub/new.json", &dangling).unwrap();
    let o = sweep_to(&[
        "--json",
        link.to_str().unwrap(),
        "--csv",
        dangling.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(json(&target)["points"][0]["bytes"], 8);
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    let csv = std::fs::read_to_string(dir.path().join("sub/new.json")).unwrap();
    assert!(csv.lines().count() >= 2, "{csv}");
}

#[test]
fn a_directory_is_refused_before_measuring() {
    let dir = tempdir();
    let d = dir.path().to_str().unwrap();
    for flag in ["--json", "--csv", "--openmetrics"] {
        let started = std::time::Instant::now();
        let o = sweep_to(&[flag, d]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
        assert!(started.elapsed().as_secs() < 5, "measured before refusing");
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp-pingpong.json");
    let o = run(&["report", fixture.to_str().unwrap(), "-o", d]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(std::fs::metadata(dir.path()).unwrap().is_dir());
}

/// Every output path is checked before anything is measured (issue 45,
/// item 6): a symlink loop (once refused after the sweep), a file where a
/// directory of outputs is wanted (`wulf run --out FILE` once measured for
/// 11 s, then said "Not a directory"), a path under a file, and `wulf hpl
/// --json DIR` (once run HPL, then "is a directory"). Each is exit 2 with
/// the path named, and nothing is written.
#[test]
fn every_output_path_is_checked_before_measuring() {
    let dir = tempdir();
    let loopa = dir.path().join("loopa");
    std::os::unix::fs::symlink(dir.path().join("loopb"), &loopa).unwrap();
    std::os::unix::fs::symlink(&loopa, dir.path().join("loopb")).unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "a file").unwrap();
    let under = plain.join("r.json");
    let (loopa, plain, under) = (
        loopa.to_str().unwrap(),
        plain.to_str().unwrap(),
        under.to_str().unwrap(),
    );
    let d = dir.path().to_str().unwrap();
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["sweep", "tcp", "--sizes", "8", "--json", loopa],
            "loop",
        ),
        (
            vec!["sweep", "tcp", "--sizes", "8", "--csv", under],
            "not a directory",
        ),
        (vec!["run", "--quick", "--out", plain], "not a directory"),
        (vec!["run", "--quick", "--out", under], "not a directory"),
        (vec!["hpl", "--n", "64", "--json", d], "is a directory"),
    ];
    for (args, says) in cases {
        let started = std::time::Instant::now();
        let o = run(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: expected {says:?} in {e}");
        // Generous: the refusal is at parsing, a sweep takes longer.
        assert!(
            started.elapsed().as_secs() < 5,
            "{args:?} measured before refusing"
        );
    }
    assert_eq!(std::fs::read_to_string(plain).unwrap(), "a file");
}
