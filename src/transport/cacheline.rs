//! Baseline `cacheline`: a message passed back and forth between two
//! threads pinned to the two CPUs of the sweep, through plain cache-coherent
//! memory and nothing else. Its one-way time at 8 bytes is the floor for any
//! message between two processes on those CPUs: one cache line moved from
//! one core to the other.
//!
//! Each direction has a flag line: the writer copies the payload in right
//! behind an 8-byte sequence number (payloads up to 56 bytes share the
//! number's cache line) and then publishes the number with a release store;
//! the reader polls it with acquire loads and copies the payload out. The
//! reply goes back the same way on the other line. Strict alternation needs
//! no other bookkeeping. Both threads wait like the `shm` transport does
//! (spin by default, `--wait`), with the same deadline checks.
//!
//! The second thread runs for the life of the baseline: each block is one
//! command to it over a channel (outside the timed part), then one untimed
//! primer round trip, then the timed round trips, as in the transports'
//! timing loops.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use memmap2::MmapMut;
use serde_json::{json, Map, Value};

use super::baseline::{Baseline, BaselineBlock, BaselineSetup, Helper, LimitKind};
use super::wait::{Doorbell, Waiter};
use super::Transport;
use crate::message::pattern::{check, fill};
use crate::result::Mode;
use crate::sys::{thread_cpu_time, CpuTime};

/// Payload size whose one-way time is the cache-line floor: a u64 beside its
/// sequence number, in one line (defined with the results, which name it).
pub const FLOOR_BYTES: u64 = crate::result::CACHELINE_FLOOR_BYTES;
/// Largest payload.
pub const MAX_BYTES: u64 = 64 << 10;
/// Largest size of the default schedule.
const DEFAULT_MAX_BYTES: u64 = 4 << 10;

const BELLS_BYTES: usize = 256;
const LINE_BYTES: usize = 64;
/// Bytes of one direction's flag line plus payload area.
const DIR_BYTES: usize = LINE_BYTES + MAX_BYTES as usize;

/// The cache-line ping-pong baseline.
pub struct Cacheline;

impl Transport for Cacheline {
    fn name(&self) -> &'static str {
        "cacheline"
    }

    fn about(&self) -> &'static str {
        "baseline: core-to-core cache-line ping-pong between the two pinned CPUs (the latency floor)"
    }

    super::baseline::channel_less!();

    fn baseline(&self, setup: &BaselineSetup) -> Option<anyhow::Result<Box<dyn Baseline>>> {
        Some(CachelineBench::new(setup).map(|b| Box::new(b) as Box<dyn Baseline>))
    }

    fn default_sizes(&self, perturb: bool) -> Option<Vec<u64>> {
        let mut s = crate::message::schedule::netpipe(1, DEFAULT_MAX_BYTES, perturb);
        s.retain(|&b| b <= DEFAULT_MAX_BYTES);
        Some(s)
    }

    fn limit_kind(&self) -> Option<super::baseline::LimitKind> {
        Some(super::baseline::LimitKind::CachelineFloor)
    }

    fn run_budget_fraction(&self) -> f64 {
        0.1
    }
}

/// Offsets in the shared map: bells, main-to-helper line, helper-to-main.
struct Lines {
    map: Arc<MmapMut>,
}

impl Lines {
    fn base(&self) -> *mut u8 {
        self.map.as_ptr() as *mut u8
    }
    fn bell(&self, i: usize) -> *const Doorbell {
        // SAFETY: two doorbells of 128 bytes at the start of the map.
        unsafe { self.base().add(i * 128) as *const Doorbell }
    }
    fn dir(&self, i: usize) -> *mut u8 {
        // SAFETY: two directions after the bells, inside the map.
        unsafe { self.base().add(BELLS_BYTES + i * DIR_BYTES) }
    }
}

/// The sequence number at the start of a direction's line.
///
/// # Safety
/// `dir` must come from [`Lines::dir`] of a live map.
unsafe fn seq<'a>(dir: *mut u8) -> &'a AtomicU64 {
    &*(dir as *const AtomicU64)
}

