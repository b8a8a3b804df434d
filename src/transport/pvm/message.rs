//! One PVM message each way: the pack and send calls, and a receive
//! bounded by the channel's timeout (pvm_trecv) that a server's end can cut
//! short once its client went away.

use std::ffi::{c_char, c_int};
use std::io;
use std::time::Duration;

use super::library::{self, Api};
use super::pvm_error;
use crate::transport::AbortPair;

fn timeval(timeout: Duration) -> library::Timeval {
    library::Timeval {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_usec: timeout.subsec_micros() as libc::suseconds_t,
    }
}

/// How long one pvm_trecv waits before a server's end checks whether its
/// client went away (only a message that is late waits in slices).
const ABORT_CHECK: Duration = Duration::from_millis(100);

/// Wait at most `timeout` for a message with `tag` from `from` (-1: any
/// task); returns its buffer id. With `abort` (a server's end), the wait
/// ends early, with an error, once the pair's handle is used.
pub(super) fn receive(
    api: &Api,
    from: c_int,
    tag: c_int,
    timeout: Duration,
    abort: Option<&AbortPair>,
) -> io::Result<c_int> {
    let deadline = std::time::Instant::now() + timeout;
    let buf = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let slice = if abort.is_some() {
            left.min(ABORT_CHECK)
        } else {
            left
        };
        let mut tv = timeval(slice);
        // SAFETY: tv outlives the call.
        let buf = unsafe { (api.trecv)(from, tag, &mut tv) };
        if buf != 0 || left <= slice {
            break buf;
        }
        if abort.is_some_and(AbortPair::aborted) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the PVM channel was aborted (the client went away)",
            ));
        }
    };
    match buf {
        0 => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no PVM message within {}",
                humantime::format_duration(timeout)
            ),
        )),
        b if b < 0 => Err(pvm_error("pvm_trecv", b)),
        b => Ok(b),
    }
}

/// Pack `data` with `encoding` and send it to task `to` with `tag`.
pub(super) fn send_bytes(
    api: &Api,
    to: c_int,
    tag: c_int,
    encoding: c_int,
    data: &[u8],
) -> io::Result<()> {
    let len = c_int::try_from(data.len())
        .map_err(|_| io::Error::other("a PVM message holds at most 2 GiB"))?;
    // SAFETY: plain C calls; pvm_pkbyte only reads `len` bytes of data
    // (its pointer is not const in pvm3.h).
    unsafe {
        let r = (api.initsend)(encoding);
        if r < 0 {
            return Err(pvm_error("pvm_initsend", r));
        }
        if len > 0 {
            let r = (api.pkbyte)(data.as_ptr() as *mut c_char, len, 1);
            if r < 0 {
                return Err(pvm_error("pvm_pkbyte", r));
            }
        }
        let r = (api.send)(to, tag);
        if r < 0 {
            return Err(pvm_error("pvm_send", r));
        }
    }
    Ok(())
}
