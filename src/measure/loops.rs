//! The timing loops of both ends: the hot path.
//!
//! Rules: nothing here allocates, prints, logs or locks. Each block starts
//! with one untimed "primer" operation, so the measuring side's clock starts
//! only once the peer is known to be in its loop (the control message that
//! announced the block is not inside the timed interval). CPU time is read
//! with getrusage(RUSAGE_THREAD) just outside the timed interval, and so is
//! the thread's run delay (`sys::thread_run_delay_ns`: one pread of a file
//! the thread opened once), which tells a block its end was preempted,
//! and the time the transport's own helper processes ran
//! (`sys::HelperCpu`: their threads' schedstat files, opened with the
//! pools), credited against it.
//!
//! In stream mode each call hands the endpoint up to its
//! `stream_window()` messages from one buffer (MPI keeps that many
//! non-blocking sends in flight, as osu_bw does); sockets take one at a
//! time, so for them this is the plain loop of sends.
//!
//! Integrity blocks fill each message with a pattern that depends on the
//! byte's position, the operation and the direction, and check every byte
//! received; they run the whole block even after a mismatch (so the other
//! end is not left waiting) and report the first one.

use std::io;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::message::buffers::BufferPool;
use crate::message::pattern::{check, fill};
use crate::result::Mode;
use crate::sys::{run_delay_since, thread_cpu_time, thread_run_delay_ns, CpuTime, HelperCpu};
use crate::transport::Endpoint;

/// What a block does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    /// A timed block in the sweep's mode.
    Timed,
    /// Individually timed round trips for tail latency (ping-pong).
    Tails,
    /// Pattern-checked transfers in the sweep's mode, untimed.
    Integrity,
    /// A timed block whose every message is stamped and checked
    /// (`--integrity all`, [`super::checked`]).
    Checked,
}

/// The two buffer pools of one end, and what else its blocks read
/// without allocating.
pub struct Pools {
    /// Messages are sent from here.
    pub tx: BufferPool,
    /// Messages are received into here.
    pub rx: BufferPool,
    /// The patterns of checked blocks (empty until one runs).
    pub checked: super::checked::Patterns,
    /// The transport's helper processes on this end
    /// ([`Endpoint::helper_processes`]), read around every block.
    pub helpers: HelperCpu,
}

impl Pools {
    /// Pools for messages up to `max_bytes` over `ep`, which may lend the
    /// memory to send from.
    pub fn new(
        ep: &mut dyn Endpoint,
        max_bytes: u64,
        offset: u64,
        nocache: bool,
        llc: Option<u64>,
    ) -> std::io::Result<Pools> {
        let helpers = HelperCpu::open(&ep.helper_processes());
        Ok(Pools {
            tx: BufferPool::for_sending(
                |bytes| ep.send_memory(bytes),
                max_bytes,
                offset,
                nocache,
                llc,
            )?,
            rx: BufferPool::new(max_bytes, offset, nocache, llc)?,
            checked: Default::default(),
            helpers,
        })
    }

    fn prepare(&mut self, bytes: u64, kind: BlockKind) {
        self.tx.prepare(bytes);
        self.rx.prepare(bytes);
        if kind == BlockKind::Checked {
            self.checked.prepare(bytes as usize);
        }
    }
}

/// What one end measured in a block.
#[derive(Debug, Clone, Copy, Default)]
pub struct BlockMeasure {
    /// Wall time of the timed part, ns (clock read cost not yet subtracted).
    pub elapsed_ns: u64,
    /// CPU time of this thread during the timed part.
    pub cpu: CpuTime,
    /// How long this thread waited for a CPU during the timed part, ns
    /// (schedstat's run delay; None where the kernel does not keep it).
    pub run_delay_ns: Option<u64>,
    /// How long this end's helper processes ([`Pools::helpers`]) were on
    /// a CPU during the timed part, ns (None: it has none).
    pub helper_cpu_ns: Option<u64>,
}

/// What an end reads just before a block's timed part, to read again
/// just after it ([`Readings::finish`]): outside the timed interval, and
/// nothing allocated.
pub(super) struct Readings {
    delay: Option<u64>,
    helpers: Option<u64>,
    cpu: CpuTime,
    t0: Instant,
}

impl Readings {
    /// Read now; the clock last, so the readings are outside it.
    pub(super) fn start(helpers: &HelperCpu) -> Readings {
        let delay = thread_run_delay_ns();
        let helper_cpu = helpers.on_cpu_ns();
        let cpu = thread_cpu_time();
        Readings {
            delay,
            helpers: helper_cpu,
            cpu,
            t0: Instant::now(),
        }
    }

