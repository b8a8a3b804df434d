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

use std::cell::Cell;

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
    let field = line
        .split(|&b| b == b' ' || b == b'\n')
        .filter(|f| !f.is_empty())
        .nth(1)?;
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
