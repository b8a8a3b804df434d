//! Waiting for the other process through shared memory: spin, yield, or
//! sleep on a futex (`--wait spin|yield|block`).
//!
//! The shared-memory transports hand data over with plain loads and stores,
//! so an end that finds nothing to do must wait by polling. How it polls is
//! the one choice that matters on a machine with more runnable processes
//! than cores:
//!
//! * `spin` (default): poll with the CPU's pause hint. Lowest latency, one
//!   core busy per end.
//! * `yield`: poll, giving the CPU away (sched_yield) between polls.
//! * `block`: poll briefly, then sleep on a futex in the shared region. The
//!   other end rings the futex only when the sleeper said it is asleep, so a
//!   hand-off costs a fence and a load, not a system call, unless someone
//!   actually sleeps.
//!
//! Every wait is bounded by the channel timeout: a peer that died or stopped
//! becomes a `TimedOut` error, never a hang. Spinning reads the clock only
//! once every [`SPINS_PER_CHECK`] polls, so the deadline costs next to
//! nothing, and the first clock read happens only once a wait has already
//! spun that long (a hand-off that is on time never reads the clock).
//!
//! Both ends must use the same mode (the measuring side sends its channel
//! options to the peer, and the region header repeats it for a check).

use std::io;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub use crate::result::WaitMode;

/// Polls between two deadline checks when spinning.
pub const SPINS_PER_CHECK: u32 = 1024;
/// Polls between two deadline checks when yielding (each is a system call,
/// and a yield may give the CPU away for a whole time slice).
const YIELDS_PER_CHECK: u32 = 16;
/// Polls before `block` goes to sleep: a reply within about a microsecond
/// costs no system call on either side.
const SPINS_BEFORE_SLEEP: u32 = 256;
/// How often a wait that has already lasted this long looks at its abort
/// descriptor ([`Waiter::with_abort`]), and the longest futex sleep of a
/// waiter that has one: a server whose client was killed in the middle of
/// a block ends within about this, not after the channel timeout, and a
/// wait that is on time never makes the system call.
pub const ABORT_CHECK_EVERY: Duration = Duration::from_millis(20);

/// One end's doorbell in shared memory: a futex word the other end bumps to
/// wake it, and a flag saying this end is (about to be) asleep on it. Own
/// cache-line pair, so ringing it never disturbs the data lines.
#[repr(C, align(128))]
pub struct Doorbell {
    /// Futex word, incremented by the other end to wake this one.
    pub ring: AtomicU32,
    /// Non-zero while this end may be sleeping on `ring`.
    pub sleeping: AtomicU32,
}

/// How one end waits and wakes the other. Copyable so that a wait condition
/// can borrow the rest of the endpoint mutably.
#[derive(Clone, Copy)]
pub struct Waiter {
    mode: WaitMode,
    timeout: Duration,
    mine: *const Doorbell,
    theirs: *const Doorbell,
    /// Readable (or hung up) once the channel is aborted from another
    /// thread (the watching end of an [`super::AbortPair`]); None: only
    /// the timeout ends a wait.
    abort: Option<std::os::fd::RawFd>,
}

// SAFETY: the doorbells are atomics in memory that outlives the waiter (the
// constructor's contract); moving the waiter between threads is fine.
unsafe impl Send for Waiter {}

impl Waiter {
    /// A waiter sleeping on `mine` and ringing `theirs`.
    ///
    /// # Safety
    /// Both pointers must point to [`Doorbell`]s (suitably aligned) that stay
    /// mapped for as long as the waiter or any copy of it is used.
    pub unsafe fn new(
        mode: WaitMode,
        timeout: Duration,
        mine: *const Doorbell,
        theirs: *const Doorbell,
    ) -> Waiter {
        Waiter {
            mode,
            timeout,
            mine,
            theirs,
            abort: None,
        }
    }

