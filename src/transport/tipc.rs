//! `tipc`: TIPC stream sockets (AF_TIPC, SOCK_STREAM), the cluster
//! protocol in the Linux kernel that Bounanos and Fleury 2007 measured against TCP.
//!
//! TIPC addresses services by name, not by host: the peer binds a random
//! service type and instance with cluster scope and sends them in its
//! description; the measuring side connects to that name and TIPC finds
//! the node. Between machines the nodes must share a TIPC network (`tipc
//! bearer enable media eth dev IFACE` on each); on one machine none is
//! needed. Many kernels (this project's CI machine among them) are built
//! without TIPC: the transport then reports "unavailable: kernel built
//! without TIPC" and `wulf run` skips it.
//!
//! Once connected it is a byte stream like TCP, so the data channel is the
//! shared [`StreamEndpoint`].

use std::net::IpAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use socket2::{SockAddr, Socket};

use super::sockopt::{buffer_settings, request_buffers};
use super::stream_socket::StreamEndpoint;
use super::{ChannelOptions, Connected, Listener, Transport};

/// TIPC_ADDR_NAMESEQ: a range of instances of one service type (bind).
const ADDR_NAMESEQ: u8 = 1;
/// TIPC_ADDR_NAME: one instance of a service type (connect).
const ADDR_NAME: u8 = 2;
/// TIPC_CLUSTER_SCOPE: the name is visible on every node of the cluster.
const CLUSTER_SCOPE: i8 = 2;
/// Service types below this are TIPC's own.
const FIRST_USER_TYPE: u32 = 64;

/// `struct sockaddr_tipc` of <linux/tipc.h>: family, address type, scope
/// and a union whose largest members are three 32-bit words (a name
/// sequence: type, lower, upper; a name: type, instance, domain).
#[repr(C)]
#[derive(Clone, Copy)]
struct SockaddrTipc {
    family: u16,
    addrtype: u8,
    scope: i8,
    words: [u32; 3],
}

fn sockaddr(addrtype: u8, words: [u32; 3]) -> SockAddr {
    let a = SockaddrTipc {
        family: libc::AF_TIPC as u16,
        addrtype,
        scope: CLUSTER_SCOPE,
        words,
    };
    // SAFETY: the storage is zeroed, large enough for a sockaddr_tipc and
    // receives exactly one; the length says so.
    let (_, addr) = unsafe {
        SockAddr::try_init(|storage, len| {
            std::ptr::write(storage.cast::<SockaddrTipc>(), a);
            *len = std::mem::size_of::<SockaddrTipc>() as libc::socklen_t;
            Ok(())
        })
    }
    .expect("writing a sockaddr cannot fail");
    addr
}

/// A TIPC stream socket, or the reason there is none.
fn open_socket() -> std::io::Result<Socket> {
    // SAFETY: plain socket(2) call; the descriptor is owned right away.
    let fd = unsafe { libc::socket(libc::AF_TIPC, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(Socket::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Why TIPC cannot be used here, in words.
fn why_unavailable(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EAFNOSUPPORT) => "kernel built without TIPC (CONFIG_TIPC)".to_string(),
        _ => format!("cannot open a TIPC socket: {e}"),
    }
}

/// The `tipc` transport.
pub struct Tipc;

impl Transport for Tipc {
    fn name(&self) -> &'static str {
        "tipc"
    }

    fn about(&self) -> &'static str {
        "TIPC stream sockets (AF_TIPC), where the kernel has TIPC"
    }

    fn availability(&self) -> Result<(), String> {
        open_socket().map(|_| ()).map_err(|e| why_unavailable(&e))
    }

    fn local_only(&self) -> bool {
        false
    }

    fn claims_nic(&self) -> bool {
        false
    }

    fn lean_stack(&self) -> bool {
        true
    }

    fn listen(&self, opts: &ChannelOptions, _bind_ip: IpAddr) -> Result<Box<dyn Listener>> {
        let socket = open_socket().map_err(|e| anyhow!(why_unavailable(&e)))?;
        let warnings = request_buffers(&socket, opts)?;
        let service = fastrand::u32(FIRST_USER_TYPE..);
        let instance = fastrand::u32(..);
        socket
            .bind(&sockaddr(ADDR_NAMESEQ, [service, instance, instance]))
            .context("cannot bind a TIPC service name")?;
        socket.listen(1)?;
        Ok(Box::new(TipcListener {
            socket,
            service,
            instance,
            opts: opts.clone(),
            warnings,
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        _peer_ip: IpAddr,
    ) -> Result<Connected> {
        let word = |k: &str| {
            description
                .get(k)
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .with_context(|| format!("the peer sent no TIPC {k}"))
        };
        let (service, instance) = (word("service_type")?, word("instance")?);
        let socket = open_socket().map_err(|e| anyhow!(why_unavailable(&e)))?;
        let warnings = request_buffers(&socket, opts)?;
        socket
            .connect_timeout(&sockaddr(ADDR_NAME, [service, instance, 0]), opts.timeout())
            .with_context(|| {
                format!("cannot reach TIPC service {service}:{instance} (do both nodes share a TIPC network? `tipc bearer enable`)")
            })?;
        finish(socket, opts, warnings, service, instance)
    }
}

struct TipcListener {
    socket: Socket,
    service: u32,
    instance: u32,
    opts: ChannelOptions,
    warnings: Vec<String>,
}

impl Listener for TipcListener {
    fn describe(&self) -> Value {
        json!({ "service_type": self.service, "instance": self.instance })
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let (socket, _) = super::unix::accept_within(&self.socket, timeout)?;
        finish(
            socket,
            &self.opts,
            self.warnings,
            self.service,
            self.instance,
        )
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        super::AbortHandle::of(&self.socket).ok()
    }
}

fn finish(
    socket: Socket,
    opts: &ChannelOptions,
    warnings: Vec<String>,
    service: u32,
    instance: u32,
) -> Result<Connected> {
    let mut settings = buffer_settings(&socket, opts);
    settings.insert("service".into(), json!(format!("{service}:{instance}")));
    settings.insert("busy_poll".into(), json!(opts.busy_poll));
    let endpoint = StreamEndpoint::new(socket, opts.timeout(), opts.busy_poll)?;
    Ok(Connected {
        endpoint: Box::new(endpoint),
        settings,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<SockaddrTipc>(), 16);
        let a = sockaddr(ADDR_NAME, [70, 5, 0]);
        assert_eq!(a.len() as usize, 16);
        assert_eq!(a.family(), libc::AF_TIPC as u16);
    }

    #[test]
    fn availability_names_the_missing_kernel_support() {
        match Tipc.availability() {
            Ok(()) => eprintln!("TIPC is present here"),
            Err(why) => assert!(
                why.contains("kernel built without TIPC") || why.contains("cannot open"),
                "{why}"
            ),
        }
    }
}
