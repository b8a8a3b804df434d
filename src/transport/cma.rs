//! Cross-memory attach: single copy with process_vm_readv(2), what Open MPI
//! and MPICH use for large intra-node messages, with a small shared-memory
//! control channel beside it.
//!
//! A sender publishes the address and length of its buffer in a mailbox
//! line of the shared region (release store of a sequence number) and waits
//! for the receiver's acknowledgement; the receiver copies the bytes straight
//! from the sender's address space into its own buffer with one
//! process_vm_readv, then acknowledges. One copy instead of shared memory's
//! two, for the price of a system call and page pinning per message.
//! A large message whose receiver is already waiting is copied by both ends
//! at once, half each (the sender with process_vm_writev into the buffer the
//! receiver announced): the sender would otherwise sit idle until the
//! acknowledgement. `exchange` posts its own buffer first and then serves
//! whichever of the two events comes first, so both directions progress.
//!
//! The region (same life cycle as `shm`'s, see [`shm_region`]) holds the
//! header, one doorbell per end and two mailboxes. During set-up each end
//! lets the other read its memory (PR_SET_PTRACER, for Yama's ptrace scope 1)
//! and reads a probe word of the other, so a refusal shows up as a clear
//! error before any timing.
//!
//! Availability is checked by reading this process's own memory (which
//! fails under seccomp filters and kernels without the call) and the memory
//! of a forked child (which fails under stricter ptrace policies).
//!
//! [`shm_region`]: super::shm_region

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;
use serde_json::{json, Map, Value};

use super::shm_region::{Region, HEADER_BYTES, PARAMS};
use super::wait::{Doorbell, Waiter};
use super::{ChannelOptions, Connected, Endpoint, Listener, Transport};

/// Header magic: "wulfcma1".
const MAGIC: u64 = u64::from_le_bytes(*b"wulfcma1");

/// Offsets in the region: header, the two doorbells, and one [`Mailbox`]
/// per direction.
const SERVER_BELL: usize = HEADER_BYTES;
const CLIENT_BELL: usize = HEADER_BYTES + 128;
const TO_SERVER: usize = HEADER_BYTES + 256;
const TO_CLIENT: usize = TO_SERVER + std::mem::size_of::<Mailbox>();
const REGION_BYTES: usize = TO_CLIENT + std::mem::size_of::<Mailbox>();

/// Values of the header's `ready` word during set-up.
const READY_OK: u32 = 1;
const READY_FAILED: u32 = 2;

/// Messages from this size on are copied by both ends at once when the
/// receiver is already waiting: below it, a second system call costs more
/// than half a copy saves.
pub const SPLIT_MIN_BYTES: usize = 64 << 10;

/// A buffer announced to the other end: sequence number, address, length
/// (and, for a sender's post, where the sender's own share starts).
#[repr(C, align(128))]
struct Post {
    seq: AtomicU32,
    len: AtomicU64,
    addr: AtomicU64,
    split: AtomicU64,
}

/// A sequence number alone in its cache lines.
#[repr(C, align(128))]
struct Seq {
    seq: AtomicU32,
}

/// One direction of the channel. Each block is written by one end only.
#[repr(C)]
struct Mailbox {
    /// Sender: the message to copy (the receiver reads `[0, split)`).
    post: Post,
    /// Receiver: the message is copied, the sender may reuse its buffer.
    ack: Seq,
    /// Receiver: it is waiting for message `seq` in the buffer `addr, len`.
    ready: Post,
    /// Sender: it has written `[split, len)` into the receiver's buffer.
    helped: Seq,
}

/// The CMA transport.
pub struct Cma;

