//! Baselines `c2c` and `c2c-2copy` (core to core): messages of every size
//! moved between two threads pinned to the two CPUs of the sweep, through
//! plain cache-coherent memory with nothing but copies and one flag per
//! hand-off. They are the floors under the two ways intra-node transports
//! move a message:
//!
//! * `c2c` (single copy): one core copies out the bytes the other core has
//!   just written. The round trip is an echo: the measuring thread raises
//!   its flag, the helper copies the measuring thread's buffer into its own
//!   and raises its flag, the measuring thread copies that back. Each
//!   one-way time is one hand-off plus one copy whose source lines sit
//!   dirty in the other core's cache: what a single-copy transfer (cma,
//!   MPI's CMA/XPMEM/shared-window paths) cannot beat.
//! * `c2c-2copy` (serial two-copy hand-off): the sender copies its private
//!   buffer into a shared one, raises the flag, and the receiver copies the
//!   shared buffer into its private one; the reply goes back the same way.
//!   One-way = copy-in + hand-off + copy-out, whole messages, no pipelining:
//!   what a copy-in/copy-out transport (shm, MPI's eager shared memory)
//!   does at best without overlapping the two copies.
//!
//! Both are ping-pongs timed in blocks like the transports (one-way = half
//! a round trip), at page boundary plus `--offset`. The copies are the C
//! library's memcpy, as in the transports. The measuring thread and the
//! helper wait like `shm` (spin by default, `--wait`), with the same
//! deadline checks.
//!
//! By default the buffers are cache-hot (warm): the limit of a transfer
//! between the two cores' caches, what a benchmark that resends one buffer
//! sees. With `--nocache` (cold) the buffers a message is copied out of and
//! into rotate past the last-level cache exactly as a `--nocache` sweep's
//! message pools do ([`crate::message::buffers::Rotation`]): single copy,
//! the receiver copies a message whose lines are in neither core's cache
//! into a buffer that is not cached either; two-copy, the sender copies a
//! cold private buffer into the (hot) shared one and the receiver copies
//! that into a cold private buffer, as shm moves a `--nocache` message. An
//! application's messages are fresh data: cold is the limit that models it.
//!
//! The echo's destination lines were last read by the other core, so each
//! copy also pays the invalidation of that core's copies: the same cost a
//! receiver pays for a buffer the sender read before (a ping-pong's
//! receive buffer is the next send buffer in MPI benchmarks that echo).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use memmap2::MmapMut;
use serde_json::{json, Map, Value};

use super::baseline::{Baseline, BaselineBlock, BaselineSetup, Helper, LimitKind};
use super::wait::{Doorbell, Waiter};
use super::Transport;
use crate::message::buffers::{pool_bytes, Rotation, FALLBACK_LLC_BYTES};
use crate::message::pattern::{check, fill};
use crate::result::Mode;
use crate::sys::{thread_cpu_time, CpuTime};

/// Largest message either baseline carries (the default schedule's largest).
pub const MAX_BYTES: u64 = crate::message::schedule::DEFAULT_MAX_BYTES + 16;

const PAGE_BYTES: usize = 4096;
/// Bytes of a doorbell or a flag line (two cache lines: adjacent-line
/// prefetching never pairs them with anything else).
const LINE_PAIR_BYTES: usize = 128;

/// How many copies one one-way transfer makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copies {
    /// `c2c`: the receiver copies out what the sender wrote.
    One,
    /// `c2c-2copy`: copy-in, hand-off, copy-out.
    Two,
}

/// A core-to-core copy baseline.
pub struct C2c {
    copies: Copies,
}

impl C2c {
    /// The single-copy baseline `c2c`.
    pub const SINGLE: C2c = C2c {
        copies: Copies::One,
    };
    /// The serial two-copy hand-off `c2c-2copy`.
    pub const TWO_COPY: C2c = C2c {
        copies: Copies::Two,
    };
}