    /// The same waiter, whose waits also end (with `ConnectionAborted`)
    /// once `fd` becomes readable or hangs up: the watch end of the
    /// channel's [`super::AbortPair`], which a server's watchdog uses when
    /// the client goes away (issue 26: a shm or cma client killed in the
    /// middle of a block held the server until the data timeout).
    ///
    /// # Safety
    /// `fd` must stay open for as long as the waiter or any copy of it is
    /// used (the endpoint owning the waiter owns the pair too).
    pub unsafe fn with_abort(self, fd: std::os::fd::RawFd) -> Waiter {
        Waiter {
            abort: Some(fd),
            ..self
        }
    }

    /// The wait mode.
    pub fn mode(&self) -> WaitMode {
        self.mode
    }

    /// Tell the other end that something it may wait for changed. Call it
    /// after the release store that published the change. Only `block`
    /// needs it; in the other modes it compiles to a comparison.
    #[inline(always)]
    pub fn notify(&self) {
        if self.mode == WaitMode::Block {
            self.notify_sleeper();
        }
    }

    #[inline(never)]
    fn notify_sleeper(&self) {
        // SAFETY: the constructor's contract.
        let d = unsafe { &*self.theirs };
        // Pairs with the fence in `sleep`: either the sleeper sees our
        // published change before sleeping, or we see its flag here.
        fence(Ordering::SeqCst);
        if d.sleeping.load(Ordering::Relaxed) != 0 {
            d.ring.fetch_add(1, Ordering::Release);
            futex_wake(&d.ring);
        }
    }

    /// Wait until `ready` returns true (it is polled; it may also make
    /// progress, e.g. move data both ways). Errors from `ready` end the wait;
    /// so does the channel timeout, as `TimedOut`.
    #[inline(always)]
    pub fn wait<F: FnMut() -> io::Result<bool>>(&self, mut ready: F) -> io::Result<()> {
        if ready()? {
            return Ok(());
        }
        self.wait_slow(&mut ready)
    }

    #[inline(never)]
    fn wait_slow<F: FnMut() -> io::Result<bool>>(&self, ready: &mut F) -> io::Result<()> {
        let mut deadline: Option<Instant> = None;
        let mut next_abort_check: Option<Instant> = None;
        let mut polls: u32 = 0;
        loop {
            match self.mode {
                WaitMode::Spin => {
                    for _ in 0..SPINS_PER_CHECK {
                        std::hint::spin_loop();
                        if ready()? {
                            return Ok(());
                        }
                    }
                }
                WaitMode::Yield => {
                    for _ in 0..YIELDS_PER_CHECK {
                        std::thread::yield_now();
                        if ready()? {
                            return Ok(());
                        }
                    }
                }
                WaitMode::Block if polls < SPINS_BEFORE_SLEEP => {
                    for _ in 0..SPINS_BEFORE_SLEEP {
                        std::hint::spin_loop();
                        if ready()? {
                            return Ok(());
                        }
                    }
                    polls = SPINS_BEFORE_SLEEP;
                }
                WaitMode::Block => {
                    let mut left = match deadline {
                        Some(d) => d.saturating_duration_since(Instant::now()),
                        None => self.timeout,
                    };
                    if self.abort.is_some() {
                        // Wake now and then to look at the abort.
                        left = left.min(ABORT_CHECK_EVERY);
                    }
                    if self.sleep(ready, left)? {
                        return Ok(());
                    }
                }
            }
            let now = Instant::now();
            let d = *deadline.get_or_insert(now + self.timeout);
            if let Some(fd) = self.abort {
                let check = *next_abort_check.get_or_insert(now + ABORT_CHECK_EVERY);
                if now >= check {
                    if aborted(fd) {
                        return Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            "the channel was ended while waiting for the peer (its other end went away)",
                        ));
                    }
                    next_abort_check = Some(now + ABORT_CHECK_EVERY);
                }
            }
            if now >= d {
                return if ready()? {
                    Ok(())
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the peer stopped sending or receiving (nothing for {})",
                            humantime::format_duration(self.timeout)
                        ),
                    ))
                };
            }
        }
    }

    /// Announce sleep, check once more, and sleep on the futex for at most
    /// `left` unless the condition already holds.
    fn sleep<F: FnMut() -> io::Result<bool>>(
        &self,
        ready: &mut F,
        left: Duration,
    ) -> io::Result<bool> {
        // SAFETY: the constructor's contract.
        let d = unsafe { &*self.mine };
        // Read the word before announcing: a ring after this read changes
        // it, and the futex then refuses to sleep.
        let seen = d.ring.load(Ordering::Acquire);
        d.sleeping.store(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let r = ready();
        if matches!(r, Ok(false)) {
            futex_wait(&d.ring, seen, left);
        }
        d.sleeping.store(0, Ordering::Relaxed);
        r
    }
}

