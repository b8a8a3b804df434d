//! An [`Endpoint`] over any connected stream socket (TCP, Unix).
//!
//! `send` and `recv` use the blocking socket with SO_SNDTIMEO/SO_RCVTIMEO
//! set, so each system call is bounded by the channel timeout at no cost in
//! the hot path. `exchange` uses non-blocking calls and poll(2): both
//! directions progress together, so two ends exchanging messages larger than
//! their socket buffers never deadlock (NetPIPE's bidirectional mode is
//! limited to the buffer size for lack of this).
//!
//! Busy-polling (`--wait spin`): a blocking receive sleeps in the kernel and
//! costs a wake-up per message (tens of microseconds on some virtual
//! machines); MPI libraries avoid it by polling their sockets. With
//! `busy_poll` the endpoint does the same: receives and exchanges retry
//! non-blocking calls in a loop instead of sleeping, reading the clock
//! only every [`POLLS_PER_CLOCK_READ`] tries to keep the timeout.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use socket2::Socket;

use super::Endpoint;

/// Non-blocking tries between two clock reads while busy-polling.
pub const POLLS_PER_CLOCK_READ: u32 = 1024;

/// A connected stream socket used as a data channel.
pub struct StreamEndpoint {
    socket: Socket,
    timeout: Duration,
    busy_poll: bool,
}

impl StreamEndpoint {
    /// Wrap `socket`, setting its send and receive timeouts to `timeout`;
    /// with `busy_poll`, receives spin on non-blocking calls instead of
    /// sleeping in the kernel.
    pub fn new(socket: Socket, timeout: Duration, busy_poll: bool) -> io::Result<Self> {
        socket.set_read_timeout(Some(timeout))?;
        socket.set_write_timeout(Some(timeout))?;
        socket.set_nonblocking(false)?;
        Ok(StreamEndpoint {
            socket,
            timeout,
            busy_poll,
        })
    }

    /// Receives exactly `buf.len()` bytes by polling non-blocking calls.
    fn recv_polling(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let fd = self.socket.as_raw_fd();
        let mut got = 0;
        let mut clock = Deadline::new(self.timeout);
        while got < buf.len() {
            match recv_dontwait(fd, &mut buf[got..])? {
                Some(n) => got += n,
                None => clock.check()?,
            }
        }
        Ok(())
    }
}

/// The timeout of a busy-polling loop, reading the clock only now and then.
struct Deadline {
    started: Instant,
    timeout: Duration,
    tries: u32,
}

impl Deadline {
    fn new(timeout: Duration) -> Deadline {
        Deadline {
            started: Instant::now(),
            timeout,
            tries: 0,
        }
    }

    /// One unsuccessful try: fails once the timeout has passed.
    fn check(&mut self) -> io::Result<()> {
        std::hint::spin_loop();
        self.tries += 1;
        if self.tries.is_multiple_of(POLLS_PER_CLOCK_READ) && self.started.elapsed() > self.timeout
        {
            return Err(timed_out(io::ErrorKind::WouldBlock.into()));
        }
        Ok(())
    }
}

/// One non-blocking receive: Some(bytes) on progress, None when nothing is
/// there yet; end of stream and errors are errors.
fn recv_dontwait(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: the pointer and length describe `buf`, which we borrow mutably.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if n > 0 {
        return Ok(Some(n as usize));
    }
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the peer closed the connection",
        ));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
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

    fn abort_handle(&self) -> Option<super::AbortHandle> {
        super::AbortHandle::of(&self.socket).ok()
    }

    fn send_parts(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        // One writev for a few parts (a header and its payload): the
        // receiver reads them apart, as a byte stream allows.
        const MAX_PARTS: usize = 4;
        if parts.len() > MAX_PARTS {
            return parts.iter().try_for_each(|p| self.send(p));
        }
        let mut slices = [IoSlice::new(&[]); MAX_PARTS];
        for (slice, part) in slices.iter_mut().zip(parts) {
            *slice = IoSlice::new(part);
        }
        let mut left = &mut slices[..parts.len()];
        // Drops leading empty parts: a writev of nothing but empty slices
        // returns 0, which would read as a failed write.
        IoSlice::advance_slices(&mut left, 0);
        while !left.is_empty() {
            match (&self.socket).write_vectored(left) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut left, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(timed_out(e)),
            }
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        if self.busy_poll {
            return self.recv_polling(buf);
        }
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
        let mut clock = Deadline::new(self.timeout);
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
                if let Some(n) = recv_dontwait(fd, &mut inp[got..])? {
                    got += n;
                    progressed = true;
                }
            }
            if progressed {
                continue;
            }
            if self.busy_poll {
                clock.check()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Type};

    fn pair(busy_poll: bool) -> (StreamEndpoint, StreamEndpoint) {
        let (a, b) = Socket::pair(Domain::UNIX, Type::STREAM, None).unwrap();
        let t = Duration::from_secs(5);
        (
            StreamEndpoint::new(a, t, busy_poll).unwrap(),
            StreamEndpoint::new(b, t, busy_poll).unwrap(),
        )
    }

    #[test]
    fn parts_arrive_in_order_even_when_writes_are_partial() {
        for busy_poll in [false, true] {
            let (mut a, mut b) = pair(busy_poll);
            // 4 MiB is far above a socket buffer: writev returns short.
            let big: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
            let expected = big.clone();
            let reader = std::thread::spawn(move || {
                let mut head = [0u8; 3];
                b.recv(&mut head).unwrap();
                let mut body = vec![0u8; 4 << 20];
                b.recv(&mut body).unwrap();
                let mut tail = [0u8; 2];
                b.recv(&mut tail).unwrap();
                (head, body, tail)
            });
            a.send_parts(&[b"", b"abc", &big, b"", b"yz"]).unwrap();
            let (head, body, tail) = reader.join().unwrap();
            assert_eq!(&head, b"abc");
            assert!(body == expected);
            assert_eq!(&tail, b"yz");
            a.send_parts(&[b"", b""]).unwrap();
        }
    }

    #[test]
    fn a_polling_receive_times_out_and_sees_the_peer_close() {
        let (a, b) = Socket::pair(Domain::UNIX, Type::STREAM, None).unwrap();
        let mut a = StreamEndpoint::new(a, Duration::from_millis(200), true).unwrap();
        let mut one = [0u8; 1];
        let e = a.recv(&mut one).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        drop(b);
        let e = a.recv(&mut one).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
