//! PVM (Parallel Virtual Machine 3.4), measured through PVM's own library:
//! libpvm3 loaded at run time ([`library`]), a pvmd3 daemon started and
//! halted by wulf for each channel ([`daemon`]).
//!
//! Four transports, as Nguyen 2001 and NetPIPE's PVM module compared them:
//! - `pvm`: pvm_initsend(PvmDataRaw), pvm_pkbyte, pvm_send with the routing
//!   policy PvmRouteDirect (a direct task-to-task TCP link), pvm_recv and
//!   pvm_upkbyte: PVM's usual fast path (each message copied into PVM's
//!   buffer as it is packed);
//! - `pvm(daemon)`: the same with PvmDontRoute: every message goes through
//!   the pvmd (task to daemon, daemon to task);
//! - `pvm(xdr)`: direct route, PvmDataDefault (XDR-encoded packing);
//! - `pvm(inplace)`: direct route, PvmDataInPlace (sent from the caller's
//!   buffer, no copy at pack time), as NetPIPE's PVM module packs; measured
//!   when named.
//!
//! The listening side (the peer, `wulf serve`) starts the daemon in a
//! private directory and enrolls; its description names the daemon's
//! socket and its task id. The measuring side enrolls with a daemon of the
//! same virtual machine: on the same host the listener's own; across the
//! nodes of a lab, one the listener's daemon started on the measuring
//! side's node through the lab's remote shell ([`remote`]) when it learnt
//! that side's address. It sends a hello and waits for its answer, so the
//! direct link is open before any timing. Each message is one PVM message;
//! receives wait at most the channel's timeout (pvm_trecv). PVM's library
//! allocates its message buffers itself inside pvm_initsend and pvm_recv:
//! that cost is part of what is measured, as it is of every PVM program.
//! Across real hosts (not lab nodes) wulf does not start pvmds: the
//! channel fails saying so.
//!
//! One channel per process at a time: PVM enrolls a whole process, and
//! finds its daemon through the environment (`PVMSOCK`, the socket the
//! daemon announced), set here just before enrolling: the one place wulf
//! sets its own environment (ARCHITECTURE.md, "No process globals").

pub mod daemon;
pub mod library;
mod message;
pub mod remote;

use std::ffi::{c_char, c_int};
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

use self::daemon::Daemon;
use self::library::Api;
use self::message::{receive, send_bytes};
use super::{AbortHandle, AbortPair, ChannelOptions, Connected, Endpoint, Listener, Transport};

/// Tag of every message (the hello and its answer included: one of
/// each precedes the data, in order).
const DATA_TAG: c_int = 1;

/// The private directory this process is enrolled under, if any.
static ENROLLED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// One of the four PVM variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pvm {
    name: &'static str,
    /// PvmRouteDirect (true) or PvmDontRoute (false).
    direct: bool,
    /// PvmDataRaw (true) or PvmDataDefault, XDR (false).
    raw: bool,
    /// PvmDataInPlace: raw bytes sent from the caller's buffer, not
    /// copied into PVM's at pack time (with `raw`).
    in_place: bool,
}

impl Pvm {
    /// Direct route, raw data: PVM's fast path.
    pub const DIRECT: Pvm = Pvm {
        name: "pvm",
        direct: true,
        raw: true,
        in_place: false,
    };
    /// Routed through the pvmd, raw data.
    pub const DAEMON: Pvm = Pvm {
        name: "pvm(daemon)",
        direct: false,
        raw: true,
        in_place: false,
    };
    /// Direct route, XDR encoding.
    pub const XDR: Pvm = Pvm {
        name: "pvm(xdr)",
        direct: true,
        raw: false,
        in_place: false,
    };
    /// Direct route, the data packed in place (NetPIPE's PVM module packs
    /// so): at 1 MiB a plain C ping-pong moved 26-35 Gbit/s so against
    /// 6.4-7.5 with PvmDataRaw's copy into PVM's buffer (docs/validation.md).
    pub const IN_PLACE: Pvm = Pvm {
        name: "pvm(inplace)",
        direct: true,
        raw: true,
        in_place: true,
    };

    fn route(&self) -> &'static str {
        if self.direct {
            "PvmRouteDirect"
        } else {
            "PvmDontRoute"
        }
    }

    fn encoding(&self) -> &'static str {
        if self.in_place {
            "PvmDataInPlace"
        } else if self.raw {
            "PvmDataRaw"
        } else {
            "PvmDataDefault (XDR)"
        }
    }

    fn settings(&self, api: &Api, pvmd: &Path) -> serde_json::Map<String, Value> {
        let mut s = serde_json::Map::new();
        s.insert("pvm_version".into(), json!(library::version(api)));
        s.insert("route".into(), json!(self.route()));
        s.insert("encoding".into(), json!(self.encoding()));
        s.insert("pvmd".into(), json!(pvmd.display().to_string()));
        s.insert(
            "calls".into(),
            json!("pvm_initsend + pvm_pkbyte + pvm_send; pvm_trecv + pvm_upkbyte"),
        );
        s
    }
}

