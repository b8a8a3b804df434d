//! What a result file may make `wulf report` and `wulf compare` do is
//! bounded (issue 45): the points of a result (the analysis once grew as
//! n^2.7: 5,000 points took 282 s), the length and number of its strings
//! (a 250 MB warning once took 6.36 GB to draw), and both commands end at
//! the first Ctrl-C or SIGTERM (they once ran on to the end). And `wulf
//! hpl` refuses a problem whose matrix exceeds the machine's memory.

use std::io::Write;

use serde_json::{json, Value};

use super::{fixture, refused, write};
use crate::common::*;

/// The fixture with `n` points of ascending sizes 1..=n (every byte, the
/// densest schedule), each a copy of its first point on a Hockney line,
/// with a slow point every 97 and a step at two thirds: work for the
/// drop-out search and the segmentation.
fn dense(n: usize) -> Value {
    let mut v = fixture();
    let first = v["points"][0].clone();
    let points: Vec<Value> = (1..=n)
        .map(|b| {
            let mut p = first.clone();
            let step = if b > 2 * n / 3 { 4000.0 } else { 0.0 };
            let slow = if b % 97 == 0 { 3.0 } else { 1.0 };
            let t = (2000.0 + b as f64 / 2.0 + step) * slow;
            p["bytes"] = json!(b);
            p["trials_ns"] = json!([t, t, t]);
            p["trials"] = json!(3);
            for f in ["min_ns", "median_ns", "mean_ns", "p90_ns", "p99_ns"] {
                p[f] = json!(t);
            }
            p["ci_low_ns"] = json!(t * 0.999);
            p["ci_high_ns"] = json!(t * 1.001);
            p["bits_per_s"] = json!(8e9 * b as f64 / t);
            p
        })
        .collect();
    v["points"] = Value::Array(points);
    v.as_object_mut().unwrap().remove("confirmation");
    v
}

/// A result of more points than any schedule makes is refused, naming
/// `points` and the limit; one of exactly the limit, every size a byte
/// apart, is analysed, drawn and compared (this took minutes when the
/// analysis was cubic in dense points; no time is asserted here, only
/// that it ends with a report).
#[test]
fn points_beyond_the_limit_are_refused_and_the_limit_is_drawn() {
    let limit = wulf::result::validate::MAX_POINTS;
    let dir = tempdir();
    let over = write(&dir, "over.json", &dense(limit + 1).to_string());
    refused(
        &over,
        &[
            &format!("points has {} entries", limit + 1),
            &format!("{limit} at most"),
        ],
    );
    let at = write(&dir, "at.json", &dense(limit).to_string());
    let html = file(&dir, "at.html");
    let o = run(&["report", at.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("</html>"));
    let o = run(&["compare", at.to_str().unwrap(), at.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("latency"));
}

/// Strings are bounded in length (a 250 MB warning of `<` once took 6.36
/// GB to draw as HTML) and warnings in number (ten million empty ones
/// took 2.27 GB): refused naming the field, before anything is decoded.
#[test]
fn long_and_numerous_strings_are_refused_with_the_field_named() {
    let dir = tempdir();
    let long = wulf::result::bounds::MAX_STRING_BYTES + 1;
    let mut v = fixture();
    v["warnings"] = json!(["fine", "<".repeat(long)]);
    refused(
        &write(&dir, "long.json", &v.to_string()),
        &["warnings[1]", &format!("a string of {long} bytes")],
    );
    let mut v = fixture();
    v["host"]["hostname"] = json!("h".repeat(long));
    refused(
        &write(&dir, "host.json", &v.to_string()),
        &["host.hostname", "longer than a wulf result holds"],
    );
    let many = wulf::result::validate::MAX_WARNINGS + 1;
    let mut v = fixture();
    v["warnings"] = json!(vec![""; many]);
    refused(
        &write(&dir, "many.json", &v.to_string()),
        &[&format!("warnings has {many} entries")],
    );
}

/// `wulf report` (and `compare`) reading a file while the first SIGTERM
/// comes: it stops at its next check and exits 130, writing nothing (it
/// once ran to the end, exit 0). The file is a FIFO, so the signal surely
/// comes while the command is reading: the writer's open returns only
/// once wulf opened it, long after its handler was installed.
#[test]
fn the_first_sigterm_ends_report_and_compare() {
    let dir = tempdir();
    let text = fixture().to_string();
    let good = write(&dir, "good.json", &text);
    let html = file(&dir, "r.html");
    let runs: [Vec<&str>; 2] = [
        vec!["report", "FIFO", "-o", html.to_str().unwrap()],
        vec!["compare", good.to_str().unwrap(), "FIFO"],
    ];
    for (k, args) in runs.iter().enumerate() {
        let fifo = dir.path().join(format!("f{k}.json"));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let args: Vec<&str> = args
            .iter()
            .map(|a| {
                if *a == "FIFO" {
                    fifo.to_str().unwrap()
                } else {
                    a
                }
            })
            .collect();
        let child = wulf(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        // The handler runs on its own thread: give it time to set the flag.
        std::thread::sleep(std::time::Duration::from_millis(300));
        w.write_all(text.as_bytes()).unwrap();
        drop(w);
        let o = child.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(130), "{args:?}: {e}");
        assert!(e.contains("interrupted"), "{args:?}: {e}");
    }
    assert!(!html.exists(), "a report was written after the signal");
}

/// `wulf hpl --n N` whose matrix (8 N^2 bytes) exceeds this machine's
/// memory is refused before anything starts, exit 2, naming `--n` (`--n
/// 1000000`, 8 TB, was launched, and is refused on any machine with less).
#[test]
fn an_hpl_problem_beyond_memory_is_refused() {
    let started = std::time::Instant::now();
    let o = run(&["hpl", "--n", "1000000", "--np", "1"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--n 1000000:") && e.contains("memory"), "{e}");
    assert!(started.elapsed().as_secs() < 5, "started before refusing");
}
