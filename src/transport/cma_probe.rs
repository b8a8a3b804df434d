//! Whether this process may use process_vm_readv at all: on itself (a
//! seccomp filter or the kernel may forbid it) and on a forked child (a
//! ptrace policy may), checked before any transport is offered.

use std::sync::atomic::{AtomicU64, Ordering};

use nix::unistd::Pid;

use super::{probe_value, read_remote};

/// Can this process use process_vm_readv, on itself and on another process?
pub(super) fn probe() -> Result<(), String> {
    let value: u64 = probe_value(0);
    let mut got = [0u8; 8];
    let me = Pid::this();
    read_remote(me, &value as *const u64 as usize, &mut got).map_err(|e| {
        format!("{e} (on this process itself: a seccomp filter or the kernel forbids it)")
    })?;
    probe_child()
}

/// Read the memory of a forked child, which only waits on a pipe.
fn probe_child() -> Result<(), String> {
    let (r, w) = nix::unistd::pipe().map_err(|e| format!("pipe: {e}"))?;
    static WORD: AtomicU64 = AtomicU64::new(0);
    WORD.store(probe_value(1), Ordering::Relaxed);
    // SAFETY: the child only calls async-signal-safe functions (read,
    // _exit) before it exits, as required after fork in a process that may
    // have other threads.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Err(format!("fork: {e}")),
        Ok(nix::unistd::ForkResult::Child) => {
            use std::os::fd::AsRawFd;
            let mut b = 0u8;
            // SAFETY: async-signal-safe calls on valid fds and a buffer.
            // Closing our copy of the write end first means the read ends
            // when the parent closes its copy, or dies.
            unsafe {
                libc::close(w.as_raw_fd());
                libc::read(r.as_raw_fd(), &mut b as *mut u8 as _, 1);
                libc::_exit(0);
            }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(r);
            let mut got = [0u8; 8];
            let res = read_remote(child, WORD.as_ptr() as usize, &mut got);
            drop(w); // the child's read returns: it exits
            let _ = nix::sys::wait::waitpid(child, None);
            match res {
                Ok(()) if u64::from_ne_bytes(got) == probe_value(1) => Ok(()),
                Ok(()) => Err("process_vm_readv returned wrong data".into()),
                Err(e) => Err(format!("{e} (on a child process)")),
            }
        }
    }
}
