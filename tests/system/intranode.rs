//! The intra-node transports (shm, cma) and the baselines (memcpy,
//! cacheline, c2c, c2c-2copy) through the real binary: every mode with integrity checking,
//! every wait mode, cleanup of the shared region after kill -9, efficiency
//! against the limits (the baselines' curves: `baselines.rs`). No speed
//! is asserted.

use crate::common;
use common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

/// cma needs process_vm_readv between processes; some containers forbid it.
fn cma_available() -> bool {
    let cma = wulf::transport::find("cma", &Default::default()).unwrap();
    let why = cma.availability().err();
    why.iter().for_each(|why| eprintln!("cma skipped: {why}"));
    why.is_none()
}

fn intranode() -> Vec<&'static str> {
    let mut t = vec!["shm"];
    if cma_available() {
        t.push("cma");
    }
    t
}

pub(crate) fn sweep_ok(args: &[&str]) -> (serde_json::Value, String) {
    sweep_ok_with(QUICK, args)
}

/// A sweep with the options `quick` (QUICK, or room for every size: see
/// `EVERY_SIZE`); its result and what it printed.
pub(crate) fn sweep_ok_with(quick: &[&str], args: &[&str]) -> (serde_json::Value, String) {
    let dir = tempdir();
    let out = file(&dir, "r.json");
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", out.to_str().unwrap()]);
    all.extend_from_slice(quick);
    let o = run(&all);
    assert!(o.status.success(), "wulf {all:?} failed: {}", stderr(&o));
    wulf::result::read_result(&out).expect("result parses with the typed schema");
    (json(&out), String::from_utf8_lossy(&o.stdout).into_owned())
}

