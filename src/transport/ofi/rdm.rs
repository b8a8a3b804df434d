//! One reliable-datagram endpoint (FI_EP_RDM) of one provider, with what it
//! needs (fabric, domain, completion queue, address vector), opened as
//! fi_pingpong opens its RDM endpoints and closed in reverse order.
//!
//! Every operation is posted with a context of its own ([`SLOTS`] of them,
//! enough for a stream window of sends and receives) and completes on the
//! one completion queue, polled (`--wait spin`, `yield`) or slept on with
//! `fi_cq_sread` (`block`). Completions are counted as they are read, also
//! while a post waits for room in a full queue, so a window's sends and
//! receives may complete in any order.

use std::ffi::{c_void, CString};
use std::io;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::info::{hints, Chosen};
use super::library::{self as fi, Api, Context2, CqEntry};
use crate::result::WaitMode;
use crate::transport::{AbortHandle, AbortPair};

/// Contexts for operations in flight at once.
pub const SLOTS: usize = 2 * super::STREAM_WINDOW + 2;
/// Polls between two looks at the clock while operations are pending.
const POLLS_PER_CLOCK_READ: u32 = 256;
/// Completions read per `fi_cq_read`.
const ENTRIES_PER_READ: usize = 16;
/// How long cancelled operations may take to complete before the
/// endpoint is closed under them.
const CANCEL_GRACE: Duration = Duration::from_secs(1);
/// The longest single sleep in `fi_cq_sread` (`block`), so that an abort
/// is seen within it.
const LONGEST_SLEEP_MS: u128 = 100;
/// An expected length that any receive has (the hello's).
const ANY_LENGTH: usize = usize::MAX;

/// Counts of completions read since the last [`RdmEndpoint::wait`].
#[derive(Default)]
struct Completed {
    sends: usize,
    recvs: usize,
    /// The length of the first receive whose length was not the one
    /// expected.
    wrong_length: Option<usize>,
}

/// An open FI_EP_RDM endpoint and the objects it is bound to.
pub struct RdmEndpoint {
    api: &'static Api,
    info: *mut fi::Info,
    fabric: *mut fi::Fabric,
    domain: *mut fi::Domain,
    cq: *mut fi::Cq,
    av: *mut fi::Av,
    ep: *mut fi::Ep,
    /// Whether `fi_cq_sread` may sleep on the queue (`block`).
    sleeps: bool,
    wait: WaitMode,
    /// One context per operation in flight (boxed: the provider keeps
    /// their addresses until each completes).
    contexts: Box<[Context2; SLOTS]>,
    /// Slots posted since the last wait (all pending until it returns).
    posted: usize,
    /// The length every receive in flight must have ([`ANY_LENGTH`]:
    /// any).
    expected_len: usize,
    /// The length of the last receive completed.
    last_recv_len: usize,
    done: Completed,
    abort: AbortPair,
}

// SAFETY: every object belongs to this value alone and is used only
// through `&mut self` (libfabric's default threading, FI_THREAD_SAFE or
// domain, allows one thread at a time from any thread).
unsafe impl Send for RdmEndpoint {}

/// A libfabric return as an error when negative.
fn check(api: &Api, what: &str, ret: isize) -> io::Result<()> {
    if ret >= 0 {
        Ok(())
    } else {
        Err(io::Error::other(format!("{what}: {}", api.describe(ret))))
    }
}

impl RdmEndpoint {
    /// The first RDM endpoint `provider` offers, bound to `source` where
    /// given (a provider over IP listens there), enabled.
    pub fn open(
        api: &'static Api,
        provider: &str,
        source: Option<IpAddr>,
        wait: WaitMode,
    ) -> io::Result<RdmEndpoint> {
        let hints = hints(api, provider)?;
        let node = source.map(|ip| CString::new(ip.to_string()).expect("no NUL in an address"));
        let (node_ptr, flags) = match &node {
            Some(n) => (n.as_ptr(), fi::FI_SOURCE),
            None => (std::ptr::null(), 0),
        };
        let mut info: *mut fi::Info = std::ptr::null_mut();
        // SAFETY: valid hints; libfabric allocates the answer.
        let ret = unsafe {
            (api.getinfo)(
                api.api_version(),
                node_ptr,
                std::ptr::null(),
                flags,
                hints,
                &mut info,
            )
        };
        // SAFETY: the hints, freed once.
        unsafe { (api.freeinfo)(hints) };
        check(
            api,
            &format!("fi_getinfo (provider {provider}, FI_EP_RDM, FI_TAGGED)"),
            ret as isize,
        )?;
        let mut end = RdmEndpoint {
            api,
            info,
            fabric: std::ptr::null_mut(),
            domain: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            av: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
            sleeps: false,
            wait,
            contexts: Box::new([Context2::EMPTY; SLOTS]),
            posted: 0,
            expected_len: 0,
            last_recv_len: 0,
            done: Completed::default(),
            abort: AbortPair::new()?,
        };
        end.open_objects()?;
        Ok(end)
    }