impl Transport for C2c {
    fn name(&self) -> &'static str {
        match self.copies {
            Copies::One => "c2c",
            Copies::Two => "c2c-2copy",
        }
    }

    fn about(&self) -> &'static str {
        match self.copies {
            Copies::One => {
                "baseline: one core copies out what the other just wrote (the single-copy limit)"
            }
            Copies::Two => {
                "baseline: copy-in, flag, copy-out between the two pinned CPUs (the two-copy limit)"
            }
        }
    }

    super::baseline::channel_less!();

    fn baseline(&self, setup: &BaselineSetup) -> Option<anyhow::Result<Box<dyn Baseline>>> {
        Some(C2cBench::new(setup, self.copies).map(|b| Box::new(b) as Box<dyn Baseline>))
    }

    fn limit_kind(&self) -> Option<LimitKind> {
        Some(kind(self.copies))
    }

    fn run_budget_fraction(&self) -> f64 {
        0.3
    }
}

fn kind(copies: Copies) -> LimitKind {
    match copies {
        Copies::One => LimitKind::C2cSingleCopy,
        Copies::Two => LimitKind::C2cTwoCopy,
    }
}

/// The shared memory of both threads: two doorbells, two flag lines, and
/// the message buffers, each at a page boundary plus the offset. A cold
/// buffer is a region of rotating slots, indexed by message number.
struct Mem {
    map: MmapMut,
    /// Start of each buffer region from the map's start (page multiple).
    starts: [usize; BUFFERS],
    /// Which regions rotate (cold); the others are one hot buffer.
    rotating: [bool; BUFFERS],
    /// Bytes one rotating region spans.
    rotating_bytes: usize,
    offset: usize,
    llc_bytes: u64,
}

/// Buffer numbers: the two shared buffers (both modes), then the private
/// send and receive buffers of each side (two-copy; single copy uses the
/// receive buffers only when cold).
const SHARED: [usize; 2] = [0, 1];
const PRIVATE_SEND: [usize; 2] = [2, 4];
const PRIVATE_RECV: [usize; 2] = [3, 5];
const BUFFERS: usize = 6;

impl Mem {
    fn new(
        max_bytes: usize,
        offset: usize,
        copies: Copies,
        cold: bool,
        llc_bytes: Option<u64>,
    ) -> io::Result<Mem> {
        let llc_bytes = llc_bytes.unwrap_or(FALLBACK_LLC_BYTES);
        let stride = (max_bytes + offset).div_ceil(PAGE_BYTES).max(1) * PAGE_BYTES;
        let rotating_bytes = pool_bytes(max_bytes as u64, offset as u64, true, Some(llc_bytes))
            as usize
            - PAGE_BYTES;
        let mut used = [false; BUFFERS];
        let mut rotating = [false; BUFFERS];
        for i in SHARED {
            used[i] = true;
            rotating[i] = cold && copies == Copies::One;
        }
        for side in 0..2 {
            let (send, recv) = (PRIVATE_SEND[side], PRIVATE_RECV[side]);
            used[send] = copies == Copies::Two;
            used[recv] = copies == Copies::Two || cold;
            rotating[send] = cold;
            rotating[recv] = cold;
        }
        let mut starts = [0; BUFFERS];
        let mut at = PAGE_BYTES;
        for i in 0..BUFFERS {
            starts[i] = at;
            if used[i] {
                at += if rotating[i] { rotating_bytes } else { stride };
            }
        }
        let mut map = MmapMut::map_anon(at).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot map {at} bytes of buffers: {e}"))
        })?;
        // Every page faulted in now, not in a timed loop.
        map.fill(0xa5);
        Ok(Mem {
            map,
            starts,
            rotating,
            rotating_bytes,
            offset,
            llc_bytes,
        })
    }
    /// The slots of `bytes`-byte messages in the rotating regions.
    fn rotation(&self, bytes: u64) -> Rotation {
        Rotation::for_size(
            bytes,
            self.offset as u64,
            true,
            self.llc_bytes,
            self.rotating_bytes,
        )
    }
    fn base(&self) -> *mut u8 {
        self.map.as_ptr() as *mut u8
    }
    fn bell(&self, side: usize) -> *const Doorbell {
        // SAFETY: two doorbells at the start of the first page.
        unsafe { self.base().add(side * LINE_PAIR_BYTES) as *const Doorbell }
    }
    fn flag(&self, side: usize) -> &AtomicU64 {
        // SAFETY: two flag lines after the doorbells, in the first page,
        // 128-byte aligned; only ever accessed atomically.
        unsafe { &*(self.base().add((2 + side) * LINE_PAIR_BYTES) as *const AtomicU64) }
    }
    /// Buffer `i` for message `n` (its slot `n` when it rotates).
    #[inline(always)]
    fn buf(&self, i: usize, rot: Rotation, n: u64) -> *mut u8 {
        let slot = if self.rotating[i] {
            rot.slot_offset(n)
        } else {
            0
        };
        // SAFETY: buffer i (and each of its slots) lies inside the map.
        unsafe { self.base().add(self.starts[i] + slot + self.offset) }
    }
}

