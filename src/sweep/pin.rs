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

impl Pinned {
    /// The CPU set the thread had before it was pinned, if known.
    pub fn previous(&self) -> Option<&nix::sched::CpuSet> {
        self.previous.as_ref()
    }

    /// Pin to `cpu` instead for the rest of the sweep; None: back to the
    /// previous CPU set (unpinned).
    pub fn repin(&mut self, cpu: Option<usize>) {
        match cpu {
            Some(c) if pin_current_thread(c).is_ok() => self.cpu = Some(c),
            Some(_) => {}
            None => {
                if let (Some(set), Some(_)) = (&self.previous, self.cpu) {
                    let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), set);
                }
                self.cpu = None;
            }
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
