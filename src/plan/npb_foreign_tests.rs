//! Tests of the foreign-work accounting (`npb_foreign`).

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use super::*;

#[test]
fn only_real_load_warns() {
    assert!(warning("x", 0.1).is_none());
    assert!(warning("mg shm np=2", 0.6).unwrap().contains("0.60 CPUs"));
}

#[test]
fn a_stat_line_parses_whatever_the_command_name() {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
    // majflt cmajflt utime stime cutime cstime prio nice threads itreal
    // starttime ...
    let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 10 0 0 0 30 12 5 3 20 0 1 0 9001 0 0";
    let p = parse_stat(line).unwrap();
    assert_eq!((p.ppid, p.start, p.ticks, p.kernel), (7, 9001, 50, false));
    let kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 2 0 0";
    assert!(parse_stat(kthread).unwrap().kernel);
    assert_eq!(parse_stat("garbage"), None);
}

fn entry(ppid: i32, start: u64, ticks: u64) -> Proc {
    Proc {
        ppid,
        start,
        ticks,
        child_ticks: 0,
        kernel: false,
        run_ns: None,
    }
}

/// The run's own tree (wulf 100, a rank 101, its helper 102), a kernel
/// thread and other work: only the other work counts, its ended child
/// through its parent, a reused pid as a new process.
#[test]
fn only_processes_the_run_did_not_start_count() {
    let a: Procs = [
        (1, entry(0, 1, 0)),
        (100, entry(1, 50, 10)),
        (200, entry(1, 60, 40)),
        (201, entry(200, 61, 7)),
        (300, entry(1, 70, 5)),
    ]
    .into();
    let mut b: Procs = [
        (1, entry(0, 1, 0)),
        (100, entry(1, 50, 30)),
        (101, entry(100, 80, 500)),
        (102, entry(101, 81, 200)),
        // 201 ended after 9 ticks; 200 reaped it and took all 9.
        (200, entry(1, 60, 40 + 3 + 9)),
        // 300 ended; another process got its pid.
        (300, entry(1, 90, 4)),
    ]
    .into();
    b.insert(
        3,
        Proc {
            kernel: true,
            ..entry(2, 5, 900)
        },
    );
    // 200 ran 3, 201 ran 2 (9 - 7), the new 300 ran 4; the old 300 ended
    // unreaped by anyone counted (-5, clamped below by the sum).
    assert_eq!(foreign_ticks(&a, &b, 100), 3 + 2 + 4 - 5);
    // Nothing is foreign with nothing else running.
    let quiet: Procs = b
        .iter()
        .filter(|(_, p)| p.ppid >= 100)
        .map(|(k, v)| (*k, *v))
        .collect();
    assert_eq!(foreign_ticks(&quiet, &quiet, 100), 0);
}

/// The ticks `pid` has taken so far (0 when it is gone).
fn ticks_of(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_stat(&t))
        .map_or(0, |p| p.ticks)
}

/// A real reading: a shell of this process spins in a grandchild; its
/// time is this run's, never foreign, while the same readings taken as
/// another process's count it.
#[test]
fn the_runs_own_spinning_descendants_are_not_foreign() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "sh -c 'while :; do :; done' & echo $! ; wait"])
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("sh");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let spinner: i32 = line.trim().parse().expect("the spinner's pid");
    let a = scan();
    let before = ticks_of(spinner);
    let deadline = Instant::now() + Duration::from_secs(30);
    while ticks_of(spinner) < before + 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let b = scan();
    let spun = b
        .get(&spinner)
        .map_or(0, |p| p.ticks)
        .saturating_sub(a.get(&spinner).map_or(0, |p| p.ticks));
    // SAFETY: kill(2) with the child's own group.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    assert!(spun >= 5, "the spinner ran {spun} ticks");
    let me = std::process::id() as i32;
    assert!(ours(&b, me, spinner), "the spinner is a grandchild");
    // Taken as pid 0's (nothing here is), the spinner's time counts.
    let as_ours = foreign_ticks(&a, &b, me);
    let as_others = foreign_ticks(&a, &b, 0);
    assert!(
        as_others >= as_ours + spun,
        "{as_others} vs {as_ours} + {spun}"
    );
}

/// The threads' run times: growth of the processes not the run's, a new
/// one from 0, an ended one left out; none without a reading.
#[test]
fn run_times_count_only_other_processes_growth() {
    let ns = |ppid, start, run_ns| Proc {
        run_ns: Some(run_ns),
        ..entry(ppid, start, 0)
    };
    let a: Procs = [
        (100, ns(1, 50, 1_000)),
        (200, ns(1, 60, 5_000)),
        (300, ns(1, 70, 9_000)),
    ]
    .into();
    let b: Procs = [
        (100, ns(1, 50, 900_000)),
        (101, ns(100, 80, 7_000_000)),
        (200, ns(1, 60, 5_700)),
        // 300 ended; 400 started and ran 3 us.
        (400, ns(1, 90, 3_000)),
    ]
    .into();
    assert_eq!(foreign_ns(&a, &b, 100, 1e7), Some(700.0 + 3_000.0));
    let mut unread = b.clone();
    unread.insert(500, entry(1, 95, 2));
    assert_eq!(foreign_ns(&a, &unread, 100, 1e7), None);
    // 600 forked 601 (2 ticks before the window) and reaped it: its
    // children's time grew by 5 ticks, 3 of them in the window.
    let mut a2 = a.clone();
    a2.insert(600, ns(1, 100, 0));
    a2.insert(601, entry(600, 101, 2));
    let mut b2 = b.clone();
    b2.insert(
        600,
        Proc {
            child_ticks: 5,
            ..ns(1, 100, 0)
        },
    );
    assert_eq!(foreign_ns(&a2, &b2, 100, 1e7), Some(3_700.0 + 3.0 * 1e7));
}

/// A real reading agrees with the threads' own clocks: a spinning child
/// taken as another process's counts about the CPU time it had.
#[test]
fn a_real_spinner_reads_its_run_time() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .expect("sh");
    let pid = child.id() as i32;
    let a = scan();
    std::thread::sleep(Duration::from_millis(200));
    let b = scan();
    let _ = child.kill();
    let _ = child.wait();
    let Some(grew) = b.get(&pid).and_then(|p| p.run_ns) else {
        return; // no schedstat in this kernel
    };
    let spun = grew - a.get(&pid).and_then(|p| p.run_ns).unwrap_or(0);
    let me = std::process::id() as i32;
    let read = |me| foreign_ns(&a, &b, me, 1e7).expect("a reading");
    let others = read(0) - read(me);
    // Ours when read as ours; counted when read as pid 0's.
    assert!(others >= spun as f64, "{others} vs {spun}");
    assert!(spun > 10_000_000, "the spinner ran {spun} ns in 0.2 s");
}