pub(crate) fn medians(r: &serde_json::Value) -> Vec<(u64, f64)> {
    r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["bytes"].as_u64().unwrap(),
                p["median_ns"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_mode_with_integrity() {
    // Sizes around the inline limit (56), a chunk (32 KiB) and many chunks.
    let sizes = "1,56,57,4093,32768,32771,1048579";
    for t in intranode() {
        for mode in ["pingpong", "stream", "bidir"] {
            let (r, _) = sweep_ok_with(
                &every_size("5s"),
                &[
                    t,
                    "--mode",
                    mode,
                    "--integrity",
                    "--sizes",
                    sizes,
                    "--offset",
                    "3",
                ],
            );
            assert_eq!(r["complete"], true, "{t} {mode}");
            assert_eq!(r["options"]["integrity"], true);
            assert_eq!(r["points"].as_array().unwrap().len(), 7);
            assert_eq!(r["options"]["transport"]["wait"], "spin");
            assert_eq!(r["options"]["transport"]["server"]["wait"], "spin");
        }
    }
}

#[test]
fn single_copy_switch_with_integrity() {
    // Around the switch from the ring to single copy, and around chunk
    // multiples on either side of it, in every mode; then with the switch
    // moved by the override (the local peer inherits it), so that one
    // sweep crosses it below a chunk and another never crosses it.
    let t = wulf::transport::shm::SINGLE_COPY_MIN_BYTES as u64;
    let chunk = wulf::transport::shm::CHUNK_BYTES as u64;
    let mut sizes = vec![t - 1, t, t + 1, chunk - 1, chunk, chunk + 1];
    sizes.extend([2 * chunk - 1, 2 * chunk + 1, 9 * chunk + 1]);
    sizes.sort();
    sizes.dedup();
    let list: Vec<String> = sizes.iter().map(u64::to_string).collect();
    let list = list.join(",");
    for mode in ["pingpong", "stream", "bidir"] {
        let args = ["shm", "--mode", mode, "--integrity", "--sizes", &list];
        // Nine sizes of spinning ends: a 5 s sweep kept six at load 5.
        let (r, _) = sweep_ok_with(&every_size("10s"), &args);
        assert_eq!(r["complete"], true, "{mode}");
        let s = &r["options"]["transport"];
        assert_eq!(s["single_copy_min_bytes"], t);
        assert_eq!(s["single_copy_sends"], true, "{mode}: {s}");
        assert_eq!(s["single_copy_receives"], true);
        let stated = s["thresholds"].as_array().unwrap();
        assert!(
            stated
                .iter()
                .any(|x| x["bytes"] == t && x["what"].as_str().unwrap().contains("single-copy")),
            "the switch is a stated threshold: {stated:?}"
        );
        assert_eq!(r["points"].as_array().unwrap().len(), sizes.len());
    }
    for (min, sizes) in [("100", "99,100,101,4097"), ("4000Mi", "100,65537")] {
        let dir = tempdir();
        let out = file(&dir, "r.json");
        let mut args = vec!["sweep", "shm", "--mode", "bidir", "--integrity"];
        args.extend_from_slice(&["--sizes", sizes, "--offset", "3", "--json"]);
        args.push(out.to_str().unwrap());
        args.extend_from_slice(QUICK);
        let o = wulf(&args)
            .env(wulf::transport::shm::SINGLE_COPY_MIN_ENV, min)
            .output()
            .unwrap();
        assert!(o.status.success(), "{min}: {}", stderr(&o));
        let r = json(&out);
        let want = wulf::units::parse_bytes(min).unwrap();
        assert_eq!(r["options"]["transport"]["single_copy_min_bytes"], want);
    }
    // A threshold that is no size is refused, not ignored.
    let o = wulf(&["sweep", "shm", "--sizes", "8", "--quiet"])
        .env(wulf::transport::shm::SINGLE_COPY_MIN_ENV, "lots")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("WULF_SHM_SINGLE_COPY_MIN_BYTES"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn every_wait_mode_with_integrity() {
    for t in intranode() {
        for wait in ["spin", "yield", "block"] {
            let (r, _) = sweep_ok(&[
                t,
                "--wait",
                wait,
                "--mode",
                "bidir",
                "--integrity",
                "--nocache",
                "--sizes",
                "8,200003",
            ]);
            assert_eq!(r["complete"], true, "{t} {wait}");
            assert_eq!(r["options"]["transport"]["wait"], wait);
        }
    }
    // Both ends on one CPU: blocking waits still hand over promptly.
    let t = Instant::now();
    let (r, _) = sweep_ok(&[
        "shm",
        "--wait",
        "block",
        "--cpus",
        "0,0",
        "--integrity",
        "--sizes",
        "8,65536",
    ]);
    assert_eq!(r["placement"]["server_cpu"], 0);
    assert!(t.elapsed() < Duration::from_secs(30));
}

/// Wait until the peer process `pid` has spent half a second of CPU on
/// the sweep's messages (at most 120 s): it uses none while the measuring
/// side measures the limits before the first point, so from then on the
/// two are moving large messages.
fn wait_for_large_transfers(pid: u32) {
    wait_for_cpu_ticks(pid, 50, Duration::from_secs(120));
}

#[test]
fn region_is_gone_after_the_peer_is_killed_mid_run() {
    for t in intranode() {
        let mut server = Server::start(&[]);
        let server_pid = server.child.id() as i32;
        let dir = tempdir();
        let out = file(&dir, "r.json");
        let a = server.addr();
        // Large messages only, so the kill lands in the middle of one.
        let client = wulf(&[
            "sweep",
            t,
            "--peer",
            &a,
            "--budget",
            "20s",
            "--sizes",
            "1Mi:8Mi",
            "--timeout",
            "2s",
            "--quiet",
            "--json",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let client_pid = client.id() as i32;
        wait_for_large_transfers(server.child.id());
        // Mid-run, both ends have mapped the region: its name is gone.
        assert_no_leaked_region(&[server_pid, client_pid]);
        server.child.kill().unwrap();
        let _ = server.child.wait();
        let t0 = Instant::now();
        let o = client.wait_with_output().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10), "{t}: no hang");
        assert_eq!(o.status.code(), Some(3), "{t}: {}", stderr(&o));
        let r = json(&out);
        assert_eq!(r["complete"], false);
        if t == "shm" {
            // The large messages went by single copy, out of memfd send
            // buffers, which have no name to leave behind.
            assert_eq!(r["options"]["transport"]["single_copy_sends"], true);
        }
        assert_no_leaked_region(&[server_pid, client_pid]);
    }
}

#[test]
fn region_is_gone_after_the_client_is_killed_mid_run() {
    let mut client = wulf(&[
        "sweep",
        "shm",
        "--budget",
        "20s",
        "--sizes",
        "1Mi:8Mi",
        "--timeout",
        "2s",
        "--quiet",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let pid = client.id() as i32;
    // The local peer is the client's child.
    let t0 = Instant::now();
    let peer = loop {
        if let Some(&p) = children_of(pid as u32).first() {
            break p;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no local peer");
        std::thread::sleep(Duration::from_millis(50));
    };
    wait_for_large_transfers(peer as u32);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = client.wait();
    // The local peer dies with its parent; give it a moment.
    std::thread::sleep(Duration::from_millis(500));
    assert_no_leaked_region(&[pid]);
}

/// The limit `key` at point `p`, or `None` when the result's warnings say
/// the limit `name` was dropped there: a limit's curve gives up its sizes
/// once its budget share is overrun (slow trials on a busy machine, as
/// when CI runs test binaries side by side), and says so. A limit missing
/// without that warning fails the test.
fn limit_or_warned(
    r: &serde_json::Value,
    p: &serde_json::Value,
    key: &str,
    name: &str,
) -> Option<f64> {
    let v = p["limits"][key].as_f64();
    if v.is_none() {
        let said = r["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str())
            .any(|w| w.contains(&format!("no {name} limit there")));
        assert!(
            said,
            "{key} missing at {p} without a warning: {}",
            r["warnings"]
        );
    }
    v
}

#[test]
fn efficiency_is_recorded_and_summarised() {
    for t in intranode() {
        let (r, out) = sweep_ok(&[t, "--sizes", "8,65536"]);
        let mut all_limits = true;
        for p in r["points"].as_array().unwrap() {
            let l = &p["limits"];
            assert!(l["floor_ns"].as_f64().unwrap() > 0.0, "{p}");
            for (key, name) in [
                ("memcpy_bits_per_s", "memcpy"),
                ("c2c_bits_per_s", "c2c"),
                ("c2c_two_copy_bits_per_s", "c2c-2copy"),
            ] {
                match limit_or_warned(&r, p, key, name) {
                    Some(v) => assert!(v > 0.0, "{p}"),
                    None => all_limits = false,
                }
            }
        }
        let s = &r["summary"];
        let floor = r["points"][0]["limits"]["floor_ns"].as_f64().unwrap();
        let latency = s["latency_ns"].as_f64().unwrap();
        match s["latency_floor_multiple"].as_f64() {
            Some(x) => {
                assert!((x - latency / floor).abs() < 1e-9 * x);
                assert!(out.contains("x the cache-line floor"), "{out}");
            }
            // A floor met at a busier moment is withheld, and said so.
            None => {
                assert!(latency < floor, "withheld although {latency} >= {floor}");
                assert!(
                    r["warnings"]
                        .to_string()
                        .contains("its multiple is withheld"),
                    "{}",
                    r["warnings"]
                );
                eprintln!("{t}: the floor met a busier moment; its multiple is withheld");
            }
        }
        assert!(r["definitions"]["efficiency"]
            .as_str()
            .unwrap()
            .contains("c2c_bits_per_s"));
        if !all_limits {
            eprintln!("{t}: a limit was dropped under load; its fractions are not checked");
            continue;
        }
        assert!(s["peak_memcpy_fraction"].as_f64().unwrap() > 0.0);
        let peak = s["peak_bytes"].as_u64().unwrap();
        let at_peak = r["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["bytes"] == peak)
            .unwrap();
        let c2c = at_peak["limits"]["c2c_bits_per_s"].as_f64().unwrap();
        let f = s["peak_c2c_fraction"].as_f64().unwrap();
        assert!((f - s["peak_bits_per_s"].as_f64().unwrap() / c2c).abs() < 1e-9 * f);
        assert!(out.contains("of memcpy bandwidth"), "{out}");
        assert!(out.contains("of the core-to-core single copy"), "{out}");
    }
    // Cold (--nocache) sweeps and their cold c2c limit: c2c_cold.rs.
}

#[test]
fn run_measures_baselines_first_and_reuses_them_as_limits() {
    let dir = tempdir();
    let o = run(&[
        "run",
        "--only",
        "cacheline,memcpy,c2c,c2c-2copy,shm",
        // Both sizes of every baseline, whose figures the shm points
        // carry: the budget is a deadline shared by five sweeps (issue 43).
        "--budget",
        "3s",
        "--sizes",
        "8,65536",
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("x floor") && table.contains("of memcpy") && table.contains("of c2c"),
        "{table}"
    );
    for row in [
        "cacheline pingpong",
        "memcpy stream",
        "c2c pingpong",
        "c2c-2copy pingpong",
        "shm pingpong",
    ] {
        assert!(table.contains(row), "{table}");
    }
    let run_dir = crate::common::only_dir(dir.path());
    the_last_screen_is_the_reports_answer(&table, &run_dir);
    let memcpy = json(&run_dir.join("memcpy-stream.json"));
    let cacheline = json(&run_dir.join("cacheline-pingpong.json"));
    let shm = json(&run_dir.join("shm-pingpong.json"));
    let c2c = json(&run_dir.join("c2c-pingpong.json"));
    let two = json(&run_dir.join("c2c-2copy-pingpong.json"));
    // The shm points are measured against exactly the baselines' figures.
    for (i, p) in shm["points"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            p["limits"]["memcpy_bits_per_s"],
            memcpy["points"][i]["bits_per_s"]
        );
        // The lowest floor measured (the sweep also measures one after).
        let floor_ns = p["limits"]["floor_ns"].as_f64().unwrap();
        let base_ns = cacheline["points"][0]["median_ns"].as_f64().unwrap();
        assert!(
            floor_ns > 0.0 && floor_ns <= base_ns,
            "{floor_ns} > {base_ns}"
        );
        assert_eq!(
            p["limits"]["c2c_bits_per_s"],
            c2c["points"][i]["bits_per_s"]
        );
        assert_eq!(
            p["limits"]["c2c_two_copy_bits_per_s"],
            two["points"][i]["bits_per_s"]
        );
    }
}

/// `wulf run` ends with the sentences its report opens with (issue 49
/// item 18), after the paths of the results, as text: the peak sentence
/// the page has, word for word, without markup.
fn the_last_screen_is_the_reports_answer(stdout: &str, run_dir: &std::path::Path) {
    let after = stdout
        .split("report:  ")
        .nth(1)
        .unwrap_or_else(|| panic!("no report path in:\n{stdout}"));
    let answer = after.split_once('\n').map_or("", |(_, rest)| rest);
    assert!(
        answer.starts_with("\nThe answer (the report opens with it):\n"),
        "the run does not end with the answer:\n{stdout}"
    );
    assert!(
        !answer.contains('<') && !answer.contains("&times;"),
        "markup:\n{answer}"
    );
    // One transport (the baselines are references): its peak, as the page says it.
    let peak = answer
        .split("\n  - ")
        .find(|s| s.starts_with("Peak: "))
        .unwrap_or_else(|| panic!("no peak sentence:\n{answer}"));
    let figure = peak.split_whitespace().nth(1).unwrap();
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(
        html.contains(&format!("Peak: <b>{figure}")),
        "{figure} not on the page"
    );
}

#[test]
fn bad_requests_are_usage_errors() {
    for args in [
        vec!["sweep", "memcpy", "--mode", "pingpong", "--sizes", "8"],
        vec!["sweep", "cacheline", "--mode", "bidir", "--sizes", "8"],
        vec!["sweep", "cacheline", "--sizes", "1Mi"],
        vec!["sweep", "c2c-2copy", "--mode", "stream", "--sizes", "8"],
        vec!["sweep", "c2c", "--sizes", "1Gi"],
        vec!["sweep", "memcpy", "--peer", "127.0.0.1", "--sizes", "8"],
        vec!["sweep", "shm", "--wait", "sometimes"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    // shm also works against a `wulf serve` on this host: that it runs,
    // not what it measures, so a short budget (the default 10 s was most
    // of this test's time).
    let server = Server::start(&[]);
    let addr = server.addr();
    let mut args = vec!["sweep", "shm", "--peer", &addr, "--sizes", "8"];
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}
