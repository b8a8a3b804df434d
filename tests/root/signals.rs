//! SIGTERM and SIGHUP end a command and everything it started (issue 43
//! item 3): `wulf sweep --lab`, `wulf hpl --lab`, `wulf npb --launch
//! lab:NAME` and `wulf matrix --lab`, each signalled at a point the test
//! waits for (the relay, the MPI ranks, the NAS ranks or the agents exist),
//! leave no process, no lab namespace and no shared-memory region, within
//! a few seconds, and exit 130.
//!
//! The processes a command started are found three ways, so that none can
//! hide: every descendant of wulf seen just before the signal (their pids
//! must be gone after), every process whose environment names the lab
//! (`WULF_LAB`: in-lab relays, mpirun, orted, hpcc, agents and ranks all
//! inherit it, also once re-parented to init), and for a named lab the
//! processes inside its namespaces (`ip netns pids`).
//!
//! `timeout -s TERM` is how the user sent the signal, and it sends
//! it twice (to wulf, then to its own process group); the two were merged
//! into one delivery on an idle machine and not on a busy one, where the
//! second once ended wulf at once with everything left running. Three
//! tests send the pair 0.1 s apart, so that wulf always gets both.
//!
//! Each test takes `common::serial()`: it builds a lab and runs MPI jobs.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::{self, labs_possible, serial, wulf_bin};

/// How long a command may take to end after the signal: the 5 s,
/// and room for a loaded 2-vCPU machine to schedule the clean-up.
const END_WITHIN: Duration = Duration::from_secs(10);

/// How long a command may take to reach the point the test waits for.
const START_WITHIN: Duration = Duration::from_secs(120);

/// A command under test: its process, its pid, and its output files
/// (shown when a check fails).
struct Run {
    child: Child,
    wulf: i32,
    dir: tempfile::TempDir,
}

impl Run {
    /// Start wulf with `args`, its output in files.
    fn start(args: &[&str]) -> Run {
        let dir = common::tempdir();
        let out = std::fs::File::create(dir.path().join("out")).unwrap();
        let err = std::fs::File::create(dir.path().join("err")).unwrap();
        let child = Command::new(wulf_bin())
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let wulf = child.id() as i32;
        Run { child, wulf, dir }
    }

    /// The temporary lab `--lab` makes (named after wulf's pid).
    fn temp_lab(&self) -> String {
        format!("t{}", self.wulf)
    }

    /// What it printed so far.
    fn said(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
        format!("stdout:\n{}\nstderr:\n{}", read("out"), read("err"))
    }

    /// Poll `f` as [`wait_for`] does, failing at once (with what it
    /// printed) if the command ended first: the point it waits for never
    /// comes.
    fn until<T>(&mut self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let t0 = Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("wulf ended ({status}) before {what}\n{}", self.said());
            }
            assert!(
                t0.elapsed() < START_WITHIN,
                "{what}: not within {START_WITHIN:?}\n{}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Send `signal` to wulf `times` times, 0.1 s apart, then wait (at
    /// most [`END_WITHIN`]) for it to exit: its exit code.
    fn signal_and_wait(&mut self, signal: Signal, times: usize) -> Option<i32> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        for i in 0..times {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
            nix::sys::signal::kill(pid, signal).unwrap();
        }
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            if t0.elapsed() > END_WITHIN {
                let said = self.said();
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("wulf did not end within {END_WITHIN:?} of {signal}\n{said}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // A failed test must not leave its command running.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.wulf), Signal::SIGKILL);
    }
}

/// Poll `f` every 50 ms until it gives a value, at most `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every live process: pid, command line (words joined by spaces),
/// environment (NUL-separated), from /proc.
fn processes() -> Vec<(i32, String, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            if common::gone(pid) {
                return None;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
            let words = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            Some((pid, words, String::from_utf8_lossy(&environ).into_owned()))
        })
        .collect()
}

/// Live processes of lab `lab` (its name in their environment), with
/// their command lines.
fn in_lab(lab: &str) -> Vec<(i32, String)> {
    let marker = format!("{}={lab}", wulf::lab::ENV_LAB);
    processes()
        .into_iter()
        .filter(|(_, _, env)| env.split('\0').any(|v| v == marker))
        .map(|(pid, cmd, _)| (pid, cmd))
        .collect()
}

/// A live process of lab `lab` whose command line contains `word`.
fn lab_process_with(lab: &str, word: &str) -> Option<i32> {
    in_lab(lab)
        .into_iter()
        .find(|(_, cmd)| {
            cmd.split(' ')
                .any(|w| w == word || w.ends_with(&format!("/{word}")))
        })
        .map(|(pid, _)| pid)
}

/// Every descendant of `pid` now (the children of each of its threads:
/// a process spawned from a thread is listed under that thread).
fn descendants(pid: i32) -> Vec<i32> {
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in kids
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if !found.contains(&c) {
                    found.push(c);
                }
            }
        }
    }
    found.remove(0);
    found
}

