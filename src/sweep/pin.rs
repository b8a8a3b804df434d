//! Pinning the measuring thread for the length of one sweep.

use crate::sys::pin_current_thread;

/// Pins the calling thread for the length of a sweep and gives it back its
/// previous CPU set afterwards, so that the next sweep of `wulf run` sees
/// (and may pin to) every CPU again.
pub(super) struct Pinned {
    previous: Option<nix::sched::CpuSet>,
    /// The CPU pinned to, if pinning was asked for and worked.
    pub cpu: Option<usize>,
}

impl Pinned {
    /// Pin to `cpu`, if given.
    pub fn new(cpu: Option<usize>) -> Pinned {
        let me = nix::unistd::Pid::from_raw(0);
        let previous = nix::sched::sched_getaffinity(me).ok();
        Pinned {
            previous,
            cpu: cpu.filter(|&c| pin_current_thread(c).is_ok()),
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let (Some(set), Some(_)) = (&self.previous, self.cpu) {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), set);
        }
    }
}