/// One side of the ping-pong: side 0 the measuring thread, 1 the helper.
#[derive(Clone, Copy)]
struct Side {
    me: usize,
    copies: Copies,
    /// Cold (`--nocache`): messages copied out of and into rotating slots.
    cold: bool,
}

impl Side {
    /// (source, destination) of the copy made before raising the flag.
    #[inline(always)]
    fn send_copy(self, m: &Mem, r: Rotation, n: u64) -> Option<(*mut u8, *mut u8)> {
        (self.copies == Copies::Two).then(|| {
            (
                m.buf(PRIVATE_SEND[self.me], r, n),
                m.buf(SHARED[self.me], r, n),
            )
        })
    }
    /// (source, destination) of the copy made once the other's flag is up:
    /// warm single copy echoes into its own shared buffer (the next
    /// message's source); cold copies into a fresh private slot.
    #[inline(always)]
    fn recv_copy(self, m: &Mem, r: Rotation, n: u64) -> (*mut u8, *mut u8) {
        let theirs = m.buf(SHARED[1 - self.me], r, n);
        match (self.copies, self.cold) {
            (Copies::One, false) => (theirs, m.buf(SHARED[self.me], r, n)),
            _ => (theirs, m.buf(PRIVATE_RECV[self.me], r, n)),
        }
    }
    /// The buffer an integrity pass fills before sending: the source of
    /// the send copy, or (single copy) what the other side copies out.
    fn fill_buf(self, m: &Mem, r: Rotation, n: u64) -> *mut u8 {
        match self.copies {
            Copies::One => m.buf(SHARED[self.me], r, n),
            Copies::Two => m.buf(PRIVATE_SEND[self.me], r, n),
        }
    }

    /// Send message `n` of `len` bytes (filled with the pattern of `op`
    /// first when `CHECK`).
    ///
    /// # Safety
    /// `len` at most the buffers' size; the other side must not touch this
    /// side's shared buffer until it sees the flag (strict alternation).
    #[inline(always)]
    unsafe fn send<const CHECK: bool>(
        self,
        m: &Mem,
        w: &Waiter,
        r: Rotation,
        n: u64,
        len: usize,
        op: u64,
    ) {
        if CHECK {
            fill(
                std::slice::from_raw_parts_mut(self.fill_buf(m, r, n), len),
                op,
                self.me as u64,
            );
        }
        if let Some((src, dst)) = self.send_copy(m, r, n) {
            std::ptr::copy_nonoverlapping(src, dst, len);
        }
        m.flag(self.me).store(n, Ordering::Release);
        w.notify();
    }

