//! In-process baselines: measurements of what the machine itself can do,
//! with no peer and no data channel, run by the same sweep engine and
//! repetition policy as the transports and stored as ordinary results.
//!
//! A [`Transport`](super::Transport) that is a baseline returns a
//! [`Baseline`] from `Transport::baseline`; the engine then times blocks of
//! it in this process instead of starting a peer. The baselines are the
//! limits the intra-node transports are measured against:
//!
//! * `memcpy` ([`super::memcpy`]): copy bandwidth against size, the limit of
//!   any transport that copies;
//! * `cacheline` ([`super::cacheline`]): a cache line passed back and forth
//!   between the two pinned CPUs, the latency floor of any message between
//!   two processes;
//! * `c2c` and `c2c-2copy` ([`super::c2c`]): messages copied from one core
//!   to the other, the floors under single-copy and copy-in/copy-out
//!   transfers of each size.
//!
//! A baseline says which limit its points are ([`LimitKind`]), so that a
//! run that measured it does not measure the same limit again.

use std::io;
use std::time::Duration;

use serde_json::{Map, Value};

use super::WaitMode;
use crate::result::{Mode, Plateau, Point};
use crate::sys::CpuTime;

/// What a baseline needs to know to prepare.
#[derive(Debug, Clone)]
pub struct BaselineSetup {
    /// Pattern asked for (a baseline refuses patterns it cannot measure).
    pub mode: Mode,
    /// Largest message size of the sweep in bytes.
    pub max_bytes: u64,
    /// Rotate buffers through a pool larger than the last-level cache.
    pub nocache: bool,
    /// Buffer misalignment in bytes.
    pub offset_bytes: u64,
    /// Last-level cache size, if known.
    pub llc_bytes: Option<u64>,
    /// The caches of the machine (empty when unknown).
    pub caches: Vec<crate::sys::Cache>,
    /// CPU for a second thread, if the baseline has one.
    pub helper_cpu: Option<usize>,
    /// How a second thread and the measuring thread wait for each other.
    pub wait: WaitMode,
    /// Bound of every wait.
    pub timeout: Duration,
}

/// One block as a baseline measured it.
#[derive(Debug, Clone, Copy, Default)]
pub struct BaselineBlock {
    /// Wall time of the timed part in ns (clock read cost not subtracted).
    pub elapsed_ns: u64,
    /// CPU time of the measuring thread during the timed part.
    pub main_cpu: CpuTime,
    /// CPU time of the second thread, if any, during its timed part.
    pub helper_cpu: CpuTime,
}

/// Which physical limit a baseline's points are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// Copy bandwidth in one process at each size (`bits_per_s`).
    MemcpyBandwidth,
    /// One-way time of a cache-line hand-off between two CPUs (`median_ns`).
    CachelineFloor,
    /// One core copying out what the other just wrote, per size
    /// (`bits_per_s`): the floor under single-copy transfers.
    C2cSingleCopy,
    /// Copy-in, hand-off and copy-out between the two cores, per size
    /// (`bits_per_s`): the floor under copy-in/copy-out transfers.
    C2cTwoCopy,
}

/// A measurement run in this process, in blocks timed as one.
pub trait Baseline: Send {
    /// Run one untimed primer operation, then time `repeats` operations on
    /// `bytes`-byte messages.
    fn block(&mut self, bytes: u64, repeats: u64) -> io::Result<BaselineBlock>;
    /// Check that `bytes`-byte messages arrive intact (untimed).
    fn integrity(&mut self, bytes: u64) -> io::Result<()>;
    /// Settings for the result file.
    fn settings(&self) -> Map<String, Value>;
    /// CPU the second thread runs on, if there is one and it is pinned.
    fn helper_cpu(&self) -> Option<usize>;
    /// What one operation's time is, for the result's definitions.
    fn time_definition(&self) -> &'static str;
    /// The limit this baseline's points are.
    fn limit_kind(&self) -> LimitKind;
    /// Named plateaus of the curve, if the baseline has any.
    fn plateaus(&self, _points: &[Point]) -> Vec<Plateau> {
        Vec::new()
    }
}