impl Transport for Cma {
    fn name(&self) -> &'static str {
        "cma"
    }

    fn about(&self) -> &'static str {
        "single copy with process_vm_readv, shared-memory control (same host only)"
    }

    fn availability(&self) -> Result<(), String> {
        static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
        PROBED.get_or_init(probe).clone()?;
        // The control ring lives in /dev/shm: without it, no channel.
        Region::create(MAGIC, [0; PARAMS], 0)
            .map(drop)
            .map_err(|e| format!("{e:#}"))
    }

    fn local_only(&self) -> bool {
        true
    }

    fn claims_nic(&self) -> bool {
        false
    }

    fn listen(
        &self,
        opts: &ChannelOptions,
        _bind_ip: std::net::IpAddr,
    ) -> Result<Box<dyn Listener>> {
        let mut params = [0u32; PARAMS];
        params[0] = opts.wait.code();
        let region = Region::create(MAGIC, params, REGION_BYTES)?;
        let probe = Box::new(probe_value(std::process::id()));
        region.header().words[0].store(&*probe as *const u64 as u64, Ordering::Release);
        Ok(Box::new(CmaListener {
            region,
            abort: super::AbortPair::new()?,
            probe,
            opts: opts.clone(),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        _peer_ip: std::net::IpAddr,
    ) -> Result<Connected> {
        let name = description
            .get("name")
            .and_then(Value::as_str)
            .context("the peer sent no shared memory name")?;
        let mut region = Region::open(name, MAGIC)?;
        if region.len() != REGION_BYTES {
            bail!("shared memory {} has the wrong size", region.path());
        }
        if region.param(0) != opts.wait.code() {
            bail!("the peer set up another --wait mode than this end");
        }
        let h = region.header();
        let server = h.server_pid.load(Ordering::Relaxed);
        let probe = Box::new(probe_value(std::process::id()));
        h.words[1].store(&*probe as *const u64 as u64, Ordering::Relaxed);
        let ptracer = allow_reads_by(server);
        region.attach();
        region.unlink();
        // The peer checks that it can read us, then says so.
        let deadline = Instant::now() + opts.timeout();
        let ready = loop {
            match region.header().ready.load(Ordering::Acquire) {
                0 if Instant::now() < deadline => std::thread::sleep(Duration::from_micros(200)),
                0 => bail!("the peer did not finish setting up the cma channel"),
                r => break r,
            }
        };
        if ready != READY_OK {
            bail!(
                "the peer cannot read this process's memory with process_vm_readv (see its error)"
            );
        }
        let addr = region.header().words[0].load(Ordering::Relaxed);
        check_probe(server, addr)?;
        finish(region, probe, server, opts, false, ptracer)
    }
}

struct CmaListener {
    region: Region,
    /// Ends the wait for the client when the server's watchdog says so.
    abort: super::AbortPair,
    probe: Box<u64>,
    opts: ChannelOptions,
}

impl Listener for CmaListener {
    fn describe(&self) -> Value {
        json!({ "name": self.region.name(), "bytes": self.region.len() })
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        self.abort.handle()
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let mut region = self.region;
        let abort = self.abort;
        let client = region.wait_for_attach(timeout, &|| abort.aborted())?;
        region.unlink();
        let ptracer = allow_reads_by(client);
        let addr = region.header().words[1].load(Ordering::Relaxed);
        if let Err(e) = check_probe(client, addr) {
            region.header().ready.store(READY_FAILED, Ordering::Release);
            return Err(e);
        }
        region.header().ready.store(READY_OK, Ordering::Release);
        finish(region, self.probe, client, &self.opts, true, ptracer)
    }
}

fn finish(
    region: Region,
    probe: Box<u64>,
    peer: u32,
    opts: &ChannelOptions,
    server: bool,
    ptracer: bool,
) -> Result<Connected> {
    let base = region.base();
    let (mine, theirs, tx, rx) = if server {
        (SERVER_BELL, CLIENT_BELL, TO_CLIENT, TO_SERVER)
    } else {
        (CLIENT_BELL, SERVER_BELL, TO_SERVER, TO_CLIENT)
    };
    // SAFETY: all offsets are inside the region (REGION_BYTES, checked on
    // open), 128-byte aligned from a page-aligned base; the region lives in
    // the endpoint as long as everything pointing into it.
    let waiter = unsafe {
        Waiter::new(
            opts.wait,
            opts.timeout(),
            base.add(mine) as *const Doorbell,
            base.add(theirs) as *const Doorbell,
        )
    };
    let abort = super::AbortPair::new()?;
    // SAFETY: the watch end lives in the endpoint with the waiter.
    let waiter = unsafe { waiter.with_abort(abort.watch_fd().as_raw_fd()) };
    let mut settings = Map::new();
    settings.insert("region".into(), json!(region.path()));
    settings.insert("unlinked_once_mapped".into(), json!(true));
    settings.insert(
        "copy".into(),
        json!("process_vm_readv by the receiver; from split_min_bytes on, when the receiver waits, the sender writes half with process_vm_writev"),
    );
    settings.insert("split_min_bytes".into(), json!(SPLIT_MIN_BYTES));
    settings.insert("ptracer_set".into(), json!(ptracer));
    settings.insert("wait".into(), json!(opts.wait.name()));
    // process_vm_readv pins the remote buffer page by page: one more page
    // spanned costs one more pin (bench/cma_page_probe.sh measures it).
    let page = crate::sys::page_bytes();
    settings.insert("page_bytes".into(), json!(page));
    settings.insert(
        crate::result::THRESHOLDS_KEY.into(),
        json!([
            crate::result::threshold_entry(
                SPLIT_MIN_BYTES as u64,
                &format!("cma split threshold ({SPLIT_MIN_BYTES} B): from here the sender writes half with process_vm_writev while the receiver reads"),
                false,
            ),
            crate::result::threshold_entry(
                page,
                &format!("cma page ({page} B): a message spanning one more page costs one more page pinned and copied by process_vm_readv"),
                true,
            ),
        ]),
    );
    Ok(Connected {
        endpoint: Box::new(CmaEndpoint {
            peer: Pid::from_raw(peer as i32),
            waiter,
            tx: base.wrapping_add(tx) as *const Mailbox,
            rx: base.wrapping_add(rx) as *const Mailbox,
            sent: 0,
            received: 0,
            abort,
            _probe: probe,
            _region: region,
        }),
        settings,
        warnings: Vec::new(),
    })
}

/// One end of a CMA channel.
///
/// A plain send and receive: the receiver announces its buffer (`ready`)
/// and waits; the sender posts its own. A message of at least
/// [`SPLIT_MIN_BYTES`] whose receiver is already waiting is copied by both
/// ends at once: the receiver reads the first half with process_vm_readv
/// while the sender writes the second half into the receiver's buffer with
/// process_vm_writev, so two cores share the one copy. Otherwise (smaller
/// messages, or the receiver not there yet, or `exchange`, where both ends
/// are busy reading) the receiver reads it all.
struct CmaEndpoint {
    peer: Pid,
    waiter: Waiter,
    /// The mailbox of messages this end sends.
    tx: *const Mailbox,
    /// The mailbox of messages this end receives.
    rx: *const Mailbox,
    sent: u32,
    received: u32,
    /// Ends the waiter's waits when the server's watchdog says so.
    abort: super::AbortPair,
    _probe: Box<u64>,
    // Last: the mapping outlives the pointers into it.
    _region: Region,
}

// SAFETY: the raw pointers point into the region the endpoint owns.
unsafe impl Send for CmaEndpoint {}

impl CmaEndpoint {
    #[inline(always)]
    fn tx(&self) -> &Mailbox {
        // SAFETY: a mailbox inside the region the endpoint owns.
        unsafe { &*self.tx }
    }

    #[inline(always)]
    fn rx(&self) -> &Mailbox {
        // SAFETY: as for `tx`.
        unsafe { &*self.rx }
    }

    /// Post `buf` as the next message; when the receiver already waits for
    /// it with a buffer of the right size, and it is large, take the second
    /// half for this end to write. Returns where this end's share starts
    /// (`buf.len()`: none) and the receiver's buffer address.
    #[inline(always)]
    fn offer(&mut self, buf: &[u8], may_help: bool) -> (usize, usize) {
        self.sent = self.sent.wrapping_add(1);
        let len = buf.len();
        let mut split = len;
        let mut remote = 0;
        let tx = self.tx();
        if may_help
            && len >= SPLIT_MIN_BYTES
            && tx.ready.seq.load(Ordering::Acquire) == self.sent
            && tx.ready.len.load(Ordering::Relaxed) == len as u64
        {
            // Page-aligned halves: fewer pages for each end to pin.
            split = (len / 2) & !4095;
            remote = tx.ready.addr.load(Ordering::Relaxed) as usize;
        }
        let p = &tx.post;
        p.addr.store(buf.as_ptr() as u64, Ordering::Relaxed);
        p.len.store(len as u64, Ordering::Relaxed);
        p.split.store(split as u64, Ordering::Relaxed);
        p.seq.store(self.sent, Ordering::Release);
        self.waiter.notify();
        (split, remote)
    }

    #[inline(always)]
    fn offer_taken(&self) -> bool {
        self.tx().ack.seq.load(Ordering::Acquire) == self.sent
    }

    #[inline(always)]
    fn incoming(&self) -> bool {
        self.rx().post.seq.load(Ordering::Acquire) == self.received.wrapping_add(1)
    }

    /// Tell the sender of the next message where it may write it.
    #[inline(always)]
    fn announce(&self, buf: &mut [u8]) {
        let r = &self.rx().ready;
        r.addr.store(buf.as_mut_ptr() as u64, Ordering::Relaxed);
        r.len.store(buf.len() as u64, Ordering::Relaxed);
        r.seq
            .store(self.received.wrapping_add(1), Ordering::Release);
    }

    /// Copy the receiver's share of the posted message into `buf`; the
    /// caller has seen [`incoming`](Self::incoming). Returns where the
    /// sender's share starts (`buf.len()`: none).
    fn take(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let p = &self.rx().post;
        let len = p.len.load(Ordering::Relaxed) as usize;
        let addr = p.addr.load(Ordering::Relaxed) as usize;
        let split = p.split.load(Ordering::Relaxed) as usize;
        if len != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the peer sent a {len}-byte message where {} bytes were expected",
                    buf.len()
                ),
            ));
        }
        if split > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer posted an invalid split",
            ));
        }
        read_remote(self.peer, addr, &mut buf[..split])?;
        Ok(split)
    }

    /// Acknowledge the message just received.
    #[inline(always)]
    fn acknowledge(&mut self) {
        self.received = self.received.wrapping_add(1);
        self.rx().ack.seq.store(self.received, Ordering::Release);
        self.waiter.notify();
    }
}

