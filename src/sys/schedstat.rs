//! How long the calling thread waited for a CPU while runnable: the run
//! delay, field 2 of /proc/thread-self/schedstat (ns, kept by the
//! scheduler whenever the kernel has `CONFIG_SCHED_INFO`, as Debian's
//! and most distributions' kernels do).
//!
//! The timing loops read it around every block, beside the thread's CPU
//! time, so it must cost what a system call costs: each thread opens its
//! own file once (`/proc/thread-self` names the thread that opens it, so
//! the descriptor stays that thread's) and then reads it with `pread`
//! into a buffer on the stack; nothing allocates. The descriptor is
//! closed when the thread ends.
//!
//! A wake-up from an idle CPU is mostly not in it: a task woken onto an
//! idle CPU is queued there by that CPU once it is awake (the scheduler's
//! wake list), and the run delay counts from the queueing. What it counts
//! is other work ahead of the thread on its CPU: preemption by neighbours.
//!
//! [`HelperCpu`] reads the other field that matters, the time on a CPU
//! (field 1), of a transport's own helper processes (PVM's daemon, which
//! relays every `pvm(daemon)` message): their time on the ends' CPUs is
//! the transport's work, not a neighbour's, so the timing loops credit it
//! against the ends' run delay.

use std::cell::Cell;
use std::os::fd::{AsRawFd, OwnedFd};

/// The calling thread's schedstat file, opened on its first read.
struct SchedFile {
    /// The descriptor; -1 when the file could not be opened (no
    /// `CONFIG_SCHED_INFO`, no /proc), so it is tried once per thread.
    fd: Cell<i32>,
}

