//! A session's watchdog: ends a server session at once when its client goes
//! away, and when the handshake or the whole session outlives the server's
//! own limits, whatever the client asked for.
//!
//! While a session waits on its data channel (for the client to connect, or
//! inside a block) it is not reading the control connection, so it would not
//! see the client vanish until the data channel's timeout ran out. The
//! watchdog thread polls the control socket for a hang-up (POLLRDHUP: the
//! client's end is closed; a live client never half-closes) and sleeps
//! until the next deadline otherwise: it wakes no more than twice during a
//! session, so it takes nothing from the measurement. When it fires it
//! shuts down the data channel ([`AbortHandle`]) and the control
//! connection's reading side, so every blocked call returns an error at
//! once, and records why ([`Fired`]) for the session's error message.

use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::transport::AbortHandle;

/// Why a watchdog ended a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    /// The client closed its end of the control connection.
    ClientGone,
    /// The handshake was not finished by its deadline.
    HandshakeDeadline,
    /// The session reached the server's `--max-session`.
    SessionDeadline,
}

struct State {
    /// Handle on the data channel, once there is one.
    data: Option<AbortHandle>,
    /// Deadline of the current phase and what passing it means.
    deadline: Instant,
    deadline_kind: Fired,
    fired: Option<Fired>,
}

/// Watches one session's control connection; stops when dropped.
pub struct Watchdog {
    state: Arc<Mutex<State>>,
    session_limit: Duration,
    /// Writing end of the pipe that wakes the thread to stop.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Start watching `control`: the handshake must end by
    /// `handshake_deadline`; after [`Watchdog::handshake_done`] the session
    /// may last `session_limit`.
    pub fn start(
        control: &TcpStream,
        handshake_deadline: Instant,
        session_limit: Duration,
    ) -> std::io::Result<Watchdog> {
        let control = control.try_clone()?;
        let (stop_read, stop_write) = nix::unistd::pipe()?;
        let state = Arc::new(Mutex::new(State {
            data: None,
            deadline: handshake_deadline,
            deadline_kind: Fired::HandshakeDeadline,
            fired: None,
        }));
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("wulf-watchdog".into())
            .spawn(move || watch(&control, &stop_read, &shared))?;
        Ok(Watchdog {
            state,
            session_limit,
            stop: Some(stop_write),
            thread: Some(thread),
        })
    }

    /// The handshake is over: from now the session's own limit applies.
    pub fn handshake_done(&self) {
        {
            let mut s = lock(&self.state);
            s.deadline = Instant::now() + self.session_limit;
            s.deadline_kind = Fired::SessionDeadline;
        }
        // Wake the thread to sleep until the new deadline instead (a byte:
        // "look again"; closing the pipe means "stop").
        if let Some(w) = &self.stop {
            let _ = nix::unistd::write(w, &[1]);
        }
    }

    /// Guard the data channel too (its listener, then the connection).
    pub fn guard(&self, data: Option<AbortHandle>) {
        let mut s = lock(&self.state);
        if s.fired.is_some() {
            // Fired before the channel existed: end it straight away.
            if let Some(d) = &data {
                d.abort();
            }
        }
        s.data = data;
    }

    /// Why the watchdog ended the session, if it did.
    pub fn fired(&self) -> Option<Fired> {
        lock(&self.state).fired
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Closing the pipe's writing end wakes the thread (POLLHUP).
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A poisoned lock only means another thread panicked while holding it;
    // the state itself is still consistent.
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn watch(control: &TcpStream, stop: &OwnedFd, state: &Mutex<State>) {
    loop {
        let (deadline, kind) = {
            let s = lock(state);
            (s.deadline, s.deadline_kind)
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            // The deadline may have moved on meanwhile (handshake done).
            if lock(state).deadline <= Instant::now() {
                fire(control, state, kind);
                return;
            }
            continue;
        }
        match wait(control, stop, left) {
            Woke::Timeout => continue,
            Woke::LookAgain => {
                let mut byte = [0u8; 1];
                if !matches!(nix::unistd::read(stop.as_raw_fd(), &mut byte), Ok(1)) {
                    return;
                }
            }
            Woke::Stop => return,
            Woke::Hangup => {
                fire(control, state, Fired::ClientGone);
                return;
            }
        }
    }
}

enum Woke {
    Timeout,
    /// The stop pipe is readable: a byte (the deadline moved) or its end.
    LookAgain,
    Stop,
    Hangup,
}

/// Sleep until the control connection hangs up, the stop pipe closes, or
/// `left` passes. poll(2) is called directly: nix's `PollFlags` has no
/// POLLRDHUP and would not report it.
fn wait(control: &TcpStream, stop: &OwnedFd, left: Duration) -> Woke {
    let mut fds = [
        libc::pollfd {
            fd: control.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of two pollfd for the whole call, and
    // both descriptors stay open (borrowed) until it returns.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        return if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            Woke::Timeout
        } else {
            Woke::Stop
        };
    }
    if fds[1].revents & libc::POLLIN != 0 {
        Woke::LookAgain
    } else if fds[1].revents != 0 {
        Woke::Stop
    } else if fds[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
        Woke::Hangup
    } else {
        Woke::Timeout
    }
}

fn fire(control: &TcpStream, state: &Mutex<State>, why: Fired) {
    let mut s = lock(state);
    s.fired = Some(why);
    if let Some(d) = &s.data {
        d.abort();
    }
    // Wake a read of the control connection; writing stays possible so
    // that the session can still tell a live client why it ends.
    let _ = control.shutdown(std::net::Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c)
    }

    #[test]
    fn a_vanished_client_wakes_a_blocked_data_wait_at_once() {
        let (server, client) = pair();
        let (data_server, _data_client) = pair();
        let dog = Watchdog::start(
            &server,
            Instant::now() + Duration::from_secs(60),
            Duration::from_secs(600),
        )
        .unwrap();
        dog.handshake_done();
        dog.guard(Some(AbortHandle::of(&data_server).unwrap()));
        let started = Instant::now();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(client);
        });
        // A read with a 60 s timeout on the data channel ends at once.
        data_server
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut buf = [0u8; 1];
        let n = (&data_server).read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0);
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(dog.fired(), Some(Fired::ClientGone));
    }

    #[test]
    fn deadlines_fire_in_their_phase_and_not_after_a_clean_end() {
        let (server, _client) = pair();
        let dog = Watchdog::start(
            &server,
            Instant::now() + Duration::from_millis(100),
            Duration::from_secs(600),
        )
        .unwrap();
        let mut buf = [0u8; 1];
        server
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        assert_eq!((&server).read(&mut buf).unwrap_or(0), 0);
        assert_eq!(dog.fired(), Some(Fired::HandshakeDeadline));

        let (server, _client) = pair();
        let dog = Watchdog::start(
            &server,
            Instant::now() + Duration::from_secs(60),
            Duration::from_millis(100),
        )
        .unwrap();
        dog.handshake_done();
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(dog.fired(), Some(Fired::SessionDeadline));

        let (server, _client) = pair();
        let dog = Watchdog::start(
            &server,
            Instant::now() + Duration::from_secs(60),
            Duration::from_secs(60),
        )
        .unwrap();
        let started = Instant::now();
        drop(dog);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "drop joins fast"
        );
    }
}
