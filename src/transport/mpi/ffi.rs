//! A small safe Rust API over wulf's MPI adapter (`adapter.c`), loaded at
//! run time with dlopen, so wulf builds without any MPI installed.
//!
//! The API is what wulf's own code needs, and what an MPI backend of another
//! module (the NAS kernels' `Communicator`) needs: initialise, rank and size,
//! send and receive bytes, `f64` slices (length-checked receives, and
//! MPI_Sendrecv with distinct peers for shifts), windows of non-blocking
//! sends, allreduce of `f64` (sum, max, min), alltoallv of `f64` or `i32`
//! ([`MpiValue`]), barrier, broadcast and all-to-all of bytes (ABI 5,
//! `wulf collective`; in [`collective`]), a receive from any rank (ABI 6,
//! channels between ranks of a larger job), non-blocking receives and sends
//! completed by a wait (ABI 7, the NAS kernels' overlap; in
//! [`nonblocking`]), finalise.
//!
//! Rules this type system enforces:
//!
//! * MPI can be initialised once per process: [`Mpi::init`] succeeds once;
//! * the [`Mpi`] handle is `Send` but neither `Sync` nor `Clone`, so whoever
//!   owns it is the only thread calling into MPI at that moment: calls are
//!   always serialised;
//! * the library is never unloaded (dlclose under a live MPI is undefined).
//!
//! [`Mpi::init`] asks for `MPI_THREAD_SINGLE`, as `MPI_Init` and the usual
//! benchmarks do (Open MPI 4 locks its fast path for any higher level, and
//! a measurement must not pay for that): keep the handle on the thread that
//! initialised MPI, as wulf does. [`Mpi::init_thread`] asks for another
//! level, for code that must call MPI from several threads in turn.
//!
//! Every blocking call bumps a progress counter on entry and on exit (plain
//! relaxed stores, no locked instruction): [`call_progress`] is odd while a
//! call is in progress, so a watchdog thread can tell a hung MPI call from
//! an idle process without touching the hot path.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_longlong};
use std::io;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use super::loader::ADAPTER_ABI;
use super::loader::{load, Api};

mod collective;
pub mod nonblocking;
pub use collective::{MpiValue, ReduceOp};

/// Set once MPI_Init has been attempted in this process.
static INITIALISED: AtomicBool = AtomicBool::new(false);
/// Entries plus exits of blocking calls (odd: a call is in progress).
static PROGRESS: AtomicU64 = AtomicU64::new(0);

/// Entries plus exits of blocking MPI calls so far: odd while a call is in
/// progress. A watchdog that sees the same odd value for too long knows an
/// MPI call hangs.
pub fn call_progress() -> u64 {
    PROGRESS.load(Ordering::Relaxed)
}

#[inline(always)]
fn bump() {
    // Only the owner of the (non-Sync) Mpi handle writes, so a load and a
    // store are enough: no locked read-modify-write in the hot path.
    PROGRESS.store(
        PROGRESS.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
}

/// MPI's thread support level as provided at initialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadLevel {
    /// MPI_THREAD_SINGLE (what wulf asks for).
    Single,
    /// MPI_THREAD_FUNNELED.
    Funneled,
    /// MPI_THREAD_SERIALIZED.
    Serialized,
    /// MPI_THREAD_MULTIPLE.
    Multiple,
}

impl ThreadLevel {
    /// The MPI constant's name.
    pub fn name(self) -> &'static str {
        match self {
            ThreadLevel::Single => "MPI_THREAD_SINGLE",
            ThreadLevel::Funneled => "MPI_THREAD_FUNNELED",
            ThreadLevel::Serialized => "MPI_THREAD_SERIALIZED",
            ThreadLevel::Multiple => "MPI_THREAD_MULTIPLE",
        }
    }
}