/// Write `payload` behind the number and publish `n`.
///
/// # Safety
/// As for [`seq`]; the line must be this thread's to write (strict
/// alternation) and `payload` at most [`MAX_BYTES`].
#[inline(always)]
unsafe fn put(dir: *mut u8, payload: &[u8], n: u64) {
    std::ptr::copy_nonoverlapping(payload.as_ptr(), dir.add(8), payload.len());
    seq(dir).store(n, Ordering::Release);
}

/// Wait for number `n` and copy the payload out.
///
/// # Safety
/// As for [`put`].
#[inline(always)]
unsafe fn take(dir: *mut u8, w: &Waiter, out: &mut [u8], n: u64) -> io::Result<()> {
    w.wait(|| Ok(seq(dir).load(Ordering::Acquire) == n))?;
    std::ptr::copy_nonoverlapping(dir.add(8), out.as_mut_ptr(), out.len());
    Ok(())
}

/// A block for the helper thread.
struct Command {
    bytes: usize,
    repeats: u64,
    check: bool,
}

/// The measuring side of the ping-pong, with its helper thread.
pub struct CachelineBench {
    lines: Lines,
    waiter: Waiter,
    next: u64,
    out: Vec<u8>,
    inp: Vec<u8>,
    helper: Helper<Command>,
    setup: BaselineSetup,
}

impl CachelineBench {
    /// Map the lines and start the helper thread on `setup.helper_cpu`.
    pub fn new(setup: &BaselineSetup) -> anyhow::Result<CachelineBench> {
        if setup.mode != Mode::Pingpong {
            return Err(crate::error::usage(format!(
                "cacheline measures round trips: use --mode pingpong (its default), not {}",
                setup.mode
            )));
        }
        if setup.max_bytes > MAX_BYTES {
            return Err(crate::error::usage(format!(
                "cacheline carries at most {MAX_BYTES} bytes per hand-off, not {}; \
                 use memcpy or shm for larger sizes",
                setup.max_bytes
            )));
        }
        let map = Arc::new(MmapMut::map_anon(BELLS_BYTES + 2 * DIR_BYTES)?);
        let lines = Lines { map };
        // SAFETY: the doorbells live in `map`, which the bench and the
        // helper both keep alive (Arc) for as long as they use the waiters.
        let (waiter, helper_waiter) = unsafe {
            (
                Waiter::new(setup.wait, setup.timeout, lines.bell(0), lines.bell(1)),
                Waiter::new(setup.wait, setup.timeout, lines.bell(1), lines.bell(0)),
            )
        };
        let helper_lines = Lines {
            map: Arc::clone(&lines.map),
        };
        let mut state = HelperState {
            next: 0,
            out: vec![0xa5u8; MAX_BYTES as usize],
            inp: vec![0u8; MAX_BYTES as usize],
        };
        let helper = Helper::start(
            "wulf-cacheline",
            setup.helper_cpu,
            setup.timeout,
            move |cmd| helper_block(&helper_lines, helper_waiter, &mut state, cmd),
        )?;
        Ok(CachelineBench {
            lines,
            waiter,
            next: 0,
            out: vec![0x5a; MAX_BYTES as usize],
            inp: vec![0; MAX_BYTES as usize],
            helper,
            setup: setup.clone(),
        })
    }

    fn run(&mut self, bytes: u64, repeats: u64, check_bytes: bool) -> io::Result<BaselineBlock> {
        let bytes = bytes as usize;
        if bytes as u64 > MAX_BYTES {
            return Err(io::Error::other(format!(
                "cacheline carries at most {MAX_BYTES} bytes"
            )));
        }
        self.helper.command(Command {
            bytes,
            repeats,
            check: check_bytes,
        })?;
        let (ping, pong) = (self.lines.dir(0), self.lines.dir(1));
        let w = self.waiter;
        let out = &mut self.out[..bytes];
        let inp = &mut self.inp[..bytes];
        // SAFETY (all blocks below): the lines belong to the live map and
        // alternate strictly between the two threads.
        // Primer: the helper is in its loop once it answers.
        self.next += 1;
        unsafe {
            put(ping, out, self.next);
            take(pong, &w, inp, self.next)?;
        }
        let mut mismatch = None;
        let cpu0 = thread_cpu_time();
        let t0 = Instant::now();
        if check_bytes {
            for op in 0..repeats {
                fill(out, op, 0);
                self.next += 1;
                unsafe {
                    put(ping, out, self.next);
                    take(pong, &w, inp, self.next)?;
                }
                if mismatch.is_none() {
                    mismatch = check(inp, op, 1, "measuring thread");
                }
            }
        } else {
            for _ in 0..repeats {
                self.next += 1;
                unsafe {
                    put(ping, out, self.next);
                    take(pong, &w, inp, self.next)?;
                }
            }
        }
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        let main_cpu = thread_cpu_time().since(cpu0);
        let helper_cpu = self.helper.report()?;
        match mismatch {
            Some(e) => Err(e),
            None => Ok(BaselineBlock {
                elapsed_ns,
                main_cpu,
                helper_cpu,
            }),
        }
    }
}

