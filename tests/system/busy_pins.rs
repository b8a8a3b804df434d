//! Pinned ends on busy CPUs (issue 44): when other work keeps the CPUs a
//! sweep would pin its ends to busy, the ends move, or are unpinned where
//! they block between messages, or the result says why they stay.
//! Holds `common::serial()`: the hogs load every CPU.

use crate::clean_blocks::{sweep_with, Hogs};
use crate::common::*;

/// The warnings of `r`, as one text.
fn warnings(r: &serde_json::Value) -> String {
    r["warnings"].to_string()
}

/// Where the two ends ran: (client CPU, server CPU), None if unpinned.
fn cpus(r: &serde_json::Value) -> (Option<u64>, Option<u64>) {
    let p = &r["placement"];
    (p["client_cpu"].as_u64(), p["server_cpu"].as_u64())
}

#[test]
fn ends_on_busy_cpus_are_unpinned_or_stay_and_the_result_says_why() {
    let _serial = serial();
    let n = wulf::sys::cpu_count();
    if n < 2 || !in_path("taskset") || !in_path("timeout") {
        eprintln!("SKIPPED: needs two CPUs, taskset and timeout");
        return;
    }
    let all: Vec<usize> = (0..n).collect();
    let hogs = Hogs::start(&all).expect("start the hogs");
    // Let the hogs show in /proc/stat before the sweeps read it.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // tcp's ends block between messages: with no CPU free, unpinned.
    let tcp = sweep_with("tcp", "8", &[]);
    // shm's ends spin: they stay apart, pinned, and the result says so.
    let shm = sweep_with("shm", "8", &[]);
    // Named CPUs stay whatever the ends do.
    let named = sweep_with("tcp", "8", &["--cpus", "0,1"]);
    let unpinned = sweep_with("tcp", "8", &["--no-pin"]);
    drop(hogs);
    let w = warnings(&tcp);
    assert_eq!(cpus(&tcp), (None, None), "{w}");
    assert!(
        w.contains("the ends were not pinned") && w.contains("CPU 0"),
        "{w}"
    );
    let w = warnings(&shm);
    assert_eq!(cpus(&shm), (Some(0), Some(1)), "{w}");
    assert!(w.contains("the ends stay pinned"), "{w}");
    let w = warnings(&named);
    assert_eq!(cpus(&named), (Some(0), Some(1)), "{w}");
    assert!(w.contains("as --cpus asks"), "{w}");
    let w = warnings(&unpinned);
    assert_eq!(cpus(&unpinned), (None, None), "{w}");
    assert!(
        !w.contains("pinned"),
        "--no-pin asks for nothing to be said: {w}"
    );
}

#[test]
fn in_process_baselines_on_busy_cpus_move_or_say_why() {
    let _serial = serial();
    let n = wulf::sys::cpu_count();
    if n < 2 || !in_path("taskset") || !in_path("timeout") {
        eprintln!("SKIPPED: needs two CPUs, taskset and timeout");
        return;
    }
    // One hog on CPU 0: memcpy's one thread moves to a free CPU, or, when
    // other work on this machine keeps every other CPU busy too (a loaded
    // CI machine), stays and says so.
    let hog = Hogs::start(&[0]).expect("start the hog");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let memcpy = sweep_with("memcpy", "4Ki", &[]);
    drop(hog);
    let w = warnings(&memcpy);
    let moved = cpus(&memcpy).0.is_some_and(|c| c != 0);
    let said = w.contains("CPU 0") && w.contains("no other CPU was free");
    assert!(moved || said, "memcpy stayed on the busy CPU 0 unsaid: {w}");
    // Hogs on every CPU: the cache-line ping-pong's two spinning threads
    // have nowhere to go; they stay, and the result says so.
    let all: Vec<usize> = (0..n).collect();
    let hogs = Hogs::start(&all).expect("start the hogs");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let line = sweep_with("cacheline", "8", &[]);
    drop(hogs);
    let w = warnings(&line);
    assert_eq!(cpus(&line), (Some(0), Some(1)), "{w}");
    assert!(w.contains("stay pinned") && w.contains("CPU 0"), "{w}");
}