/// Whether `fd` is readable or hung up, without waiting.
fn aborted(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call; `fd` is open (the contract
    // of `Waiter::with_abort`); a zero timeout never blocks.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents != 0
}

/// Sleep while `word` holds `expected`, at most `timeout`. Spurious returns
/// (a signal, a changed word, the timeout) are fine: the caller re-checks.
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word` and the
    // timespec; not FUTEX_PRIVATE because the word is shared between
    // processes.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wake the (at most one) process sleeping on `word`.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1i32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn bells() -> Arc<[Doorbell; 2]> {
        Arc::new([
            Doorbell {
                ring: AtomicU32::new(0),
                sleeping: AtomicU32::new(0),
            },
            Doorbell {
                ring: AtomicU32::new(0),
                sleeping: AtomicU32::new(0),
            },
        ])
    }

    #[test]
    fn times_out_in_every_mode() {
        let b = bells();
        for mode in [WaitMode::Spin, WaitMode::Yield, WaitMode::Block] {
            // SAFETY: `b` outlives the waiter.
            let w = unsafe { Waiter::new(mode, Duration::from_millis(50), &b[0], &b[1]) };
            let t = Instant::now();
            let e = w.wait(|| Ok(false)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{mode}");
            assert!(t.elapsed() >= Duration::from_millis(50));
            assert!(t.elapsed() < Duration::from_secs(2), "{mode}");
        }
    }

    #[test]
    fn errors_from_the_condition_end_the_wait() {
        let b = bells();
        // SAFETY: `b` outlives the waiter.
        let w = unsafe { Waiter::new(WaitMode::Spin, Duration::from_secs(5), &b[0], &b[1]) };
        let mut n = 0;
        let e = w
            .wait(|| {
                n += 1;
                if n > 3000 {
                    Err(io::Error::other("boom"))
                } else {
                    Ok(false)
                }
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "boom");
    }

    #[test]
    fn an_abort_ends_a_wait_in_every_mode_long_before_the_timeout() {
        use std::os::fd::AsRawFd;
        let b = bells();
        for mode in [WaitMode::Spin, WaitMode::Yield, WaitMode::Block] {
            let pair = crate::transport::AbortPair::new().unwrap();
            let handle = pair.handle().unwrap();
            // SAFETY: `b` and `pair` outlive the waiter.
            let w = unsafe {
                Waiter::new(mode, Duration::from_secs(30), &b[0], &b[1])
                    .with_abort(pair.watch_fd().as_raw_fd())
            };
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                handle.abort();
            });
            let started = Instant::now();
            let e = w.wait(|| Ok(false)).unwrap_err();
            t.join().unwrap();
            assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "{mode}");
            assert!(started.elapsed() < Duration::from_secs(10), "{mode}");
        }
    }

    #[test]
    fn a_blocked_waiter_is_woken() {
        let b = bells();
        let flag = Arc::new(AtomicBool::new(false));
        let (b2, f2) = (Arc::clone(&b), Arc::clone(&flag));
        let t = std::thread::spawn(move || {
            // SAFETY: `b2` outlives the waiter.
            let w =
                unsafe { Waiter::new(WaitMode::Block, Duration::from_secs(10), &b2[0], &b2[1]) };
            let t0 = Instant::now();
            w.wait(|| Ok(f2.load(Ordering::Acquire))).unwrap();
            t0.elapsed()
        });
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: `b` outlives the waiter.
        let waker = unsafe { Waiter::new(WaitMode::Block, Duration::from_secs(10), &b[1], &b[0]) };
        flag.store(true, Ordering::Release);
        waker.notify();
        let waited = t.join().unwrap();
        assert!(waited < Duration::from_secs(5), "woken, not timed out");
    }
}
