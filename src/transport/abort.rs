//! Ending a transport's blocking waits from another thread: a socket's by
//! shutting down a duplicate of its descriptor ([`AbortHandle`]), a wait
//! on something other than a socket (a shared-memory region) by a pair of
//! Unix sockets polled beside it ([`AbortPair`]).

use std::io;
use std::time::Duration;

/// Ends a socket's blocking waits (accept, send, receive, poll) from another
/// thread, by shutting down a duplicate of its descriptor: every waiter
/// wakes with an error at once, while the owner still closes the socket.
pub struct AbortHandle(socket2::Socket);

impl AbortHandle {
    /// A handle on `socket` (a duplicate of its descriptor).
    pub fn of<S: std::os::fd::AsFd>(socket: &S) -> io::Result<AbortHandle> {
        let fd = socket.as_fd().try_clone_to_owned()?;
        Ok(AbortHandle(socket2::Socket::from(fd)))
    }

    /// Wake every blocked operation on the socket with an error.
    pub fn abort(&self) {
        // Errors mean the socket is closed or was never connected: either
        // way nothing is left waiting on it.
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// What an [`AbortHandle`] wakes for a listener that waits on something
/// other than a socket (a shared-memory region): a connected pair of Unix
/// sockets, one end behind the handle, the other checked while waiting.
/// Without it a vanished client held a shm or cma server until the data
/// timeout (10 s in the soak, 60 s at most) instead of ending at once.
pub struct AbortPair {
    handle_end: std::os::unix::net::UnixStream,
    watch_end: std::os::unix::net::UnixStream,
}

impl AbortPair {
    /// A fresh pair, not aborted.
    pub fn new() -> io::Result<AbortPair> {
        let (handle_end, watch_end) = std::os::unix::net::UnixStream::pair()?;
        watch_end.set_nonblocking(true)?;
        Ok(AbortPair {
            handle_end,
            watch_end,
        })
    }

    /// The handle that aborts the wait.
    pub fn handle(&self) -> Option<AbortHandle> {
        AbortHandle::of(&self.handle_end).ok()
    }

    /// The end to poll for readability alongside a wait: it becomes
    /// readable (end of file) when the handle is used.
    pub fn watch_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.watch_end)
    }

    /// Whether the handle was used (its end shut down).
    pub fn aborted(&self) -> bool {
        let mut byte = [0u8; 1];
        matches!(io::Read::read(&mut &self.watch_end, &mut byte), Ok(0))
    }

    /// Why a polled wait for `what` must stop now, if it must: `deadline`
    /// (set to now + `timeout` on the first look) has passed, or the
    /// handle was used. Read the clock, so called every so many polls.
    pub fn stop_reason(
        &self,
        deadline: &mut Option<std::time::Instant>,
        timeout: Duration,
        what: &str,
    ) -> Option<io::Error> {
        let now = std::time::Instant::now();
        let why = if now >= *deadline.get_or_insert(now + timeout) {
            format!("{what}: no completion within {timeout:?}")
        } else if self.aborted() {
            format!("{what}: ended (the other side went away)")
        } else {
            return None;
        };
        Some(io::Error::new(io::ErrorKind::TimedOut, why))
    }
}