/// MPI, initialised in this process (MPI_COMM_WORLD). See the module
/// documentation for the rules it enforces.
pub struct Mpi {
    api: &'static Api,
    rank: usize,
    size: usize,
    level: ThreadLevel,
    init_thread: libc::pthread_t,
    // Send but not Sync: calls are serialised by ownership.
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Mpi {
    /// Load the adapter at `adapter` (built by `build::adapter_library`) and
    /// initialise MPI at `MPI_THREAD_SINGLE`. Works once per process; MPI
    /// cannot be re-initialised.
    pub fn init(adapter: &Path) -> Result<Mpi, String> {
        Mpi::init_thread(adapter, ThreadLevel::Single)
    }

    /// [`Mpi::init`] asking for thread support `requested`; what the
    /// library provided is [`Mpi::thread_level`].
    pub fn init_thread(adapter: &Path, requested: ThreadLevel) -> Result<Mpi, String> {
        let api = load(adapter)?;
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err("MPI is already initialised in this process".into());
        }
        let want = match requested {
            ThreadLevel::Single => 0,
            ThreadLevel::Funneled => 1,
            ThreadLevel::Serialized => 2,
            ThreadLevel::Multiple => 3,
        };
        let (mut rank, mut size, mut level) = (0, 0, 0);
        // SAFETY: the out-pointers are valid for the call.
        let rc = unsafe { (api.init)(want, &mut rank, &mut size, &mut level) };
        if rc != 0 {
            return Err(format!("MPI_Init_thread failed: {}", error_text(api, rc)));
        }
        Ok(Mpi {
            api,
            rank: rank as usize,
            size: size as usize,
            level: match level {
                3 => ThreadLevel::Multiple,
                2 => ThreadLevel::Serialized,
                1 => ThreadLevel::Funneled,
                _ => ThreadLevel::Single,
            },
            // SAFETY: pthread_self cannot fail.
            init_thread: unsafe { libc::pthread_self() },
            _not_sync: PhantomData,
        })
    }

    /// Whether the calling thread is the one that initialised MPI (where a
    /// handle of level single or funneled must be used).
    pub fn on_init_thread(&self) -> bool {
        // SAFETY: both are valid thread ids; pthread_equal only compares.
        unsafe { libc::pthread_equal(libc::pthread_self(), self.init_thread) != 0 }
    }

    /// This process's rank in MPI_COMM_WORLD.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in MPI_COMM_WORLD.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Thread support the library provided.
    pub fn thread_level(&self) -> ThreadLevel {
        self.level
    }

    /// Most messages [`Mpi::send_window`] keeps in flight.
    pub fn max_window(&self) -> u64 {
        // SAFETY: a plain C function of no arguments.
        unsafe { (self.api.max_window)() as u64 }
    }

    /// MPI_Get_library_version, trimmed.
    pub fn library_version(&self) -> String {
        let mut buf = vec![0 as c_char; 8192];
        // SAFETY: buf is writable for its length.
        let rc = unsafe { (self.api.library_version)(buf.as_mut_ptr(), buf.len() as c_int) };
        if rc != 0 {
            return format!("unknown ({})", error_text(self.api, rc));
        }
        c_text(&buf).trim().to_string()
    }

