//! An [`Endpoint`] over any connected stream socket (TCP, Unix).
//!
//! `send` and `recv` use the blocking socket with SO_SNDTIMEO/SO_RCVTIMEO
//! set, so each system call is bounded by the channel timeout at no cost in
//! the hot path. `exchange` uses non-blocking calls and poll(2): both
//! directions progress together, so two ends exchanging messages larger than
//! their socket buffers never deadlock (NetPIPE's bidirectional mode is
//! limited to the buffer size for lack of this).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use socket2::Socket;

use super::Endpoint;

/// A connected stream socket used as a data channel.
pub struct StreamEndpoint {
    socket: Socket,
    timeout: Duration,
}

impl StreamEndpoint {
    /// Wrap `socket`, setting its send and receive timeouts to `timeout`.
    pub fn new(socket: Socket, timeout: Duration) -> io::Result<Self> {
        socket.set_read_timeout(Some(timeout))?;
        socket.set_write_timeout(Some(timeout))?;
        socket.set_nonblocking(false)?;
        Ok(StreamEndpoint { socket, timeout })
    }
}

fn timed_out(e: io::Error) -> io::Error {
    // A socket timeout surfaces as EAGAIN; say what it means.
    if e.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the peer stopped sending or receiving (timeout)",
        )
    } else {
        e
    }
}

impl Endpoint for StreamEndpoint {
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        (&self.socket).write_all(buf).map_err(timed_out)
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        (&self.socket).read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                )
            } else {
                timed_out(e)
            }
        })
    }

    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        let fd = self.socket.as_raw_fd();
        let (mut sent, mut got) = (0usize, 0usize);
        let timeout = PollTimeout::try_from(self.timeout).unwrap_or(PollTimeout::MAX);
        while sent < out.len() || got < inp.len() {
            // Try both directions without blocking first: in the common
            // case (small messages) no poll call is needed at all.
            let mut progressed = false;
            if sent < out.len() {
                // SAFETY: the pointer and length describe the unsent tail of `out`.
                let n = unsafe {
                    libc::send(
                        fd,
                        out[sent..].as_ptr().cast(),
                        out.len() - sent,
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
                if n > 0 {
                    sent += n as usize;
                    progressed = true;
                } else if n < 0 {
                    let e = io::Error::last_os_error();
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) {
                        return Err(e);
                    }
                }
            }
            if got < inp.len() {
                // SAFETY: the pointer and length describe the unfilled tail of `inp`.
                let n = unsafe {
                    libc::recv(
                        fd,
                        inp[got..].as_mut_ptr().cast(),
                        inp.len() - got,
                        libc::MSG_DONTWAIT,
                    )
                };
                if n > 0 {
                    got += n as usize;
                    progressed = true;
                } else if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the connection",
                    ));
                } else {
                    let e = io::Error::last_os_error();
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) {
                        return Err(e);
                    }
                }
            }
            if progressed {
                continue;
            }
            let mut flags = PollFlags::empty();
            if sent < out.len() {
                flags |= PollFlags::POLLOUT;
            }
            if got < inp.len() {
                flags |= PollFlags::POLLIN;
            }
            let mut fds = [PollFd::new(self.socket.as_fd(), flags)];
            match poll(&mut fds, timeout) {
                Ok(0) => return Err(timed_out(io::ErrorKind::WouldBlock.into())),
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
