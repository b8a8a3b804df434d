//! One UCP context and worker (one end of a channel): made with the
//! transport selection a site would set (`UCX_TLS`), polled to complete
//! each request within the channel's timeout, and torn down in order
//! (endpoint, worker, context) when dropped.
//!
//! Completion is polled, as MPI libraries over UCX do: `ucp_worker_progress`
//! in a loop, with the CPU's pause hint (`--wait spin`, the default),
//! `sched_yield` between polls (`yield`), or sleeping on the worker's event
//! descriptor once a poll found nothing (`block`, UCX's wake-up feature).

use std::ffi::{c_int, c_void, CString};
use std::io;
use std::time::{Duration, Instant};

use super::library::{self as ucp, Api, Handle, RequestParam, Started, Status, TagRecvInfo};
use crate::result::WaitMode;
use crate::transport::{AbortHandle, AbortPair};

/// Polls between two looks at the clock while a request is pending.
const POLLS_PER_CLOCK_READ: u32 = 256;
/// How long a cancelled or force-closed request may take to complete
/// before its memory is given up on.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// A UCP context and its one worker.
pub struct Worker {
    api: &'static Api,
    context: Handle,
    worker: Handle,
    wait: WaitMode,
    /// The worker's event descriptor (`block` only).
    efd: Option<c_int>,
    /// Ends a pending wait from another thread (a server whose client
    /// went away), looked at whenever the clock is.
    abort: AbortPair,
}

// SAFETY: the worker is created UCS_THREAD_MODE_SERIALIZED: any thread may
// use it, one at a time, which `&mut self` on every call guarantees.
unsafe impl Send for Worker {}

fn check(api: &Api, what: &str, status: Status) -> io::Result<()> {
    if status == ucp::UCS_OK {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{what}: {}",
            api.describe(status)
        )))
    }
}

/// A UCP configuration read from the environment with `UCX_TLS` set to
/// `tls` (None: as the environment and UCX's defaults say).
fn config(api: &Api, tls: Option<&str>) -> io::Result<Handle> {
    let mut config: Handle = std::ptr::null_mut();
    // SAFETY: NULL prefix and file mean UCX's defaults ("UCX_", no file).
    let s = unsafe { (api.config_read)(std::ptr::null(), std::ptr::null(), &mut config) };
    check(api, "ucp_config_read", s)?;
    if let Some(tls) = tls {
        let (name, value) = (CString::new("TLS").unwrap(), CString::new(tls).unwrap());
        // SAFETY: a configuration just read; two valid C strings.
        let s = unsafe { (api.config_modify)(config, name.as_ptr(), value.as_ptr()) };
        if s != ucp::UCS_OK {
            // SAFETY: releasing what config_read made.
            unsafe { (api.config_release)(config) };
            check(api, &format!("UCX_TLS={tls}"), s)?;
        }
    }
    Ok(config)
}

impl Worker {
    /// A context with tag matching (and wake-ups for `block`) over the
    /// transports `tls`, and its worker.
    pub fn new(api: &'static Api, tls: Option<&str>, wait: WaitMode) -> io::Result<Worker> {
        let config = config(api, tls)?;
        let mut features = ucp::UCP_FEATURE_TAG;
        if wait == WaitMode::Block {
            features |= ucp::UCP_FEATURE_WAKEUP;
        }
        let params = ucp::Params {
            field_mask: ucp::UCP_PARAM_FIELD_FEATURES,
            features,
            request_size: 0,
            request_init: None,
            request_cleanup: None,
            tag_sender_mask: 0,
            mt_workers_shared: 0,
            estimated_num_eps: 0,
            estimated_num_ppn: 0,
            name: std::ptr::null(),
        };
        let mut context: Handle = std::ptr::null_mut();
        // SAFETY: valid parameters and configuration; UCX copies both.
        let s = unsafe {
            (api.init_version)(
                ucp::API_MAJOR,
                ucp::API_MINOR,
                &params,
                config,
                &mut context,
            )
        };
        // SAFETY: the context no longer needs the configuration.
        unsafe { (api.config_release)(config) };
        check(api, "ucp_init", s)?;
        let mut worker = Worker {
            api,
            context,
            worker: std::ptr::null_mut(),
            wait,
            efd: None,
            abort: AbortPair::new()?,
        };
        let wparams = ucp::WorkerParams {
            field_mask: ucp::UCP_WORKER_PARAM_FIELD_THREAD_MODE,
            thread_mode: ucp::UCS_THREAD_MODE_SERIALIZED,
            cpu_mask: [0; 16],
            events: 0,
            user_data: std::ptr::null_mut(),
            event_fd: 0,
            flags: 0,
            name: std::ptr::null(),
            am_alignment: 0,
            client_id: 0,
        };
        // SAFETY: a live context and valid parameters.
        let s = unsafe { (api.worker_create)(context, &wparams, &mut worker.worker) };
        check(api, "ucp_worker_create", s)?;
        if wait == WaitMode::Block {
            let mut fd: c_int = -1;
            // SAFETY: a live worker of a context with UCP_FEATURE_WAKEUP.
            let s = unsafe { (api.worker_get_efd)(worker.worker, &mut fd) };
            check(api, "ucp_worker_get_efd", s)?;
            worker.efd = Some(fd);
        }
        Ok(worker)
    }