    /// Fabric, domain, completion queue, address vector and endpoint,
    /// bound and enabled.
    fn open_objects(&mut self) -> io::Result<()> {
        let api = self.api;
        let null = std::ptr::null_mut::<c_void>();
        // SAFETY: each call is the header's inline wrapper written out:
        // the object's own ops table, on objects opened just before.
        unsafe {
            let info = self.info;
            check(
                api,
                "fi_fabric",
                (api.fabric)((*info).fabric_attr, &mut self.fabric, null) as isize,
            )?;
            let f = self.fabric;
            check(
                api,
                "fi_domain",
                ((*(*f).ops).domain)(f, info, &mut self.domain, null) as isize,
            )?;
            let d = self.domain;
            let mut cq_attr = fi::CqAttr {
                size: 0,
                flags: 0,
                format: fi::FI_CQ_FORMAT_TAGGED,
                wait_obj: fi::FI_WAIT_NONE,
                signaling_vector: 0,
                wait_cond: 0,
                wait_set: null,
            };
            if self.wait == WaitMode::Block {
                cq_attr.wait_obj = fi::FI_WAIT_UNSPEC;
                let ret = ((*(*d).ops).cq_open)(d, &mut cq_attr, &mut self.cq, null);
                // A provider without wait objects is polled with yields.
                self.sleeps = ret == 0;
                cq_attr.wait_obj = fi::FI_WAIT_NONE;
            }
            if self.cq.is_null() {
                check(
                    api,
                    "fi_cq_open",
                    ((*(*d).ops).cq_open)(d, &mut cq_attr, &mut self.cq, null) as isize,
                )?;
            }
            let mut av_attr = fi::AvAttr {
                av_type: 0,
                rx_ctx_bits: 0,
                count: 2,
                ep_per_node: 0,
                name: std::ptr::null(),
                map_addr: null,
                flags: 0,
            };
            check(
                api,
                "fi_av_open",
                ((*(*d).ops).av_open)(d, &mut av_attr, &mut self.av, null) as isize,
            )?;
            check(
                api,
                "fi_endpoint",
                ((*(*d).ops).endpoint)(d, info, &mut self.ep, null) as isize,
            )?;
            let ep = self.ep.cast::<fi::Fid>();
            let ops = &*(*ep).ops;
            let cq_flags = fi::FI_SEND | fi::FI_RECV;
            check(
                api,
                "fi_ep_bind (cq)",
                (ops.bind)(ep, self.cq.cast(), cq_flags) as isize,
            )?;
            check(
                api,
                "fi_ep_bind (av)",
                (ops.bind)(ep, self.av.cast(), 0) as isize,
            )?;
            check(
                api,
                "fi_enable",
                (ops.control)(ep, fi::FI_ENABLE, null) as isize,
            )?;
        }
        Ok(())
    }

    /// What libfabric chose.
    pub fn chosen(&self) -> Chosen {
        // SAFETY: the info fi_getinfo returned, alive until drop.
        unsafe { Chosen::of(self.api, &*self.info) }
    }

    /// Whether a wait sleeps in `fi_cq_sread` (`--wait block` where the
    /// provider has wait objects).
    pub fn sleeps(&self) -> bool {
        self.sleeps
    }