impl Endpoint for CmaEndpoint {
    fn abort_handle(&self) -> Option<super::AbortHandle> {
        self.abort.handle()
    }

    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        let (split, remote) = self.offer(buf, true);
        if split < buf.len() {
            write_remote(self.peer, remote + split, &buf[split..])?;
            self.tx().helped.seq.store(self.sent, Ordering::Release);
            self.waiter.notify();
        }
        let w = self.waiter;
        // The buffer must stay untouched until the peer has copied it.
        w.wait(|| Ok(self.offer_taken()))
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.announce(buf);
        let w = self.waiter;
        w.wait(|| Ok(self.incoming()))?;
        let split = self.take(buf)?;
        if split < buf.len() {
            let n = self.received.wrapping_add(1);
            w.wait(|| Ok(self.rx().helped.seq.load(Ordering::Acquire) == n))?;
        }
        self.acknowledge();
        Ok(())
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        // Both ends are busy reading: no help offered or taken.
        self.offer(out, false);
        let w = self.waiter;
        let mut got = false;
        w.wait(|| {
            if !got && self.incoming() {
                if self.take(inp)? != inp.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the peer split a message of an exchange",
                    ));
                }
                self.acknowledge();
                got = true;
            }
            Ok(got && self.offer_taken())
        })
    }
}

