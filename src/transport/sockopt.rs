//! Socket buffer options shared by the socket transports: request, read back
//! what the kernel granted, and explain a clamp.
//!
//! Linux doubles a requested SO_SNDBUF / SO_RCVBUF (to leave room for its
//! bookkeeping) and silently clamps the request to net.core.wmem_max /
//! rmem_max. We record the request and the grant, and warn when the request
//! exceeded the sysctl so the user knows which knob to turn.

use serde_json::{json, Map, Value};
use socket2::Socket;

use super::ChannelOptions;

/// Apply the buffer requests in `opts` to `socket` (before connect or
/// listen, so TCP window scaling is negotiated for them). Returns warnings.
pub fn request_buffers(socket: &Socket, opts: &ChannelOptions) -> std::io::Result<Vec<String>> {
    let mut warnings = Vec::new();
    if let Some(req) = opts.sndbuf_bytes {
        socket.set_send_buffer_size(usize::try_from(req).unwrap_or(usize::MAX))?;
        warnings.extend(clamp_warning("SO_SNDBUF", req, "wmem_max"));
    }
    if let Some(req) = opts.rcvbuf_bytes {
        socket.set_recv_buffer_size(usize::try_from(req).unwrap_or(usize::MAX))?;
        warnings.extend(clamp_warning("SO_RCVBUF", req, "rmem_max"));
    }
    Ok(warnings)
}

/// Requested and granted buffer sizes of `socket`, for the result file.
pub fn buffer_settings(socket: &Socket, opts: &ChannelOptions) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("sndbuf_requested_bytes".into(), json!(opts.sndbuf_bytes));
    m.insert("rcvbuf_requested_bytes".into(), json!(opts.rcvbuf_bytes));
    m.insert(
        "sndbuf_granted_bytes".into(),
        json!(socket.send_buffer_size().ok()),
    );
    m.insert(
        "rcvbuf_granted_bytes".into(),
        json!(socket.recv_buffer_size().ok()),
    );
    m
}

fn clamp_warning(option: &str, requested: u64, sysctl: &str) -> Option<String> {
    let max: u64 = std::fs::read_to_string(format!("/proc/sys/net/core/{sysctl}"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (requested > max).then(|| {
        format!(
            "{option} request of {requested} bytes was clamped by net.core.{sysctl} = {max}; \
             raise it with `sysctl -w net.core.{sysctl}={requested}`"
        )
    })
}