impl SchedFile {
    fn open() -> SchedFile {
        // SAFETY: a NUL-terminated path and plain flags; the result is a
        // descriptor or -1.
        let fd = unsafe {
            libc::open(
                c"/proc/thread-self/schedstat".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        SchedFile { fd: Cell::new(fd) }
    }
}

impl Drop for SchedFile {
    fn drop(&mut self) {
        let fd = self.fd.get();
        if fd >= 0 {
            // SAFETY: this thread's own descriptor, closed once.
            unsafe { libc::close(fd) };
        }
    }
}

thread_local! {
    static SCHED_FILE: SchedFile = SchedFile::open();
}

/// The calling thread's total run delay so far, ns: how long it has been
/// runnable but kept off a CPU. None where the kernel does not keep it.
pub fn thread_run_delay_ns() -> Option<u64> {
    SCHED_FILE
        .try_with(|f| {
            let fd = f.fd.get();
            if fd < 0 {
                return None;
            }
            // "on-CPU ns, run delay ns, timeslices\n": three u64s fit.
            let mut buf = [0u8; 96];
            // SAFETY: reads at most buf.len() bytes into our own buffer.
            let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n <= 0 {
                return None;
            }
            run_delay_of(&buf[..n as usize])
        })
        .ok()
        .flatten()
}

/// The run delay, the second field of a schedstat line.
fn run_delay_of(line: &[u8]) -> Option<u64> {
    field_of(line, 1)
}

/// Field `index` (from 0) of a schedstat line: 0 is the time on a CPU,
/// 1 the run delay.
fn field_of(line: &[u8], index: usize) -> Option<u64> {
    let field = line
        .split(|&b| b == b' ' || b == b'\n')
        .filter(|f| !f.is_empty())
        .nth(index)?;
    let mut v: u64 = 0;
    for &b in field {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// The run delay between two readings, ns (None when either is unknown).
pub fn run_delay_since(before: Option<u64>) -> Option<u64> {
    Some(thread_run_delay_ns()?.saturating_sub(before?))
}

/// The time a transport's helper processes (every thread of each) have
/// spent on a CPU: the schedstat files of their threads, opened once
/// (outside every timing loop) and read with `pread` into a buffer on the
/// stack, as the thread's own run delay is, so a block reads it before
/// and after its timed part without allocating. A thread a helper starts
/// after the files were opened is not counted (pvmd has one).
#[derive(Debug, Default)]
pub struct HelperCpu {
    files: Vec<OwnedFd>,
}

impl HelperCpu {
    /// The threads of `pids` as they are now (/proc/PID/task/*); a
    /// process that is gone or unreadable is left out.
    pub fn open(pids: &[u32]) -> HelperCpu {
        let mut files = Vec::new();
        for pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                if let Ok(f) = std::fs::File::open(task.path().join("schedstat")) {
                    files.push(OwnedFd::from(f));
                }
            }
        }
        HelperCpu { files }
    }

    /// Whether there is any helper thread to read.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The helpers' total time on a CPU so far, ns; None when there are
    /// no helpers or a thread's file could not be read (it ended).
    pub fn on_cpu_ns(&self) -> Option<u64> {
        if self.files.is_empty() {
            return None;
        }
        let mut sum = 0u64;
        for f in &self.files {
            let mut buf = [0u8; 96];
            // SAFETY: reads at most buf.len() bytes into our own buffer
            // from a descriptor this value owns.
            let n = unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n <= 0 {
                return None;
            }
            sum = sum.saturating_add(field_of(&buf[..n as usize], 0)?);
        }
        Some(sum)
    }

    /// The helpers' time on a CPU since `before` (a reading of
    /// [`HelperCpu::on_cpu_ns`]), ns; None when either is unknown.
    pub fn since(&self, before: Option<u64>) -> Option<u64> {
        Some(self.on_cpu_ns()?.saturating_sub(before?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_field_is_the_run_delay() {
        assert_eq!(run_delay_of(b"123 456 7\n"), Some(456));
        assert_eq!(run_delay_of(b"0 0 1"), Some(0));
        assert_eq!(run_delay_of(b"123\n"), None);
        assert_eq!(run_delay_of(b"1 x2 3"), None);
        assert_eq!(run_delay_of(b"1 99999999999999999999999 3"), None);
        assert_eq!(field_of(b"123 456 7\n", 0), Some(123));
    }

    /// A helper that spins for a while is seen on a CPU for about that
    /// long; no helpers read as unknown, not as zero.
    #[test]
    fn a_helpers_time_on_a_cpu_is_read_across_its_threads() {
        assert_eq!(HelperCpu::open(&[]).on_cpu_ns(), None);
        let me = HelperCpu::open(&[std::process::id()]);
        if me.is_empty() || me.on_cpu_ns().is_none() {
            return; // no schedstat here
        }
        let before = me.on_cpu_ns();
        // Spin until this thread has run 5 ms (its own CPU clock), at
        // most 10 s of wall time on a busy machine.
        let cpu0 = crate::sys::thread_cpu_time();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let ran = || {
            let d = crate::sys::thread_cpu_time().since(cpu0);
            d.user + d.system
        };
        while ran() < std::time::Duration::from_millis(5)
            && t.elapsed() < std::time::Duration::from_secs(10)
        {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spun = me.since(before).expect("read again");
        // Every thread of the process counts, this one's 5 ms among them
        // (less a tick's rounding of the CPU clock).
        assert!(spun >= 4_000_000, "{spun} ns on a CPU after spinning 5 ms");
        // A process that does not exist has no threads to read.
        assert!(HelperCpu::open(&[u32::MAX]).is_empty());
    }

    /// Where the kernel keeps it (it does on the development VM and CI),
    /// the delay never goes down and a sleeping thread adds none.
    #[test]
    fn the_delay_is_read_and_never_goes_backwards() {
        let Some(a) = thread_run_delay_ns() else {
            return;
        };
        std::thread::sleep(std::time::Duration::from_millis(1));
        let b = thread_run_delay_ns().expect("read once, read again");
        assert!(b >= a);
        assert!(run_delay_since(Some(a)).is_some());
        assert_eq!(run_delay_since(None), None);
    }
}