/// The PVM transports, listed whether or not PVM is installed (a missing
/// one explains itself).
pub(super) fn transports() -> Vec<Box<dyn Transport>> {
    vec![
        Box::new(Pvm::DIRECT),
        Box::new(Pvm::DAEMON),
        Box::new(Pvm::XDR),
        Box::new(Pvm::IN_PLACE),
    ]
}

fn pvm_error(what: &str, code: c_int) -> io::Error {
    io::Error::other(format!("{what} failed (PVM error {code})"))
}

/// Enroll this process with the daemon listening on `sock` and set the
/// routing policy; returns this task's id.
fn enroll(api: &Api, sock: &Path, direct: bool) -> Result<c_int> {
    let mut enrolled = ENROLLED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(other) = enrolled.as_ref() {
        bail!(
            "this process already has a PVM channel (pvmd at {}): PVM enrolls a whole process, one channel at a time",
            other.display()
        );
    }
    // libpvm finds its pvmd through PVMSOCK, read afresh at every
    // enrollment (PVM_TMP would be read once per process and cached, so a
    // second channel would look in the first one's removed directory). No
    // API takes the address: the environment is the only way in, set here
    // under the lock, just before the library reads it.
    std::env::set_var("PVMSOCK", sock);
    if daemon::as_root() {
        std::env::set_var("PVM_ALLOW_ROOT", "1");
    }
    // SAFETY: plain C calls of the loaded library.
    let tid = unsafe { (api.mytid)() };
    if tid < 0 {
        bail!(
            "pvm_mytid failed (PVM error {tid}): cannot reach the pvmd at {}",
            sock.display()
        );
    }
    let policy = if direct {
        library::PVM_ROUTE_DIRECT
    } else {
        library::PVM_DONT_ROUTE
    };
    // SAFETY: as above.
    unsafe { (api.setopt)(library::PVM_ROUTE, policy) };
    *enrolled = Some(sock.to_path_buf());
    Ok(tid)
}

fn leave(api: &Api) {
    let mut enrolled = ENROLLED.lock().unwrap_or_else(|e| e.into_inner());
    if enrolled.take().is_some() {
        // The two ends are two processes sharing one pvmd, which the
        // listening side kills as its end ends; nothing orders that before
        // this end's exit, so pvm_exit often finds no daemon and libpvm
        // prints "pvm_exit(): Can't contact local daemon" on stderr,
        // though nothing is wrong. Failures while measuring are reported
        // from the return codes; only this last call's own report goes.
        // SAFETY: plain C calls; the task leaves the virtual machine.
        unsafe {
            (api.setopt)(library::PVM_AUTO_ERR, 0);
            (api.exit)()
        };
    }
}