    /// The block's measure: the clock first, then the rest.
    pub(super) fn finish(self, helpers: &HelperCpu) -> BlockMeasure {
        let elapsed_ns = self.t0.elapsed().as_nanos() as u64;
        let cpu = thread_cpu_time().since(self.cpu);
        let run_delay_ns = run_delay_since(self.delay);
        BlockMeasure {
            elapsed_ns,
            cpu,
            run_delay_ns,
            helper_cpu_ns: helpers.since(self.helpers),
        }
    }
}

/// Direction tags for the integrity pattern.
pub(super) const CLIENT_TO_SERVER: u64 = 0;
pub(super) const SERVER_TO_CLIENT: u64 = 1;

/// Measuring side of one block. For `BlockKind::Tails`, `samples_ns` gets
/// one round-trip time per operation (its capacity must be >= `repeats`,
/// so no allocation happens while timing).
pub fn client_block(
    ep: &mut dyn Endpoint,
    pools: &mut Pools,
    mode: Mode,
    kind: BlockKind,
    bytes: u64,
    repeats: u64,
    samples_ns: &mut Vec<u64>,
) -> io::Result<BlockMeasure> {
    pools.prepare(bytes, kind);
    // Tail samples are ping-pong round trips whatever the sweep's mode.
    let mode = if kind == BlockKind::Tails {
        Mode::Pingpong
    } else {
        mode
    };
    primer(ep, pools, mode)?;
    if kind == BlockKind::Checked {
        let (m, mismatch) = super::checked::client_timed(ep, pools, mode, repeats)?;
        stream_end(ep, pools, mode, Side::Sender)?;
        ep.flush()?;
        return mismatch.map_or(Ok(m), Err);
    }
    let Pools {
        tx, rx, helpers, ..
    } = pools;
    let mut mismatch: Option<io::Error> = None;
    let readings = Readings::start(helpers);
    match (kind, mode) {
        (BlockKind::Timed, Mode::Pingpong) => {
            for _ in 0..repeats {
                ep.send(tx.next_buf())?;
                ep.recv(rx.next_buf())?;
            }
        }
        (BlockKind::Timed, Mode::Stream) => {
            // `window` messages per call (1 for sockets: one per buffer).
            let window = ep.stream_window().max(1);
            let mut left = repeats;
            while left > 0 {
                let n = left.min(window);
                ep.send_stream(tx.next_buf(), n)?;
                left -= n;
            }
        }
        (BlockKind::Timed, Mode::Bidir) => {
            for _ in 0..repeats {
                ep.exchange(tx.next_buf(), rx.next_buf())?;
            }
        }
        (BlockKind::Tails, _) => {
            samples_ns.clear();
            for _ in 0..repeats.min(samples_ns.capacity() as u64) {
                let t = Instant::now();
                ep.send(tx.next_buf())?;
                ep.recv(rx.next_buf())?;
                samples_ns.push(t.elapsed().as_nanos() as u64);
            }
        }
        (BlockKind::Checked, _) => unreachable!("checked blocks return above"),
        (BlockKind::Integrity, _) => {
            for op in 0..repeats {
                let out = tx.next_buf();
                fill(out, op, CLIENT_TO_SERVER);
                match mode {
                    Mode::Pingpong => {
                        ep.send(out)?;
                        let inp = rx.next_buf();
                        ep.recv(inp)?;
                        note(&mut mismatch, check(inp, op, SERVER_TO_CLIENT, "client"));
                    }
                    Mode::Stream => ep.send(out)?,
                    Mode::Bidir => {
                        let inp = rx.next_buf();
                        ep.exchange(out, inp)?;
                        note(&mut mismatch, check(inp, op, SERVER_TO_CLIENT, "client"));
                    }
                }
            }
        }
    }
    let m = readings.finish(helpers);
    // Untimed: the last sends of a channel that does not wait for its
    // acknowledgements are settled before the ends turn to the control
    // connection (where neither would answer a resend).
    stream_end(ep, pools, mode, Side::Sender)?;
    ep.flush()?;
    mismatch.map_or(Ok(m), Err)
}