/// Copy `buf` to `addr` in process `pid`.
fn write_remote(pid: Pid, addr: usize, buf: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let remote = [RemoteIoVec {
            base: addr + done,
            len: buf.len() - done,
        }];
        let local = [IoSlice::new(&buf[done..])];
        match process_vm_writev(pid, &local, &remote) {
            Ok(0) => return Err(io::Error::other("process_vm_writev made no progress")),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(explain(e, pid)),
        }
    }
    Ok(())
}

/// Copy `buf.len()` bytes at `addr` in process `pid` into `buf`.
fn read_remote(pid: Pid, addr: usize, buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let remote = [RemoteIoVec {
            base: addr + done,
            len: buf.len() - done,
        }];
        let mut local = [IoSliceMut::new(&mut buf[done..])];
        match process_vm_readv(pid, &mut local, &remote) {
            Ok(0) => return Err(io::Error::other("process_vm_readv made no progress")),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(explain(e, pid)),
        }
    }
    Ok(())
}

/// A CMA error in words.
fn explain(e: Errno, pid: Pid) -> io::Error {
    let why = match e {
        Errno::ESRCH => "the peer process is gone".to_string(),
        Errno::EPERM => format!(
            "not permitted to read the memory of process {pid}{}",
            ptrace_scope_note()
        ),
        Errno::ENOSYS => "this kernel has no process_vm_readv".into(),
        Errno::EFAULT => "the peer posted an invalid buffer address".into(),
        other => other.desc().to_string(),
    };
    io::Error::other(format!("process_vm_readv failed: {e}: {why}"))
}

/// Yama's ptrace scope, when it may explain a refusal.
fn ptrace_scope_note() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        Ok(s) if s.trim() != "0" => {
            format!(" (kernel.yama.ptrace_scope is {}; 0 allows it)", s.trim())
        }
        _ => " (a container or security policy forbids it)".into(),
    }
}

/// The probe word of process `pid`: distinct per process, so reading the
/// wrong process or address is caught.
fn probe_value(pid: u32) -> u64 {
    MAGIC ^ (pid as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Read the peer's probe word at `addr` and check it.
fn check_probe(pid: u32, addr: u64) -> Result<()> {
    let mut v = [0u8; 8];
    read_remote(Pid::from_raw(pid as i32), addr as usize, &mut v)
        .with_context(|| format!("cannot read the memory of the peer process {pid}"))?;
    if u64::from_ne_bytes(v) != probe_value(pid) {
        bail!("reading the peer process {pid} returned the wrong data");
    }
    Ok(())
}

/// Let process `pid` read this one's memory where Yama's ptrace scope 1
/// would forbid it (PR_SET_PTRACER); false when there is no Yama.
fn allow_reads_by(pid: u32) -> bool {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, pid as libc::c_ulong, 0, 0, 0) == 0 }
}

#[path = "cma_probe.rs"]
mod availability;
use availability::probe;

#[cfg(test)]
#[path = "cma_tests.rs"]
mod tests;