    /// MPI_Get_version as "major.minor" (the standard's version).
    pub fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: valid out-pointers.
        unsafe { (self.api.version)(&mut major, &mut minor) };
        format!("{major}.{minor}")
    }

    /// MPI_Get_processor_name.
    pub fn processor_name(&self) -> String {
        let mut buf = vec![0 as c_char; 1024];
        // SAFETY: buf is writable for its length.
        let rc = unsafe { (self.api.processor_name)(buf.as_mut_ptr(), buf.len() as c_int) };
        if rc != 0 {
            return "unknown".into();
        }
        c_text(&buf)
    }

    /// MPI_Wtime in seconds.
    pub fn wtime(&self) -> f64 {
        // SAFETY: a plain C function of no arguments.
        unsafe { (self.api.wtime)() }
    }

    /// MPI_Send of `buf` to rank `to` with `tag` (0..=32767 is always valid).
    #[inline]
    pub fn send(&self, buf: &[u8], to: usize, tag: i32) -> io::Result<()> {
        bump();
        // SAFETY: buf is readable for its length during the blocking call.
        let rc = unsafe {
            (self.api.send)(
                buf.as_ptr().cast(),
                buf.len() as c_longlong,
                to as c_int,
                tag,
            )
        };
        bump();
        self.check(rc, "MPI_Send")
    }

    /// MPI_Recv of exactly `buf.len()` bytes from rank `from` with `tag`.
    #[inline]
    pub fn recv(&self, buf: &mut [u8], from: usize, tag: i32) -> io::Result<()> {
        bump();
        // SAFETY: buf is writable for its length during the blocking call.
        let rc = unsafe {
            (self.api.recv)(
                buf.as_mut_ptr().cast(),
                buf.len() as c_longlong,
                from as c_int,
                tag,
            )
        };
        bump();
        self.check(rc, "MPI_Recv")
    }

    /// MPI_Recv of exactly `buf.len()` bytes from whichever rank sends
    /// first with `tag` (MPI_ANY_SOURCE); returns that rank.
    pub fn recv_any(&self, buf: &mut [u8], tag: i32) -> io::Result<usize> {
        let mut source: c_int = -1;
        bump();
        // SAFETY: buf is writable for its length; source is a valid
        // out-pointer.
        let rc = unsafe {
            (self.api.recv_any)(
                buf.as_mut_ptr().cast(),
                buf.len() as c_longlong,
                tag,
                &mut source,
            )
        };
        bump();
        self.check(rc, "MPI_Recv")?;
        usize::try_from(source)
            .map_err(|_| io::Error::other(format!("MPI_Recv reported source rank {source}")))
    }

    /// MPI_Sendrecv: send `out` to and receive `inp` from rank `peer` at once.
    #[inline]
    pub fn exchange(&self, out: &[u8], inp: &mut [u8], peer: usize, tag: i32) -> io::Result<()> {
        bump();
        // SAFETY: both buffers are valid for their lengths during the call
        // and cannot overlap (one is shared, the other exclusive).
        let rc = unsafe {
            (self.api.exchange)(
                out.as_ptr().cast(),
                out.len() as c_longlong,
                inp.as_mut_ptr().cast(),
                inp.len() as c_longlong,
                peer as c_int,
                tag,
            )
        };
        bump();
        self.check(rc, "MPI_Sendrecv")
    }

    /// Send `count` messages of `buf` to `to`, as windows of `window`
    /// non-blocking sends each completed before the next (osu_bw's pattern).
    #[inline]
    pub fn send_window(
        &self,
        buf: &[u8],
        count: u64,
        window: u64,
        to: usize,
        tag: i32,
    ) -> io::Result<()> {
        bump();
        // SAFETY: buf is readable for its length until the call returns,
        // by which time every send has completed.
        let rc = unsafe {
            (self.api.send_window)(
                buf.as_ptr().cast(),
                buf.len() as c_longlong,
                count as c_longlong,
                window as c_int,
                to as c_int,
                tag,
            )
        };
        bump();
        self.check(rc, "MPI_Isend window")
    }

    /// Receive `count` messages from `from` into `buf` (each overwriting the
    /// last), as windows of `window` receives posted ahead.
    #[inline]
    pub fn recv_window(
        &self,
        buf: &mut [u8],
        count: u64,
        window: u64,
        from: usize,
        tag: i32,
    ) -> io::Result<()> {
        bump();
        // SAFETY: buf is writable for its length until the call returns,
        // by which time every receive has completed.
        let rc = unsafe {
            (self.api.recv_window)(
                buf.as_mut_ptr().cast(),
                buf.len() as c_longlong,
                count as c_longlong,
                window as c_int,
                from as c_int,
                tag,
            )
        };
        bump();
        self.check(rc, "MPI_Irecv window")
    }

    /// Send a slice of `f64` (native byte order: ranks share an
    /// architecture). A send to this rank itself blocks until a matching
    /// receive is posted when the message is too large to buffer: keep
    /// self-messages local.
    pub fn send_f64(&self, data: &[f64], to: usize, tag: i32) -> io::Result<()> {
        self.send(bytemuck::cast_slice(data), to, tag)
    }

    /// Receive exactly `data.len()` values of `f64`; a message of another
    /// length is an error.
    pub fn recv_f64(&self, data: &mut [f64], from: usize, tag: i32) -> io::Result<()> {
        self.recv_exact(bytemuck::cast_slice_mut(data), from, tag)
    }

    /// Receive exactly `buf.len()` bytes; a message of another length is
    /// an error (MPI_Recv alone accepts a shorter one).
    pub fn recv_exact(&self, buf: &mut [u8], from: usize, tag: i32) -> io::Result<()> {
        let mut got: c_longlong = 0;
        bump();
        // SAFETY: buf is writable for its length; got is a valid out-pointer.
        let rc = unsafe {
            (self.api.recv_counted)(
                buf.as_mut_ptr().cast(),
                buf.len() as c_longlong,
                from as c_int,
                tag,
                &mut got,
            )
        };
        bump();
        self.check(rc, "MPI_Recv")?;
        check_length(got, buf.len(), from)
    }

    /// Send `data` to rank `to` and receive exactly `buf.len()` values from
    /// rank `from` at once (MPI_Sendrecv: no deadlock against a peer doing
    /// the same towards us).
    pub fn sendrecv_f64(
        &self,
        to: usize,
        data: &[f64],
        from: usize,
        buf: &mut [f64],
        tag: i32,
    ) -> io::Result<()> {
        self.sendrecv_exact(
            to,
            bytemuck::cast_slice(data),
            from,
            bytemuck::cast_slice_mut(buf),
            tag,
        )
    }

    /// [`Self::sendrecv_f64`] of bytes: `out` to `to`, exactly `inp.len()`
    /// bytes from `from`.
    pub fn sendrecv_exact(
        &self,
        to: usize,
        out: &[u8],
        from: usize,
        inp: &mut [u8],
        tag: i32,
    ) -> io::Result<()> {
        let mut got: c_longlong = 0;
        bump();
        // SAFETY: both buffers are valid for their lengths during the call
        // and cannot overlap (one shared, one exclusive borrow).
        let rc = unsafe {
            (self.api.sendrecv)(
                out.as_ptr().cast(),
                out.len() as c_longlong,
                to as c_int,
                inp.as_mut_ptr().cast(),
                inp.len() as c_longlong,
                from as c_int,
                tag,
                &mut got,
            )
        };
        bump();
        self.check(rc, "MPI_Sendrecv")?;
        check_length(got, inp.len(), from)
    }

    /// MPI_Finalize. The handle is consumed: MPI cannot be used again.
    pub fn finalize(self) -> io::Result<()> {
        bump();
        // SAFETY: a plain C function of no arguments.
        let rc = unsafe { (self.api.finalize)() };
        bump();
        self.check(rc, "MPI_Finalize")
    }

    /// MPI_Abort of every rank with `code`.
    pub fn abort(self, code: i32) -> ! {
        // SAFETY: a plain C function; it does not return in practice.
        unsafe { (self.api.abort)(code) };
        std::process::exit(code)
    }

    #[inline]
    fn check(&self, rc: c_int, what: &str) -> io::Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{what} failed: {}",
                error_text(self.api, rc)
            )))
        }
    }
}

fn check_length(got: c_longlong, want_bytes: usize, from: usize) -> io::Result<()> {
    if got as usize == want_bytes {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("rank {from} sent {got} bytes where {want_bytes} were expected"),
        ))
    }
}

fn error_text(api: &Api, rc: c_int) -> String {
    let mut buf = vec![0 as c_char; 1024];
    // SAFETY: buf is writable for its length.
    unsafe { (api.error_string)(rc, buf.as_mut_ptr(), buf.len() as c_int) };
    let text = c_text(&buf);
    if text.is_empty() {
        format!("MPI error {rc}")
    } else {
        format!("{text} (MPI error {rc})")
    }
}

fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
