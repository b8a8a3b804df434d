//! The processes of this machine as `/proc` shows them: each one's parent,
//! start, CPU time (ticks, and its threads' exact run time from their
//! `schedstat`), and whether it descends from a given process. Read by the
//! NAS runs' foreign-work accounting (`plan::npb_foreign`) and by a sweep
//! that moves its local peer's pinned threads (`sweep::placement`).

use std::collections::HashMap;

/// A process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proc {
    /// Its parent.
    pub ppid: i32,
    /// When it started (clock ticks since boot): a pid reused by another
    /// process is another process.
    pub start: u64,
    /// Its CPU time and its reaped children's (user and system), ticks.
    pub ticks: u64,
    /// Of those, its reaped children's alone (cutime and cstime), ticks.
    pub child_ticks: u64,
    /// A kernel thread (PF_KTHREAD).
    pub kernel: bool,
    /// Its live threads' own run time, ns, from their `schedstat` (None
    /// where one could not be read).
    pub run_ns: Option<u64>,
}

/// Every process of the machine, by pid.
pub type Procs = HashMap<i32, Proc>;

/// The kernel's flag of a kernel thread in `/proc/PID/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A `/proc/PID/stat` line's process, None where it does not parse.
pub fn parse_stat(text: &str) -> Option<Proc> {
    // The command name may hold spaces and parentheses: fields follow the
    // last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<i64>().ok());
    let ticks: i64 = [11, 12, 13, 14]
        .iter()
        .map(|&i| num(i).unwrap_or(0).max(0))
        .sum();
    Some(Proc {
        ppid: num(1)? as i32,
        start: num(19)?.max(0) as u64,
        ticks: ticks as u64,
        child_ticks: [13, 14]
            .iter()
            .map(|&i| num(i).unwrap_or(0).max(0))
            .sum::<i64>() as u64,
        kernel: (num(6)? as u64 & PF_KTHREAD) != 0,
        run_ns: None,
    })
}

/// The run time, ns, of every live thread of `pid` together: the first
/// field of each `/proc/PID/task/TID/schedstat`, exact where the ticks of
/// `/proc/PID/stat` come in 10 ms steps. None where a thread's cannot be
/// read (no schedstat in this kernel).
fn run_ns_of(pid: i32) -> Option<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let path = e.ok()?.path().join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        total += text.split_ascii_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// Every process in `/proc` now (those that vanish while it reads are
/// left out).
pub fn scan() -> Procs {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Procs::new();
    };
    dir.filter_map(|e| {
        let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut p = parse_stat(&text)?;
        if !p.kernel {
            p.run_ns = run_ns_of(pid);
        }
        Some((pid, p))
    })
    .collect()
}

/// Whether `pid` is `me` or a descendant of it in `procs`.
pub fn ours(procs: &Procs, me: i32, mut pid: i32) -> bool {
    // Bounded: a parent chain is short, and a pid reused mid-read must
    // not loop.
    for _ in 0..256 {
        if pid == me {
            return true;
        }
        match procs.get(&pid) {
            Some(p) if p.ppid > 0 && p.ppid != pid => pid = p.ppid,
            _ => return false,
        }
    }
    false
}