/// Namespaces whose names start with `prefix`.
fn namespaces(prefix: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Live processes inside namespace `netns`.
fn pids_in(netns: &str) -> Vec<i32> {
    common::lean::pids_in(netns)
        .into_iter()
        .map(|p| p as i32)
        .filter(|&p| !common::gone(p))
        .collect()
}

/// After the command ended: nothing of lab `lab` runs, none of `before`
/// (its descendants just before the signal) is left, no region of theirs
/// or of a dead process is in /dev/shm, and (`temporary`) none of the
/// lab's namespaces is left. Waits up to 3 s more for the kernel to reap.
fn assert_nothing_left(run: &Run, lab: &str, before: &[i32], temporary: bool) {
    let t0 = Instant::now();
    loop {
        let lab_procs = in_lab(lab);
        let left: Vec<i32> = before
            .iter()
            .copied()
            .filter(|&p| !common::gone(p))
            .collect();
        let ns = if temporary {
            namespaces(&format!("wlab-{lab}-"))
        } else {
            Vec::new()
        };
        let mut all = before.to_vec();
        all.push(run.wulf);
        let regions: Vec<_> = common::regions()
            .into_iter()
            .filter(|(p, _)| all.contains(p) || !common::alive(*p))
            .collect();
        if lab_procs.is_empty() && left.is_empty() && ns.is_empty() && regions.is_empty() {
            return;
        }
        if t0.elapsed() > Duration::from_secs(3) {
            let left_cmds: Vec<(i32, String)> = processes()
                .into_iter()
                .filter(|(p, _, _)| left.contains(p))
                .map(|(p, c, _)| (p, c))
                .collect();
            panic!(
                "left behind: lab processes {lab_procs:?}, descendants {left_cmds:?}, \
                 namespaces {ns:?}, regions {regions:?}\n{}",
                run.said()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Send `signal` `times` times; wulf exits 130 and leaves nothing of lab
/// `lab` (see [`assert_nothing_left`]).
fn end_and_check(run: &mut Run, (signal, times): (Signal, usize), lab: &str, temporary: bool) {
    let before = descendants(run.wulf);
    let code = run.signal_and_wait(signal, times);
    assert_eq!(code, Some(130), "{}", run.said());
    assert_nothing_left(run, lab, &before, temporary);
}

/// SIGTERM as `timeout -s TERM` sends it (to wulf, then to its process
/// group, so wulf gets it twice at once), here 0.1 s apart: the two are
/// never merged into one delivery, as they often are on an idle machine.
const AS_TIMEOUT_DOES: (Signal, usize) = (Signal::SIGTERM, 2);

/// `wulf sweep tcp --lab fe`, signalled twice as `timeout` does once its
/// relay in node1 and its server in node2 run and it is measuring: it
/// saves what it measured, marked incomplete, exits 130 and leaves nothing.
#[test]
fn a_lab_sweep_signalled_twice_as_by_timeout_saves_and_leaves_nothing() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let json_dir = common::tempdir();
    let json = json_dir.path().join("r.json");
    let mut run = Run::start(&[
        "sweep",
        "tcp",
        "--lab",
        "fe",
        "--sizes",
        "1,64Ki,1Mi,4Mi",
        "--budget",
        "120s",
        "--json",
        json.to_str().unwrap(),
    ]);
    let lab = run.temp_lab();
    let _guard = common::LabGuard(lab.clone());
    run.until("the server in node2", || lab_process_with(&lab, "serve"));
    let sweep = run.until("the sweep in node1", || lab_process_with(&lab, "--peer"));
    // Half a second of the sweep's CPU: it is measuring its first point
    // (a sweep cut in a point keeps the points before it; with none
    // measured it still saves its result, marked incomplete).
    common::wait_for_cpu_ticks(sweep as u32, 50, START_WITHIN);
    end_and_check(&mut run, AS_TIMEOUT_DOES, &lab, true);
    let v = common::json(&json);
    assert_eq!(v["complete"], false, "{}", run.said());
}

/// A signal while the lab is being built (its first namespace exists):
/// nothing of the half-built lab is left.
#[test]
fn a_signal_during_the_lab_build_leaves_no_namespace() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let mut run = Run::start(&["sweep", "tcp", "--lab", "ge", "--sizes", "1", "--quiet"]);
    let lab = run.temp_lab();
    let _guard = common::LabGuard(lab.clone());
    run.until("the lab's first namespace", || {
        (!namespaces(&format!("wlab-{lab}-")).is_empty()).then_some(())
    });
    end_and_check(&mut run, (Signal::SIGTERM, 1), &lab, true);
}

/// `wulf hpl --lab ge --np 2`, signalled twice as by `timeout` (the
/// issue's user) once both hpcc ranks run: the in-lab wulf, mpirun,
/// orted and the ranks end, and the lab is removed.
#[test]
fn a_lab_hpl_signalled_with_its_ranks_running_leaves_nothing() {
    let _serial = serial();
    if !labs_possible() || !common::have("openmpi") || !common::have_hpcc() {
        return;
    }
    // N = 4000: some minutes of HPL here, so the ranks are still running
    // when the signal comes.
    let mut run = Run::start(&[
        "hpl", "--lab", "ge", "--np", "2", "--n", "4000", "--nb", "100",
    ]);
    let lab = run.temp_lab();
    let _guard = common::LabGuard(lab.clone());
    run.until("two hpcc ranks", || {
        let ranks = in_lab(&lab)
            .into_iter()
            .filter(|(_, cmd)| cmd.split(' ').next().is_some_and(|w| w.ends_with("hpcc")))
            .count();
        (ranks >= 2).then_some(())
    });
    end_and_check(&mut run, AS_TIMEOUT_DOES, &lab, true);
}

/// `wulf npb ep --launch lab:NAME` (a lab made with `wulf lab up`, which
/// stays), SIGTERM twice as by `timeout` once its ranks run in both
/// nodes: no process of the command is left in the lab, which is still
/// there.
#[test]
fn a_named_lab_npb_run_signalled_leaves_no_process_in_the_lab() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let lab = format!("sg{}", std::process::id() % 100_000);
    let _guard = common::lab_up(&lab, 2);
    let launch = format!("lab:{lab}");
    let mut run = Run::start(&[
        "npb", "ep", "--class", "C", "--launch", &launch, "--np", "2", "--via", "tcp",
    ]);
    run.until("a rank in each node", || {
        let nodes: Vec<Vec<i32>> = ["node1", "node2"]
            .iter()
            .map(|n| pids_in(&format!("wlab-{lab}-{n}")))
            .collect();
        let ranks = in_lab(&lab)
            .into_iter()
            .filter(|(_, cmd)| cmd.contains("npb-rank"))
            .map(|(p, _)| p)
            .collect::<Vec<_>>();
        nodes
            .iter()
            .all(|pids| pids.iter().any(|p| ranks.contains(p)))
            .then_some(())
    });
    end_and_check(&mut run, AS_TIMEOUT_DOES, &lab, false);
    for n in ["node1", "node2"] {
        let ns = format!("wlab-{lab}-{n}");
        assert_eq!(pids_in(&ns), Vec::<i32>::new(), "left in {ns}");
    }
    assert_eq!(
        namespaces(&format!("wlab-{lab}-")).len(),
        3,
        "the lab stays"
    );
}

/// `wulf matrix --lab ge --nodes 3`, SIGHUP (a closed terminal) once its
/// agents run: the agents, the relay and the lab are gone.
#[test]
fn a_lab_matrix_hung_up_leaves_nothing() {
    let _serial = serial();
    if !labs_possible() {
        return;
    }
    let json_dir = common::tempdir();
    let json = json_dir.path().join("m.json");
    let mut run = Run::start(&[
        "matrix",
        "--lab",
        "ge",
        "--nodes",
        "3",
        "--budget",
        "120s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    let lab = run.temp_lab();
    let _guard = common::LabGuard(lab.clone());
    run.until("three agents", || {
        let agents = in_lab(&lab)
            .into_iter()
            .filter(|(_, cmd)| cmd.split(' ').any(|w| w == "agent"))
            .count();
        (agents >= 3).then_some(())
    });
    end_and_check(&mut run, (Signal::SIGHUP, 1), &lab, true);
}

/// The descendants helper finds a grandchild (a check of the check).
#[test]
fn descendants_are_found_through_two_generations() {
    let mut child = Command::new("sh")
        .args(["-c", "sleep 30 & wait"])
        .spawn()
        .unwrap();
    let me = child.id() as i32;
    let found = wait_for("the grandchild", Duration::from_secs(10), || {
        let d = descendants(me);
        (!d.is_empty()).then_some(d)
    });
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(found[0]), Signal::SIGKILL);
    let _ = child.wait();
}
