//! `wulf tune tcp --wake-up`: the hands on the machine's settings for the
//! wake-up remedies (`tune::wake`). A [`WakeGuard`] makes one remedy's
//! setting for one configuration's sweep and undoes it after, on drop
//! too (an error or Ctrl-C: the sweep stops between trials and the
//! command unwinds), and through `exec::owned`'s clean-ups when a second
//! signal or the watchdog ends the command at once.
//!
//! * busy polling: net.core.busy_read and busy_poll written through
//!   /proc/sys and the values read before put back. They are the host's
//!   (the kernel keeps them for the first network namespace only: in a lab
//!   node the files are absent and the remedy is skipped with that reason);
//!   writing needs root.
//! * cpuidle: /dev/cpu_dma_latency held open with 0 written. The kernel
//!   keeps the request while the file is open and drops it when it is
//!   closed, by the guard or by the end of the process, whatever ends it
//!   (SIGKILL included): nothing to put back.
//!
//! A SIGKILL between setting busy_read and putting it back leaves it set:
//! the advice's own command line shows what it was set to, and the
//! session's `applied` record what it was (issue 44 leaves a saved-state
//! file, as `--offloads` has, for later).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use crate::exec::owned::{cleanup, Owned};
use crate::tune::wake::{WakeRemedy, BUSY_POLL_SYSCTLS, BUSY_POLL_USEC, CPU_DMA_LATENCY};

/// One remedy's setting, held for a configuration's sweep.
pub struct WakeGuard {
    /// The sysctls changed and the values to put back.
    saved: Vec<(PathBuf, String)>,
    /// The open PM QoS request, dropped with the guard.
    _latency: Option<File>,
    /// The clean-up registered for an abrupt end (unregistered on drop).
    _registered: Option<Owned>,
    /// Whether the sysctls are back already.
    restored: bool,
}

impl WakeGuard {
    /// Make `remedy`'s setting; None for the spinning one (a channel
    /// option, nothing on the machine); an error, in the kernel's or the
    /// file system's words, when it cannot be made here.
    pub fn apply(remedy: WakeRemedy) -> Result<Option<WakeGuard>, String> {
        match remedy {
            WakeRemedy::Spin => Ok(None),
            WakeRemedy::BusyPoll => busy_poll().map(Some),
            WakeRemedy::CpuidleOff => cpu_latency_zero().map(Some),
        }
    }

    /// Put the settings back; what could not be, in words.
    pub fn restore(&mut self) -> Vec<String> {
        if self.restored {
            return Vec::new();
        }
        self.restored = true;
        put_back(&self.saved)
    }
}

impl Drop for WakeGuard {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// The busy-polling sysctls at [`BUSY_POLL_USEC`], their values saved.
fn busy_poll() -> Result<WakeGuard, String> {
    let mut saved = Vec::new();
    for s in BUSY_POLL_SYSCTLS {
        let path = PathBuf::from("/proc/sys").join(s);
        let old = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        saved.push((path, old.trim().to_string()));
    }
    let again = saved.clone();
    let registered = cleanup(move || {
        let _ = put_back(&again);
    });
    // Made before the first write: a refused second write puts the first back.
    let guard = WakeGuard {
        saved,
        _latency: None,
        _registered: Some(registered),
        restored: false,
    };
    for (path, _) in &guard.saved {
        std::fs::write(path, BUSY_POLL_USEC.to_string())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(guard)
}

/// A PM QoS request of 0 us held on /dev/cpu_dma_latency.
fn cpu_latency_zero() -> Result<WakeGuard, String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(CPU_DMA_LATENCY)
        .map_err(|e| format!("cannot open {CPU_DMA_LATENCY}: {e}"))?;
    // The kernel reads a binary 32-bit value (or a hex string).
    f.write_all(&0i32.to_ne_bytes())
        .map_err(|e| format!("cannot write {CPU_DMA_LATENCY}: {e}"))?;
    Ok(WakeGuard {
        saved: Vec::new(),
        _latency: Some(f),
        _registered: None,
        restored: false,
    })
}

/// Write each saved value back; the failures, in words.
fn put_back(saved: &[(PathBuf, String)]) -> Vec<String> {
    saved
        .iter()
        .filter_map(|(path, old)| {
            std::fs::write(path, old)
                .err()
                .map(|e| format!("cannot put {} back to {old}: {e}", path.display()))
        })
        .collect()
}