    /// Wait for message `n` and copy it out (checking it when `CHECK`).
    ///
    /// # Safety
    /// As for [`Side::send`].
    #[inline(always)]
    unsafe fn recv<const CHECK: bool>(
        self,
        m: &Mem,
        w: &Waiter,
        r: Rotation,
        n: u64,
        len: usize,
        op: u64,
    ) -> io::Result<()> {
        let flag = m.flag(1 - self.me);
        w.wait(|| Ok(flag.load(Ordering::Acquire) == n))?;
        let (src, dst) = self.recv_copy(m, r, n);
        std::ptr::copy_nonoverlapping(src, dst, len);
        if CHECK {
            let got = std::slice::from_raw_parts(dst, len);
            let who = ["measuring thread", "helper thread"][self.me];
            if let Some(e) = check(got, op, 1 - self.me as u64, who) {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// A block for the helper thread.
struct Command {
    bytes: usize,
    rotation: Rotation,
    repeats: u64,
    check: bool,
}

/// The measuring side of a core-to-core baseline, with its helper thread.
pub struct C2cBench {
    mem: Arc<Mem>,
    side: Side,
    waiter: Waiter,
    next: u64,
    max_bytes: u64,
    helper: Helper<Command>,
    setup: BaselineSetup,
}

impl C2cBench {
    /// Map the buffers and start the helper thread on `setup.helper_cpu`.
    pub fn new(setup: &BaselineSetup, copies: Copies) -> anyhow::Result<C2cBench> {
        let name = C2c { copies }.name();
        if setup.mode != Mode::Pingpong {
            return Err(crate::error::usage(format!(
                "{name} measures round trips: use --mode pingpong (its default), not {}",
                setup.mode
            )));
        }
        if setup.max_bytes > MAX_BYTES {
            return Err(crate::error::usage(format!(
                "{name} carries at most {MAX_BYTES} bytes, not {}",
                setup.max_bytes
            )));
        }
        let mem = Arc::new(Mem::new(
            setup.max_bytes as usize,
            setup.offset_bytes as usize,
            copies,
            setup.nocache,
            setup.llc_bytes,
        )?);
        // SAFETY: the doorbells live in `mem`, which the bench and the
        // helper both keep alive (Arc) for as long as they use the waiters.
        let (waiter, helper_waiter) = unsafe {
            (
                Waiter::new(setup.wait, setup.timeout, mem.bell(0), mem.bell(1)),
                Waiter::new(setup.wait, setup.timeout, mem.bell(1), mem.bell(0)),
            )
        };
        let helper_mem = Arc::clone(&mem);
        let cold = setup.nocache;
        let side = Side {
            me: 1,
            copies,
            cold,
        };
        let mut next = 0u64;
        let helper = Helper::start("wulf-c2c", setup.helper_cpu, setup.timeout, move |cmd| {
            helper_block(&helper_mem, side, helper_waiter, &mut next, cmd)
        })?;
        Ok(C2cBench {
            mem,
            side: Side {
                me: 0,
                copies,
                cold,
            },
            waiter,
            next: 0,
            max_bytes: setup.max_bytes,
            helper,
            setup: setup.clone(),
        })
    }

    fn run(&mut self, bytes: u64, repeats: u64, check_bytes: bool) -> io::Result<BaselineBlock> {
        if bytes > self.max_bytes {
            return Err(io::Error::other(format!(
                "this baseline was set up for at most {} bytes",
                self.max_bytes
            )));
        }
        let len = bytes as usize;
        let r = self.mem.rotation(bytes);
        self.helper.command(Command {
            bytes: len,
            rotation: r,
            repeats,
            check: check_bytes,
        })?;
        let (m, s, w) = (&*self.mem, self.side, self.waiter);
        // SAFETY (all blocks below): live map, sizes checked above, strict
        // alternation between the two threads.
        // Primer: the helper is in its loop once it answers.
        self.next += 1;
        unsafe {
            s.send::<false>(m, &w, r, self.next, len, 0);
            s.recv::<false>(m, &w, r, self.next, len, 0)?;
        }
        let cpu0 = thread_cpu_time();
        let t0 = Instant::now();
        let mut outcome = Ok(());
        if check_bytes {
            for op in 0..repeats {
                self.next += 1;
                unsafe {
                    s.send::<true>(m, &w, r, self.next, len, op);
                    match s.recv::<true>(m, &w, r, self.next, len, op) {
                        // Keep in step with the helper, report at the end.
                        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                            outcome = outcome.and(Err(e))
                        }
                        other => other?,
                    }
                }
            }
        } else {
            for _ in 0..repeats {
                self.next += 1;
                unsafe {
                    s.send::<false>(m, &w, r, self.next, len, 0);
                    s.recv::<false>(m, &w, r, self.next, len, 0)?;
                }
            }
        }
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        let main_cpu = thread_cpu_time().since(cpu0);
        let helper_cpu = self.helper.report()?;
        outcome.map(|()| BaselineBlock {
            elapsed_ns,
            main_cpu,
            helper_cpu,
        })
    }
}

/// The helper's side of one block: answer every message of it.
fn helper_block(m: &Mem, s: Side, w: Waiter, next: &mut u64, cmd: Command) -> io::Result<CpuTime> {
    let (len, r) = (cmd.bytes, cmd.rotation);
    // SAFETY (all blocks): live map, strict alternation; the measuring
    // thread checked the size.
    *next += 1;
    unsafe {
        s.recv::<false>(m, &w, r, *next, len, 0)?;
        s.send::<false>(m, &w, r, *next, len, 0);
    }
    let cpu0 = thread_cpu_time();
    let mut mismatch = Ok(());
    for op in 0..cmd.repeats {
        *next += 1;
        unsafe {
            if cmd.check {
                match s.recv::<true>(m, &w, r, *next, len, op) {
                    // Keep in step with the measuring thread.
                    Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                        mismatch = mismatch.and(Err(e))
                    }
                    other => other?,
                }
                s.send::<true>(m, &w, r, *next, len, op);
            } else {
                s.recv::<false>(m, &w, r, *next, len, 0)?;
                s.send::<false>(m, &w, r, *next, len, 0);
            }
        }
    }
    let cpu = thread_cpu_time().since(cpu0);
    mismatch.map(|()| cpu)
}

impl Baseline for C2cBench {
    fn settings(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let copy = match self.side.copies {
            Copies::One => "echo: each end copies out (memcpy) the buffer the other end has just written, one flag per hand-off",
            Copies::Two => "serial two-copy hand-off: memcpy into a shared buffer, one flag, memcpy out into a private buffer; whole messages, no pipelining",
        };
        m.insert("copy".into(), json!(copy));
        m.insert(
            "buffers".into(),
            json!(if self.side.cold {
                "cold: copied out of and into slots rotated past twice the last-level cache (--nocache)"
            } else {
                "warm: cache-hot buffers reused by every message"
            }),
        );
        m.insert("wait".into(), json!(self.setup.wait.name()));
        m.insert("helper_cpu".into(), json!(self.helper.cpu()));
        m.insert("offset_bytes".into(), json!(self.setup.offset_bytes));
        // Every hand-off is a memcpy between two cores' caches.
        m.insert(crate::result::COPIES_KEY.into(), json!(true));
        m
    }

    fn helper_cpu(&self) -> Option<usize> {
        self.helper.cpu()
    }

    fn time_definition(&self) -> &'static str {
        match self.side.copies {
            Copies::One => "one-way time: half of one round trip in which each of two threads on the two CPUs copies out the message the other has just written, averaged over a block",
            Copies::Two => "one-way time: half of one round trip in which each message is copied into a shared buffer by one thread and out of it by the other, averaged over a block",
        }
    }

    fn limit_kind(&self) -> LimitKind {
        kind(self.side.copies)
    }

    fn block(&mut self, bytes: u64, repeats: u64) -> io::Result<BaselineBlock> {
        self.run(bytes, repeats, false)
    }

    /// Three checked round trips (each byte of both directions compared).
    fn integrity(&mut self, bytes: u64) -> io::Result<()> {
        self.run(bytes, 3, true).map(drop)
    }
}

#[cfg(test)]
#[path = "c2c_tests.rs"]
mod tests;