/// The helper thread's buffers and sequence number, kept across blocks.
struct HelperState {
    next: u64,
    out: Vec<u8>,
    inp: Vec<u8>,
}

/// The helper's side of one block: answer every message of it.
fn helper_block(
    lines: &Lines,
    w: Waiter,
    st: &mut HelperState,
    cmd: Command,
) -> io::Result<CpuTime> {
    let (o, i) = (&mut st.out[..cmd.bytes], &mut st.inp[..cmd.bytes]);
    let (ping, pong) = (lines.dir(0), lines.dir(1));
    // SAFETY (both blocks): live map, strict alternation.
    st.next += 1;
    unsafe {
        take(ping, &w, i, st.next)?;
        put(pong, o, st.next);
    }
    let cpu0 = thread_cpu_time();
    let mut mismatch = None;
    for op in 0..cmd.repeats {
        st.next += 1;
        unsafe { take(ping, &w, i, st.next)? };
        if cmd.check {
            if mismatch.is_none() {
                mismatch = check(i, op, 0, "helper thread");
            }
            fill(o, op, 1);
        }
        unsafe { put(pong, o, st.next) };
    }
    let cpu = thread_cpu_time().since(cpu0);
    mismatch.map_or(Ok(cpu), Err)
}

impl Baseline for CachelineBench {
    fn block(&mut self, bytes: u64, repeats: u64) -> io::Result<BaselineBlock> {
        self.run(bytes, repeats, false)
    }

    fn integrity(&mut self, bytes: u64) -> io::Result<()> {
        self.run(bytes, 3, true).map(drop)
    }

    fn settings(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("wait".into(), json!(self.setup.wait.name()));
        m.insert("helper_cpu".into(), json!(self.helper.cpu()));
        m.insert("line_bytes".into(), json!(LINE_BYTES));
        m.insert("floor_bytes".into(), json!(FLOOR_BYTES));
        m
    }

    fn helper_cpu(&self) -> Option<usize> {
        self.helper.cpu()
    }

    fn time_definition(&self) -> &'static str {
        "one-way time: half of one round trip of a payload written behind a sequence number in shared cache lines by one thread and read by another, averaged over a block"
    }

    fn limit_kind(&self) -> LimitKind {
        LimitKind::CachelineFloor
    }
}

#[cfg(test)]
mod tests {
    use super::super::WaitMode;
    use super::*;

    fn setup(wait: WaitMode) -> BaselineSetup {
        BaselineSetup {
            mode: Mode::Pingpong,
            max_bytes: 4096,
            nocache: false,
            offset_bytes: 0,
            llc_bytes: None,
            caches: Vec::new(),
            helper_cpu: None,
            wait,
            timeout: std::time::Duration::from_secs(10),
        }
    }

    #[test]
    fn round_trips_and_integrity() {
        // Yield: this test must not depend on having two idle CPUs.
        let mut b = CachelineBench::new(&setup(WaitMode::Yield)).unwrap();
        for bytes in [1, 8, 56, 57, 4096] {
            b.integrity(bytes).unwrap();
            let t = b.block(bytes, 50).unwrap();
            assert!(t.elapsed_ns > 0);
        }
        assert!(b.block(MAX_BYTES + 1, 1).is_err());
    }

    #[test]
    fn bad_set_ups_are_refused() {
        let mut s = setup(WaitMode::Spin);
        s.max_bytes = MAX_BYTES + 1;
        assert!(CachelineBench::new(&s).is_err());
        s.max_bytes = 8;
        s.mode = Mode::Stream;
        assert!(CachelineBench::new(&s).is_err());
    }
}