    /// A handle that ends this worker's pending waits with an error.
    pub fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.handle()
    }

    /// The library this worker was made with.
    pub fn api(&self) -> &'static Api {
        self.api
    }

    /// The worker's address, to hand to the other end.
    pub fn address(&self) -> io::Result<Vec<u8>> {
        let (mut p, mut len): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
        // SAFETY: a live worker; UCX allocates the address.
        let s = unsafe { (self.api.worker_get_address)(self.worker, &mut p, &mut len) };
        check(self.api, "ucp_worker_get_address", s)?;
        // SAFETY: UCX returned `len` readable bytes at `p`.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec();
        // SAFETY: releasing the address UCX just gave.
        unsafe { (self.api.worker_release_address)(self.worker, p) };
        Ok(bytes)
    }

    /// An endpoint to the worker at `address`.
    pub fn endpoint_to(&self, address: &[u8]) -> io::Result<Handle> {
        let params = ucp::EpParams {
            field_mask: ucp::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
            address: address.as_ptr() as *const c_void,
            err_mode: 0,
            err_handler: [std::ptr::null_mut(); 2],
            user_data: std::ptr::null_mut(),
            flags: 0,
            sockaddr: ucp::SockAddr {
                addr: std::ptr::null(),
                addrlen: 0,
            },
            conn_request: std::ptr::null_mut(),
            name: std::ptr::null(),
            local_sockaddr: ucp::SockAddr {
                addr: std::ptr::null(),
                addrlen: 0,
            },
        };
        let mut ep: Handle = std::ptr::null_mut();
        // SAFETY: a live worker; UCX copies what it needs of the address.
        let s = unsafe { (self.api.ep_create)(self.worker, &params, &mut ep) };
        check(self.api, "ucp_ep_create", s)?;
        Ok(ep)
    }

    /// Start sending `buf` on `ep` with `tag`.
    pub fn send(&mut self, ep: Handle, buf: &[u8], tag: u64) -> Started {
        let param = RequestParam::plain();
        // SAFETY: a live endpoint; `buf` outlives the request, which the
        // caller completes (or gives up on) before returning.
        ucp::started(unsafe {
            (self.api.tag_send_nbx)(ep, buf.as_ptr() as *const c_void, buf.len(), tag, &param)
        })
    }

    /// Start receiving a message with exactly `tag` into `buf`; its
    /// information goes to `info` when it completes.
    pub fn recv(&mut self, buf: &mut [u8], tag: u64, info: &mut TagRecvInfo) -> Started {
        // A length no message has: whatever fills `info` must overwrite it,
        // so a receive can never be judged by the one before it.
        info.length = usize::MAX;
        let mut param = RequestParam::plain();
        // Never completed at once: UCX 1.13 returns NULL for a message
        // already waiting without writing `recv_info` (seen as a stale
        // length in NAS runs, where sizes alternate), so every receive is
        // a request whose information `ucp_tag_recv_request_test` gives.
        param.op_attr_mask = ucp::UCP_OP_ATTR_FIELD_RECV_INFO | ucp::UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.recv_info = info;
        // SAFETY: a live worker; `buf` and `info` outlive the request.
        ucp::started(unsafe {
            (self.api.tag_recv_nbx)(
                self.worker,
                buf.as_mut_ptr() as *mut c_void,
                buf.len(),
                tag,
                u64::MAX,
                &param,
            )
        })
    }

    /// Complete what `started` describes by polling, at most `timeout`;
    /// for a receive, `info` gets the message's length (UCX fills the
    /// parameters' `recv_info` only when a receive completes at once). A
    /// request that does not complete in time, or whose wait is aborted,
    /// is cancelled and the error says why.
    pub fn complete(
        &mut self,
        started: Started,
        timeout: Duration,
        what: &str,
        info: Option<&mut TagRecvInfo>,
    ) -> io::Result<()> {
        let request = match started {
            Started::Done => return Ok(()),
            Started::Failed(s) => return check(self.api, what, s),
            Started::Pending(r) => r,
        };
        // The clock is read only every POLLS_PER_CLOCK_READ polls (a
        // message that completes within them costs no clock read), except
        // when a poll may sleep (`block`): then the deadline bounds each
        // sleep from the start.
        let mut deadline = (self.wait == WaitMode::Block).then(|| Instant::now() + timeout);
        let info = info.map_or(std::ptr::null_mut(), |i| i as *mut TagRecvInfo);
        let mut polls = 0u32;
        loop {
            // SAFETY: a live worker and a pending request of it; `info`,
            // when set, is the receive's information to fill.
            let progressed = unsafe { (self.api.worker_progress)(self.worker) };
            let status = unsafe {
                if info.is_null() {
                    (self.api.request_check_status)(request)
                } else {
                    (self.api.tag_recv_request_test)(request, info)
                }
            };
            if status != ucp::UCS_INPROGRESS {
                // SAFETY: a completed request, freed once.
                unsafe { (self.api.request_free)(request) };
                return check(self.api, what, status);
            }
            polls += 1;
            if polls.is_multiple_of(POLLS_PER_CLOCK_READ) {
                if let Some(e) = self.abort.stop_reason(&mut deadline, timeout, what) {
                    self.give_up(request);
                    return Err(e);
                }
            }
            if progressed == 0 {
                self.idle(deadline);
            }
        }
    }

    /// Nothing progressed: wait as `--wait` says (`block` sleeps at most
    /// until `deadline`, always set for it).
    fn idle(&self, deadline: Option<Instant>) {
        match (self.wait, self.efd) {
            (WaitMode::Spin, _) => std::hint::spin_loop(),
            (WaitMode::Yield, _) => std::thread::yield_now(),
            (WaitMode::Block, Some(fd)) => {
                // SAFETY: a live worker with wake-ups.
                if unsafe { (self.api.worker_arm)(self.worker) } != ucp::UCS_OK {
                    return; // UCS_ERR_BUSY: events to progress first.
                }
                let left = deadline.map_or(Duration::ZERO, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                let ms = left.as_millis().clamp(1, 100) as c_int;
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, ms) };
            }
            (WaitMode::Block, None) => std::thread::yield_now(),
        }
    }

    /// Give up on every pending request of `started` (after an error in a
    /// window of them): cancelled and polled to their end for a while, so
    /// that none writes into the caller's buffer once it has it back.
    pub fn abandon(&mut self, started: &[Started]) {
        for s in started {
            if let Started::Pending(r) = *s {
                self.give_up(r);
            }
        }
    }

    /// A request that timed out: cancel it (receives) and poll it to its
    /// end for a while, so that UCX no longer writes into the caller's
    /// buffer once the caller has it back.
    fn give_up(&mut self, request: *mut c_void) {
        // SAFETY: a live worker and its pending request.
        unsafe { (self.api.request_cancel)(self.worker, request) };
        let until = Instant::now() + CANCEL_GRACE;
        while Instant::now() < until {
            // SAFETY: as above.
            unsafe { (self.api.worker_progress)(self.worker) };
            if unsafe { (self.api.request_check_status)(request) } != ucp::UCS_INPROGRESS {
                break;
            }
        }
        // SAFETY: freed once; a request still pending (a send to a peer
        // that vanished) is released by UCX when it ends.
        unsafe { (self.api.request_free)(request) };
    }

    /// Close `ep`, without waiting on a peer that may be gone.
    pub fn close(&mut self, ep: Handle) {
        let mut param = RequestParam::plain();
        param.op_attr_mask = ucp::UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = ucp::UCP_EP_CLOSE_FLAG_FORCE;
        // SAFETY: a live endpoint, closed once.
        let started = ucp::started(unsafe { (self.api.ep_close_nbx)(ep, &param) });
        let _ = self.complete(started, CANCEL_GRACE, "ucp_ep_close_nbx", None);
    }

    /// What `ucp_ep_print_info` says of `ep`: its lanes and the sizes at
    /// which its tag sends change protocol.
    pub fn describe_endpoint(&self, ep: Handle) -> String {
        print_to_string(|file| {
            // SAFETY: a live endpoint and an open stream.
            unsafe { (self.api.ep_print_info)(ep, file) }
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // SAFETY: destroyed once, worker before its context.
        unsafe {
            if !self.worker.is_null() {
                (self.api.worker_destroy)(self.worker);
            }
            (self.api.cleanup)(self.context);
        }
    }
}

/// What `print` writes to a C stream, as text.
fn print_to_string(print: impl FnOnce(*mut libc::FILE)) -> String {
    let (mut buf, mut len): (*mut libc::c_char, libc::size_t) = (std::ptr::null_mut(), 0);
    // SAFETY: open_memstream allocates and updates buf and len on fclose.
    let file = unsafe { libc::open_memstream(&mut buf, &mut len) };
    if file.is_null() {
        return String::new();
    }
    print(file);
    // SAFETY: the stream opened above, closed once; then buf holds len bytes.
    unsafe { libc::fclose(file) };
    if buf.is_null() {
        return String::new();
    }
    // SAFETY: open_memstream's buffer: len bytes, freed with free().
    let text = unsafe { std::slice::from_raw_parts(buf as *const u8, len) };
    let out = String::from_utf8_lossy(text).into_owned();
    unsafe { libc::free(buf as *mut c_void) };
    out
}

/// What UCX calls each tag-send protocol, in words.
fn protocol_words(name: &str) -> String {
    let words = match name {
        "egr/short" => "eager short (the bytes inline in one active message)",
        "egr/bcopy" => "eager copy (through a bounce buffer)",
        "egr/zcopy" => "eager zero-copy (sent from the user's buffer)",
        "egr/multi/bcopy" => "eager copy in several fragments",
        "egr/multi/zcopy" => "eager zero-copy in several fragments",
        "rndv" => "rendezvous (a handshake, then the bytes moved by get or put)",
        other => return format!("UCX protocol {other}"),
    };
    format!("{name}, {words}")
}

/// The sizes at which UCX's tag sends change protocol, from
/// `ucp_ep_print_info`'s `tag_send:` line ("0..<egr/short>..93..<egr/bcopy>
/// ..8256..<rndv>..(inf)"): each inner bound with what changes there.
pub fn thresholds_of(text: &str) -> Vec<(u64, String)> {
    let Some(line) = text
        .lines()
        .find(|l| l.trim_start_matches(['#', ' ']).starts_with("tag_send:"))
    else {
        return Vec::new();
    };
    let chain = line.split_once("tag_send:").map_or("", |(_, c)| c.trim());
    let parts: Vec<&str> = chain.split("..").collect();
    let mut out = Vec::new();
    // parts alternate: bound, <protocol>, bound, <protocol>, ..., (inf)
    for k in (2..parts.len().saturating_sub(1)).step_by(2) {
        let (Ok(bytes), Some(before), Some(after)) = (
            parts[k].parse::<u64>(),
            parts[k - 1]
                .strip_prefix('<')
                .and_then(|p| p.strip_suffix('>')),
            parts[k + 1]
                .strip_prefix('<')
                .and_then(|p| p.strip_suffix('>')),
        ) else {
            continue;
        };
        if bytes > 0 {
            out.push((
                bytes,
                format!(
                    "UCX tag sends switch from {} to {} at {bytes} B",
                    protocol_words(before),
                    protocol_words(after)
                ),
            ));
        }
    }
    out
}

/// The "transport/device" names in `ucp_ep_print_info`'s lane lines
/// ("#   lane[0]:  3:posix/memory.0 md[2] ..."), in order, without repeats.
pub fn lanes_of(text: &str) -> Vec<String> {
    let mut lanes: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| l.contains("lane[")) {
        let Some(after) = line.split("]:").nth(1) else {
            continue;
        };
        let Some(word) = after.split_whitespace().next() else {
            continue;
        };
        // "3:posix/memory.0": the resource index, then transport/device.
        let name = word.split_once(':').map_or(word, |(_, n)| n);
        let name = name.split('.').next().unwrap_or(name).to_string();
        if !lanes.contains(&name) {
            lanes.push(name);
        }
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_are_read_from_ucx_lane_lines() {
        let text = "#\n# UCP endpoint\n#\n#               peer: <no debug data>\n\
#                 lane[0]:  3:posix/memory.0 md[2]      -> md[2]/posix/sysdev[255] am am_bw#0\n\
#                 lane[1]:  5:cma/memory.0 md[4]        -> md[4]/cma/sysdev[255] rma_bw#0\n\
#                 lane[2]:  3:posix/memory.0 md[2]      -> md[2]/posix/sysdev[255] rma\n";
        assert_eq!(lanes_of(text), ["posix/memory", "cma/memory"]);
        assert!(lanes_of("no lanes here").is_empty());
    }

    #[test]
    fn protocol_switches_are_read_from_the_tag_send_line() {
        // As ucx_info -e -u t prints it (UCX 1.13, UCX_TLS=shm).
        let text =
            "#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)\n\
#            tag_send_nbr: 0..<egr/short>..93..<egr/bcopy>..262144..<rndv>..(inf)\n";
        let t = thresholds_of(text);
        assert_eq!(t.iter().map(|x| x.0).collect::<Vec<_>>(), [93, 8256]);
        assert!(
            t[1].1.contains("egr/bcopy") && t[1].1.contains("rndv, rendezvous"),
            "{t:?}"
        );
        assert!(thresholds_of("no protocols").is_empty());
        assert!(thresholds_of("# tag_send: 0..<egr/short>..(inf)").is_empty());
    }
}