/// The error for `listen` / `connect` on a baseline.
pub fn no_channel(name: &str) -> anyhow::Error {
    anyhow::anyhow!("{name} is an in-process baseline: it has no data channel and needs no peer")
}

/// A baseline's second thread, pinned to the other CPU of the sweep: it
/// gets one command per block over a channel (outside any timed part) and
/// answers each with its CPU time during the block, or the error that
/// ended it. Dropping the helper closes the channel and joins the thread.
pub struct Helper<C: Send + 'static> {
    to: Option<std::sync::mpsc::Sender<C>>,
    from: std::sync::mpsc::Receiver<io::Result<CpuTime>>,
    thread: Option<std::thread::JoinHandle<()>>,
    cpu: Option<usize>,
    timeout: Duration,
}

impl<C: Send + 'static> Helper<C> {
    /// Start thread `name`, pinned to `cpu` when given, serving each
    /// command with `serve`; `timeout` bounds the wait for it to start and
    /// for each answer beyond the block itself.
    pub fn start<F>(
        name: &str,
        cpu: Option<usize>,
        timeout: Duration,
        mut serve: F,
    ) -> io::Result<Self>
    where
        F: FnMut(C) -> io::Result<CpuTime> + Send + 'static,
    {
        let (to, commands) = std::sync::mpsc::channel::<C>();
        let (reports, from) = std::sync::mpsc::channel();
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let pinned = cpu.filter(|&c| crate::sys::pin_current_thread(c).is_ok());
                let _ = pinned_tx.send(pinned);
                // Blocking on the channel between blocks is outside any
                // timed part.
                while let Ok(cmd) = commands.recv() {
                    if reports.send(serve(cmd)).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Helper {
            to: Some(to),
            from,
            thread: Some(thread),
            cpu: pinned_rx.recv_timeout(timeout).unwrap_or(None),
            timeout,
        })
    }

    /// The CPU the thread is pinned to (None: unpinned).
    pub fn cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// Hand the thread its next block.
    pub fn command(&self, cmd: C) -> io::Result<()> {
        self.to
            .as_ref()
            .and_then(|t| t.send(cmd).ok())
            .ok_or_else(|| io::Error::other("the baseline's helper thread is gone"))
    }

    /// The thread's answer to the last command, waited for at most the
    /// timeout after the caller's own part of the block.
    pub fn report(&self) -> io::Result<CpuTime> {
        self.from.recv_timeout(self.timeout).map_err(|_| {
            io::Error::other("the baseline's helper thread stopped or did not answer")
        })?
    }
}

impl<C: Send + 'static> Drop for Helper<C> {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The methods of [`Transport`](super::Transport) that every in-process
/// baseline answers alike: always available, on this host only, no data
/// channel (`listen` and `connect` are errors), no processes to link.
/// Expanded inside each baseline's `impl Transport`.
macro_rules! channel_less {
    () => {
        fn availability(&self) -> Result<(), String> {
            Ok(())
        }

        fn local_only(&self) -> bool {
            true
        }

        fn claims_nic(&self) -> bool {
            false
        }

        fn listen(
            &self,
            _: &$crate::transport::ChannelOptions,
            _: std::net::IpAddr,
        ) -> anyhow::Result<Box<dyn $crate::transport::Listener>> {
            Err($crate::transport::baseline::no_channel(self.name()))
        }

        fn connect(
            &self,
            _: &serde_json::Value,
            _: &$crate::transport::ChannelOptions,
            _: std::net::IpAddr,
        ) -> anyhow::Result<$crate::transport::Connected> {
            Err($crate::transport::baseline::no_channel(self.name()))
        }

        fn links_processes(&self) -> bool {
            false
        }
    };
}
pub(crate) use channel_less;