    /// A handle that ends this endpoint's pending waits with an error.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.handle()
    }

    /// This endpoint's address, to hand to the other end.
    pub fn name(&self) -> io::Result<Vec<u8>> {
        let mut bytes = vec![0u8; 256];
        let mut len = bytes.len();
        let ep = self.ep.cast::<fi::Fid>();
        // SAFETY: an enabled endpoint; the buffer holds `len` bytes.
        let ret = unsafe { ((*(*self.ep).cm).getname)(ep, bytes.as_mut_ptr().cast(), &mut len) };
        check(self.api, "fi_getname", ret as isize)?;
        bytes.truncate(len);
        Ok(bytes)
    }

    /// The other end's address in this endpoint's address vector.
    pub fn insert(&mut self, address: &[u8]) -> io::Result<u64> {
        let mut fi_addr = fi::FI_ADDR_UNSPEC;
        // SAFETY: an open address vector; one address of the provider's
        // format (the peer's `fi_getname`).
        let ret = unsafe {
            ((*(*self.av).ops).insert)(
                self.av,
                address.as_ptr().cast(),
                1,
                &mut fi_addr,
                0,
                std::ptr::null_mut(),
            )
        };
        if ret != 1 {
            return Err(io::Error::other(format!(
                "fi_av_insert of the peer's address: {}",
                if ret < 0 {
                    self.api.describe(ret as isize)
                } else {
                    "not inserted".into()
                }
            )));
        }
        Ok(fi_addr)
    }

    /// The next operation's context.
    fn next_context(&mut self) -> *mut c_void {
        let slot = &mut self.contexts[self.posted % SLOTS];
        self.posted += 1;
        (slot as *mut Context2).cast()
    }

    /// Post a tagged send of `buf` to `to`; a full queue is progressed
    /// until it takes it (within `timeout`).
    pub fn post_send(
        &mut self,
        buf: &[u8],
        to: u64,
        tag: u64,
        timeout: Duration,
    ) -> io::Result<()> {
        let context = self.next_context();
        let mut deadline = None;
        loop {
            // SAFETY: an enabled endpoint; `buf` outlives the operation,
            // which the caller waits for before returning.
            let ret = unsafe {
                ((*(*self.ep).tagged).send)(
                    self.ep,
                    buf.as_ptr().cast(),
                    buf.len(),
                    std::ptr::null_mut(),
                    to,
                    tag,
                    context,
                )
            };
            if ret != -fi::FI_EAGAIN {
                return check(self.api, "fi_tsend", ret);
            }
            self.progress_or_time_out(&mut deadline, timeout, "fi_tsend (a full queue)")?;
        }
    }

    /// Post a tagged receive of exactly `tag` into `buf`; every receive in
    /// flight must bring `buf.len()` bytes.
    pub fn post_recv(&mut self, buf: &mut [u8], tag: u64, timeout: Duration) -> io::Result<()> {
        self.expected_len = buf.len();
        self.post_recv_into(buf, tag, timeout)
    }

    /// Post a tagged receive of at most `buf.len()` bytes, of any length
    /// ([`RdmEndpoint::last_recv_len`] says which).
    pub fn post_recv_any(&mut self, buf: &mut [u8], tag: u64, timeout: Duration) -> io::Result<()> {
        self.expected_len = ANY_LENGTH;
        self.post_recv_into(buf, tag, timeout)
    }

    /// The length of the last receive completed.
    pub fn last_recv_len(&self) -> usize {
        self.last_recv_len
    }

    fn post_recv_into(&mut self, buf: &mut [u8], tag: u64, timeout: Duration) -> io::Result<()> {
        let context = self.next_context();
        let mut deadline = None;
        loop {
            // SAFETY: as in post_send; the receive writes into `buf`.
            let ret = unsafe {
                ((*(*self.ep).tagged).recv)(
                    self.ep,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    std::ptr::null_mut(),
                    fi::FI_ADDR_UNSPEC,
                    tag,
                    0,
                    context,
                )
            };
            if ret != -fi::FI_EAGAIN {
                return check(self.api, "fi_trecv", ret);
            }
            self.progress_or_time_out(&mut deadline, timeout, "fi_trecv (a full queue)")?;
        }
    }

    /// A full queue: read completions once, failing past the deadline.
    fn progress_or_time_out(
        &mut self,
        deadline: &mut Option<Instant>,
        timeout: Duration,
        what: &str,
    ) -> io::Result<()> {
        self.read_completions()?;
        let now = Instant::now();
        if now >= *deadline.get_or_insert(now + timeout) {
            self.give_up();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{what}: no room within {timeout:?}"),
            ));
        }
        Ok(())
    }

    /// Wait until `sends` sends and `recvs` receives posted since the last
    /// wait have completed, at most `timeout`. A receive of another
    /// length than posted fails.
    pub fn wait(
        &mut self,
        sends: usize,
        recvs: usize,
        timeout: Duration,
        what: &str,
    ) -> io::Result<()> {
        let mut deadline = self.sleeps.then(|| Instant::now() + timeout);
        let mut polls = 0u32;
        while self.done.sends < sends || self.done.recvs < recvs {
            let got = match self.read_completions() {
                Ok(n) => n,
                Err(e) => {
                    self.give_up();
                    return Err(e);
                }
            };
            polls += 1;
            if polls.is_multiple_of(POLLS_PER_CLOCK_READ) || self.sleeps {
                if let Some(e) = self.abort.stop_reason(&mut deadline, timeout, what) {
                    self.give_up();
                    return Err(e);
                }
            }
            if got == 0 {
                self.idle(deadline)?;
            }
        }
        let wrong = self.done.wrong_length.take();
        self.done = Completed::default();
        self.posted = 0;
        match wrong {
            Some(got) => Err(io::Error::other(format!(
                "received {got} bytes where {} were expected",
                self.expected_len
            ))),
            None => Ok(()),
        }
    }

    /// Nothing completed: wait as `--wait` says.
    fn idle(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        match self.wait {
            WaitMode::Spin => std::hint::spin_loop(),
            WaitMode::Yield => std::thread::yield_now(),
            WaitMode::Block if !self.sleeps => std::thread::yield_now(),
            WaitMode::Block => {
                let left = deadline.map_or(Duration::ZERO, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                let ms = left.as_millis().clamp(1, LONGEST_SLEEP_MS) as i32;
                let mut entries = [CqEntry::EMPTY; ENTRIES_PER_READ];
                // SAFETY: an open queue with a wait object; room for the entries.
                let n = unsafe {
                    ((*(*self.cq).ops).sread)(
                        self.cq,
                        entries.as_mut_ptr().cast(),
                        entries.len(),
                        std::ptr::null(),
                        ms,
                    )
                };
                self.count(&entries, n)?;
            }
        }
        Ok(())
    }

    /// Read what completed (and progress the provider); the number read.
    fn read_completions(&mut self) -> io::Result<usize> {
        let mut entries = [CqEntry::EMPTY; ENTRIES_PER_READ];
        // SAFETY: an open queue of tagged entries; room for them.
        let n = unsafe {
            ((*(*self.cq).ops).read)(self.cq, entries.as_mut_ptr().cast(), entries.len())
        };
        self.count(&entries, n)
    }

    /// Count `n` entries read (or handle the read's error).
    fn count(&mut self, entries: &[CqEntry], n: isize) -> io::Result<usize> {
        if n == -fi::FI_EAGAIN || n == -(libc::ETIMEDOUT as isize) {
            return Ok(0);
        }
        if n == -fi::FI_EAVAIL {
            return Err(self.error_entry());
        }
        check(self.api, "fi_cq_read", n)?;
        for e in &entries[..n as usize] {
            if e.flags & fi::FI_RECV != 0 {
                self.done.recvs += 1;
                self.last_recv_len = e.len;
                let wrong = self.expected_len != ANY_LENGTH && e.len != self.expected_len;
                if wrong && self.done.wrong_length.is_none() {
                    self.done.wrong_length = Some(e.len);
                }
            } else {
                self.done.sends += 1;
            }
        }
        Ok(n as usize)
    }

    /// The error entry waiting on the queue, in libfabric's and the
    /// provider's words.
    fn error_entry(&mut self) -> io::Error {
        // SAFETY: an all-zero entry is valid (null pointers, no data).
        let mut e: fi::CqErrEntry = unsafe { std::mem::zeroed() };
        // SAFETY: an open queue with an error waiting; err_data_size 0.
        let ret = unsafe { ((*(*self.cq).ops).readerr)(self.cq, &mut e, 0) };
        if ret < 0 {
            return io::Error::other(format!("fi_cq_readerr: {}", self.api.describe(ret)));
        }
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: the provider's words for its own error, into `buf`,
        // returned as NULL or a NUL-terminated string.
        let provider = unsafe {
            fi::text(((*(*self.cq).ops).strerror)(
                self.cq,
                e.prov_errno,
                e.err_data,
                buf.as_mut_ptr(),
                buf.len(),
            ))
        };
        let op = if e.flags & fi::FI_RECV != 0 {
            "a receive"
        } else {
            "a send"
        };
        io::Error::other(format!(
            "{op} failed: {} (provider: {provider}){}",
            self.api.describe(e.err as isize),
            if e.olen > 0 {
                format!(", {} bytes too many", e.olen)
            } else {
                String::new()
            }
        ))
    }

    /// Operations that will not complete: cancel each and read the queue
    /// for a while, so that none writes into a buffer the caller has back.
    fn give_up(&mut self) {
        let ep = self.ep.cast::<fi::Fid>();
        for k in 0..self.posted.min(SLOTS) {
            let context = (&mut self.contexts[k] as *mut Context2).cast();
            // SAFETY: an enabled endpoint; a context it was given.
            unsafe { ((*(*self.ep).ops).cancel)(ep, context) };
        }
        let mut outstanding = self
            .posted
            .saturating_sub(self.done.sends + self.done.recvs);
        let until = Instant::now() + CANCEL_GRACE;
        while outstanding > 0 && Instant::now() < until {
            // An error entry (the cancellation itself) ends one operation.
            let ended = self.read_completions().unwrap_or(1);
            outstanding = outstanding.saturating_sub(ended);
        }
        self.posted = 0;
        self.done = Completed::default();
    }
}

impl Drop for RdmEndpoint {
    fn drop(&mut self) {
        let objects: [*mut fi::Fid; 5] = [
            self.ep.cast(),
            self.av.cast(),
            self.cq.cast(),
            self.domain.cast(),
            self.fabric.cast(),
        ];
        for fid in objects.into_iter().filter(|f| !f.is_null()) {
            // SAFETY: each object opened above, closed once, endpoint first.
            unsafe { ((*(*fid).ops).close)(fid) };
        }
        // SAFETY: fi_getinfo's answer, freed once.
        unsafe { (self.api.freeinfo)(self.info) };
    }
}