/// Peer side of one block: the mirror of [`client_block`].
pub fn server_block(
    ep: &mut dyn Endpoint,
    pools: &mut Pools,
    mode: Mode,
    kind: BlockKind,
    bytes: u64,
    repeats: u64,
) -> io::Result<BlockMeasure> {
    pools.prepare(bytes, kind);
    let Pools {
        tx, rx, helpers, ..
    } = pools;
    // Tail samples are ping-pong round trips whatever the sweep's mode.
    let mode = if kind == BlockKind::Tails {
        Mode::Pingpong
    } else {
        mode
    };
    match mode {
        Mode::Pingpong => {
            ep.recv(rx.next_buf())?;
            ep.send(tx.next_buf())?;
        }
        Mode::Stream => ep.recv(rx.next_buf())?,
        Mode::Bidir => ep.exchange(tx.next_buf(), rx.next_buf())?,
    }
    let mut mismatch: Option<io::Error> = None;
    let readings = Readings::start(helpers);
    if mode == Mode::Stream {
        // Inside the timed interval: the sender starts only on this go, so
        // the interval holds every timed byte's crossing plus one small
        // message's latency (an underestimate of a few microseconds, never
        // an overestimate). Without it, what the sender pushed into socket
        // buffers and queues while the primer was read arrived "for free"
        // and a 1 Gbit/s link showed 1.05 Gbit/s at 1 MiB.
        ep.send(&tx.next_buf()[..1])?;
    }
    if kind == BlockKind::Checked {
        mismatch = super::checked::server_timed(ep, pools, mode, repeats)?;
    } else if kind == BlockKind::Integrity {
        for op in 0..repeats {
            let inp = rx.next_buf();
            let out = tx.next_buf();
            fill(out, op, SERVER_TO_CLIENT);
            match mode {
                Mode::Pingpong => {
                    ep.recv(inp)?;
                    note(&mut mismatch, check(inp, op, CLIENT_TO_SERVER, "server"));
                    ep.send(out)?;
                }
                Mode::Stream => {
                    ep.recv(inp)?;
                    note(&mut mismatch, check(inp, op, CLIENT_TO_SERVER, "server"));
                }
                Mode::Bidir => {
                    ep.exchange(out, inp)?;
                    note(&mut mismatch, check(inp, op, CLIENT_TO_SERVER, "server"));
                }
            }
        }
    } else {
        match mode {
            Mode::Pingpong => {
                for _ in 0..repeats {
                    ep.recv(rx.next_buf())?;
                    ep.send(tx.next_buf())?;
                }
            }
            Mode::Stream => {
                let window = ep.stream_window().max(1);
                let mut left = repeats;
                while left > 0 {
                    let n = left.min(window);
                    ep.recv_stream(rx.next_buf(), n)?;
                    left -= n;
                }
            }
            Mode::Bidir => {
                for _ in 0..repeats {
                    ep.exchange(tx.next_buf(), rx.next_buf())?;
                }
            }
        }
    }
    let m = readings.finish(&pools.helpers);
    // Untimed: the last sends of a channel that does not wait for its
    // acknowledgements are settled before the ends turn to the control
    // connection (where neither would answer a resend).
    stream_end(ep, pools, mode, Side::Receiver)?;
    ep.flush()?;
    mismatch.map_or(Ok(m), Err)
}

/// Which end of a stream a side is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Sender,
    Receiver,
}

/// The untimed last operation of a stream block: the receiver, once it
/// has every message, sends one byte back, and the sender waits for it.
/// A sender's completions can come before its messages have left the
/// library (UCX and libfabric queue what a full socket will not take, and
/// move it only while the sender calls into them): a sender that turned
/// to the control connection then left the rest queued, and the receiver
/// waited out its timeout (`ofi(tcp)` streaming 64 KiB across a `fe` lab
/// link: "fi_trecv (a window): no completion within 10s"; `ucx(shm)`
/// streaming 1 MiB at load 4-7: 3 of 10 runs). Waiting for the byte keeps
/// the sender in the library until the receiver has it all.
fn stream_end(ep: &mut dyn Endpoint, pools: &mut Pools, mode: Mode, side: Side) -> io::Result<()> {
    if mode != Mode::Stream {
        return Ok(());
    }
    let Pools { tx, rx, .. } = pools;
    match side {
        Side::Receiver => ep.send(&tx.next_buf()[..1]),
        Side::Sender => ep.recv(&mut rx.next_buf()[..1]),
    }
}

/// The untimed first operation of a block: brings the peer into its loop
/// before the clock starts.
fn primer(ep: &mut dyn Endpoint, pools: &mut Pools, mode: Mode) -> io::Result<()> {
    let Pools { tx, rx, .. } = pools;
    match mode {
        Mode::Pingpong => {
            ep.send(tx.next_buf())?;
            ep.recv(rx.next_buf())?;
        }
        Mode::Stream => {
            // The peer's one-byte go says it has the primer and its clock
            // is about to start: nothing of the timed messages is in flight
            // or buffered yet, so buffering cannot make the stream look
            // faster than the path (see `server_block`).
            ep.send(tx.next_buf())?;
            ep.recv(&mut rx.next_buf()[..1])?;
        }
        Mode::Bidir => ep.exchange(tx.next_buf(), rx.next_buf())?,
    }
    Ok(())
}

fn note(first: &mut Option<io::Error>, e: Option<io::Error>) {
    if first.is_none() {
        *first = e;
    }
}