impl Transport for Pvm {
    fn name(&self) -> &'static str {
        self.name
    }

    fn measured_by_default(&self) -> bool {
        // A packing beside `pvm`, for NetPIPE's comparison: named, not in
        // every overview.
        !self.in_place
    }

    fn about(&self) -> &'static str {
        if self.in_place {
            return "PVM 3 messages, direct route, data packed in place (sent from the caller's buffer, as NetPIPE's PVM module)";
        }
        match (self.direct, self.raw) {
            (true, true) => {
                "PVM 3 messages, direct task-to-task route, raw data (pvmd started by wulf)"
            }
            (false, _) => "PVM 3 messages routed through the pvmd daemon, raw data",
            (true, false) => "PVM 3 messages, direct route, XDR-encoded packing",
        }
    }

    fn availability(&self) -> Result<(), String> {
        library::api()?;
        daemon::find_pvmd().map(|_| ())
    }

    fn local_only(&self) -> bool {
        // Across lab nodes too (the peer's pvmd adds the measuring node).
        false
    }

    fn claims_nic(&self) -> bool {
        false
    }

    fn links_processes(&self) -> bool {
        // A NAS group of two ranks on one host (one channel each).
        true
    }

    fn links_per_process(&self) -> Option<usize> {
        // One channel per process (PVM enrolls the whole process): a group
        // of more than two ranks needs several, so group runs take PVM
        // only when named, and with two processes.
        Some(1)
    }

    fn listen(&self, opts: &ChannelOptions, _bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let api = library::api().map_err(|e| anyhow!(e))?;
        let daemon = Daemon::start(opts.timeout(), remote::lab_name().as_deref())?;
        let tid = enroll(api, &daemon.sock, self.direct)?;
        Ok(Box::new(PvmListener {
            variant: *self,
            api,
            tid,
            daemon: Some(daemon),
            timeout: opts.timeout(),
            added: None,
            abort: Some(AbortPair::new()?),
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        peer_ip: IpAddr,
    ) -> Result<Connected> {
        let api = library::api().map_err(|e| anyhow!(e))?;
        if description.get("added_host").is_none() && !remote::is_local(peer_ip) {
            // A listener that never learnt this side's address (a NAS
            // rank's: only `wulf serve` tells it) started no pvmd here.
            bail!(
                "the PVM peer at {peer_ip} is on another host and added no pvmd on this one: across lab nodes PVM runs against `wulf serve` (sweep, run, study), not between NAS ranks"
            );
        }
        if let Some(why) = description.get("error").and_then(Value::as_str) {
            bail!("the peer could not give this host a pvmd: {why}");
        }
        let sock = PathBuf::from(
            description
                .get("pvmsock")
                .and_then(Value::as_str)
                .context("the peer sent no pvmd socket")?,
        );
        let peer = description
            .get("tid")
            .and_then(Value::as_i64)
            .and_then(|t| c_int::try_from(t).ok())
            .filter(|t| *t > 0)
            .context("the peer sent no PVM task id")?;
        if !sock.parent().is_some_and(daemon::is_private_dir) {
            bail!(
                "{} is not in a private PVM directory of this user",
                sock.display()
            );
        }
        let pvmd = daemon::find_pvmd().map_err(|e| anyhow!(e))?.0;
        // A pvmd the peer's started on this node: killed when this end
        // goes (the peer kills it too, whichever ends first).
        let node_dir = description
            .get("added_host")
            .is_some()
            .then(|| sock.parent().map(Path::to_path_buf))
            .flatten();
        if let Err(e) = enroll(api, &sock, self.direct) {
            if let Some(dir) = &node_dir {
                remote::kill_daemons_in(dir);
            }
            return Err(e);
        }
        // From here the endpoint's drop kills the node's pvmd.
        let mut ep = PvmEndpoint::new(*self, api, peer, opts.timeout(), None);
        ep.node_dir = node_dir;
        // The hello opens the direct link (when asked for) before timing.
        ep.send(b"hello").context("cannot reach the PVM peer")?;
        let mut answer = [0u8; 5];
        ep.recv(&mut answer)
            .context("no answer from the PVM peer")?;
        Ok(Connected {
            settings: self.settings(api, &pvmd),
            endpoint: Box::new(ep),
            warnings: Vec::new(),
        })
    }
}

/// The listening side: a daemon and an enrolled task, waiting for a hello.
struct PvmListener {
    variant: Pvm,
    api: &'static Api,
    tid: c_int,
    daemon: Option<Daemon>,
    timeout: Duration,
    /// The measuring side's host when it is another (a lab node), with
    /// the socket of the pvmd added there, or why it could not be.
    added: Option<(IpAddr, Result<PathBuf, String>)>,
    /// Ends this side's waits when the server's client went away (handed
    /// to the endpoint on accept).
    abort: Option<AbortPair>,
}

impl Listener for PvmListener {
    fn describe(&self) -> Value {
        let d = self.daemon.as_ref().expect("a listener holds its daemon");
        match &self.added {
            None => json!({
                "pvmsock": d.sock.display().to_string(),
                "tid": self.tid,
            }),
            Some((ip, Ok(sock))) => json!({
                "pvmsock": sock.display().to_string(),
                "tid": self.tid,
                "added_host": ip.to_string(),
            }),
            Some((ip, Err(why))) => json!({
                "error": why,
                "tid": self.tid,
                "added_host": ip.to_string(),
            }),
        }
    }

    fn expect_peer(&mut self, ip: IpAddr) {
        if remote::is_local(ip) {
            return;
        }
        let d = self.daemon.as_ref().expect("a listener holds its daemon");
        let result = match &d.remote {
            None => Err(format!(
                "the measuring side ({ip}) is another host: wulf starts PVM's daemons across hosts only between the nodes of a lab (--lab), through the lab's remote shell"
            )),
            Some(r) => remote::add_host(self.api, ip, r.slave_dir.path())
                .map_err(|e| format!("{e:#}")),
        };
        self.added = Some((ip, result));
    }

    fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.as_ref().and_then(AbortPair::handle)
    }

    fn accept(mut self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let api = self.api;
        // The daemon stays with the listener until the hello came: on any
        // error the listener's drop leaves the virtual machine and halts
        // it (a process enrolled forever could take no other channel).
        let abort = self.abort.take();
        let buf = receive(api, -1, DATA_TAG, timeout, abort.as_ref())
            .context("the other side did not say hello over PVM")?;
        let (mut bytes, mut tag, mut from) = (0, 0, 0);
        // SAFETY: plain C call with three out-pointers.
        let r = unsafe { (api.bufinfo)(buf, &mut bytes, &mut tag, &mut from) };
        if r < 0 {
            bail!("pvm_bufinfo failed (PVM error {r})");
        }
        let daemon = self.daemon.take().expect("a listener holds its daemon");
        let pvmd = daemon.pvmd.clone();
        let mut ep = PvmEndpoint::new(self.variant, api, from, self.timeout, Some(daemon));
        ep.abort = abort;
        ep.send(b"hello")?;
        Ok(Connected {
            settings: self.variant.settings(api, &pvmd),
            endpoint: Box::new(ep),
            warnings: Vec::new(),
        })
    }
}

impl Drop for PvmListener {
    fn drop(&mut self) {
        // Never accepted: leave, then the daemon goes with self.daemon.
        if self.daemon.is_some() {
            leave(self.api);
        }
    }
}

/// One end of a PVM channel.
struct PvmEndpoint {
    api: &'static Api,
    peer: c_int,
    encoding: c_int,
    raw: bool,
    timeout: Duration,
    /// The listening side's daemon, halted after this end leaves.
    daemon: Option<Daemon>,
    /// The measuring side in a lab: the private directory of the pvmd the
    /// peer started on this node, killed after this end leaves.
    node_dir: Option<PathBuf>,
    /// A server's end: what its watchdog uses to end the waits.
    abort: Option<AbortPair>,
}

impl PvmEndpoint {
    fn new(
        v: Pvm,
        api: &'static Api,
        peer: c_int,
        timeout: Duration,
        daemon: Option<Daemon>,
    ) -> Self {
        PvmEndpoint {
            api,
            peer,
            encoding: if v.in_place {
                library::PVM_DATA_IN_PLACE
            } else if v.raw {
                library::PVM_DATA_RAW
            } else {
                library::PVM_DATA_DEFAULT
            },
            raw: v.raw,
            timeout,
            daemon,
            node_dir: None,
            abort: None,
        }
    }
}

impl Endpoint for PvmEndpoint {
    fn abort_handle(&self) -> Option<AbortHandle> {
        self.abort.as_ref().and_then(AbortPair::handle)
    }

    fn helper_processes(&self) -> Vec<u32> {
        // The pvmd this end's messages pass through (every one under
        // PvmDontRoute; the direct route's control traffic otherwise):
        // the listening side's own, or in a lab the one its peer started
        // on this node. On one host only the listening side names it, so
        // its time is credited once.
        match (&self.daemon, &self.node_dir) {
            (Some(d), _) => d.pid().into_iter().collect(),
            (None, Some(dir)) => remote::daemons_in(dir)
                .into_iter()
                .filter_map(|p| u32::try_from(p).ok())
                .collect(),
            (None, None) => Vec::new(),
        }
    }

    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        send_bytes(self.api, self.peer, DATA_TAG, self.encoding, buf)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let id = receive(
            self.api,
            self.peer,
            DATA_TAG,
            self.timeout,
            self.abort.as_ref(),
        )?;
        let len = c_int::try_from(buf.len())
            .map_err(|_| io::Error::other("a PVM message holds at most 2 GiB"))?;
        if self.raw {
            let (mut bytes, mut tag, mut from) = (0, 0, 0);
            // SAFETY: plain C call with three out-pointers.
            unsafe { (self.api.bufinfo)(id, &mut bytes, &mut tag, &mut from) };
            if bytes != len {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a PVM message of {bytes} bytes where {len} were expected"),
                ));
            }
        }
        if len > 0 {
            // SAFETY: pvm_upkbyte writes at most `len` bytes into buf.
            let r = unsafe { (self.api.upkbyte)(buf.as_mut_ptr() as *mut c_char, len, 1) };
            if r < 0 {
                return Err(pvm_error("pvm_upkbyte", r));
            }
        }
        Ok(())
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        // pvm_send returns once the message is handed over: libpvm reads
        // incoming fragments while it waits to write, so two ends that
        // both send first cannot deadlock.
        self.send(out)?;
        self.recv(inp)
    }
}

impl Drop for PvmEndpoint {
    fn drop(&mut self) {
        leave(self.api);
        // The daemon (listening side) goes after its task left.
        self.daemon.take();
        if let Some(dir) = self.node_dir.take() {
            remote::kill_daemons_in(&dir);
        }
    }
}
