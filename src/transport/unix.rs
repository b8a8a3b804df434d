//! Unix-domain stream sockets: the kernel's local path without the IP stack.
//!
//! The peer binds a socket in a private temporary directory (mode 0700),
//! which is removed when the listener or channel is dropped; only a peer on
//! the same host can use it.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use serde_json::{json, Value};
use socket2::{Domain, SockAddr, Socket, Type};

use super::sockopt::{buffer_settings, request_buffers};
use super::stream_socket::StreamEndpoint;
use super::{ChannelOptions, Connected, Listener, Transport};

/// The Unix stream socket transport.
pub struct Unix;

impl Transport for Unix {
    fn name(&self) -> &'static str {
        "unix"
    }

    fn about(&self) -> &'static str {
        "Unix-domain stream sockets (same host only)"
    }

    fn availability(&self) -> Result<(), String> {
        Socket::new(Domain::UNIX, Type::STREAM, None)
            .map(|_| ())
            .map_err(|e| format!("cannot create a Unix socket: {e}"))
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
        let dir = tempfile::Builder::new()
            .prefix("wulf-")
            .tempdir()
            .context("cannot create a directory for the Unix socket")?;
        let path = dir.path().join("data.sock");
        let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        let warnings = request_buffers(&socket, opts)?;
        socket
            .bind(&SockAddr::unix(&path)?)
            .with_context(|| format!("cannot bind {}", path.display()))?;
        socket.listen(1)?;
        Ok(Box::new(UnixListener {
            socket,
            path,
            _dir: dir,
            opts: opts.clone(),
            warnings,
        }))
    }

    fn connect(
        &self,
        description: &Value,
        opts: &ChannelOptions,
        _peer_ip: std::net::IpAddr,
    ) -> Result<Connected> {
        let path = description
            .get("path")
            .and_then(Value::as_str)
            .context("the peer sent no socket path")?;
        let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        let warnings = request_buffers(&socket, opts)?;
        socket.connect(&SockAddr::unix(path)?).with_context(|| {
            format!("cannot connect to {path}: the unix transport needs the peer on this host")
        })?;
        finish(socket, opts, warnings, path)
    }
}

struct UnixListener {
    socket: Socket,
    path: PathBuf,
    // Kept so the directory (and socket file) live as long as the listener.
    _dir: tempfile::TempDir,
    opts: ChannelOptions,
    warnings: Vec<String>,
}

impl Listener for UnixListener {
    fn describe(&self) -> Value {
        json!({ "path": self.path })
    }

    fn accept(self: Box<Self>, timeout: Duration) -> Result<Connected> {
        let (socket, _) = accept_within(&self.socket, timeout)?;
        // The connection outlives the path; remove it now.
        let path = self.path.display().to_string();
        finish(socket, &self.opts, self.warnings, &path)
    }

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        super::AbortHandle::of(&self.socket).ok()
    }
}

fn finish(
    socket: Socket,
    opts: &ChannelOptions,
    warnings: Vec<String>,
    path: &str,
) -> Result<Connected> {
    let mut settings = buffer_settings(&socket, opts);
    settings.insert("path".into(), json!(path));
    settings.insert("busy_poll".into(), json!(opts.busy_poll));
    // The kernel builds a Unix socket's buffers from page-sized pieces
    // (slab size classes, then page fragments): a message a few bytes past
    // k pages takes one more, and measures slower than k pages exactly.
    let page = crate::sys::page_bytes();
    settings.insert(
        crate::result::THRESHOLDS_KEY.into(),
        crate::result::periodic_threshold_value(
            page,
            &format!("unix socket buffers come in {page} B pages: a larger message needs one more"),
        ),
    );
    Ok(Connected {
        endpoint: Box::new(StreamEndpoint::new(socket, opts.timeout(), opts.busy_poll)?),
        settings,
        warnings,
    })
}

/// Accept one connection on a listening socket, waiting at most `timeout`.
/// Shared by the socket transports.
pub(super) fn accept_within(listener: &Socket, timeout: Duration) -> Result<(Socket, SockAddr)> {
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    let t = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut fds, t) {
            Ok(0) => bail!(
                "the other side did not open the data connection within {}",
                humantime::format_duration(timeout)
            ),
            Ok(_) => break,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(listener.accept()?)
}
