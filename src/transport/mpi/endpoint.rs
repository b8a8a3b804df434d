//! The data channel between the two ranks of an MPI job.
//!
//! The worker owns the one [`Mpi`] handle of its process and parks it in a
//! slot while the generic sweep engine or peer server runs; setting up the
//! channel ([`MpiListener::accept`], [`connect`]) takes it out into the
//! [`MpiEndpoint`], and dropping the endpoint puts it back, so the worker
//! can finalise MPI afterwards. Ownership thus serialises every MPI call
//! without any lock in the hot path, and set-up checks that the channel is
//! made on the thread that initialised MPI (MPI_THREAD_SINGLE).
//!
//! Set-up is checked end to end: the connecting rank sends a small hello
//! over MPI and the listening rank receives it before reporting ready.

use std::io;
use std::mem::ManuallyDrop;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::ffi::Mpi;
use crate::transport::{Connected, Endpoint, Listener};

/// Tag of measured messages (the plain C benchmark uses the same).
pub const DATA_TAG: i32 = 1;
/// Tag of the set-up hello.
const HELLO_TAG: i32 = 2;
/// What the hello carries.
const HELLO: &[u8; 8] = b"wulf-mpi";

/// The process's MPI handle while no endpoint holds it.
static SLOT: Mutex<Option<Mpi>> = Mutex::new(None);

/// Park the process's MPI handle for the next channel set-up.
pub fn park(mpi: Mpi) {
    *SLOT.lock().unwrap_or_else(|e| e.into_inner()) = Some(mpi);
}

/// Take the parked MPI handle back (None while an endpoint holds it).
pub fn unpark() -> Option<Mpi> {
    SLOT.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn take_for_channel() -> Result<Mpi> {
    match unpark() {
        Some(m) if !m.on_init_thread() => {
            park(m);
            bail!("an MPI channel must be set up on the thread that initialised MPI")
        }
        Some(m) if m.size() >= 2 => Ok(m),
        Some(m) => {
            park(m);
            bail!("the MPI job has 1 rank; a channel needs another")
        }
        None => bail!("MPI is not initialised in this process, or a channel already uses it"),
    }
}

/// One rank's end of the channel to another rank of the job.
pub struct MpiEndpoint {
    // Given back to the slot on drop (hence ManuallyDrop, not Option: no
    // check in the hot path).
    mpi: ManuallyDrop<Mpi>,
    peer: usize,
    window: u64,
}

impl MpiEndpoint {
    fn new(mpi: Mpi, peer: usize, window: u64) -> MpiEndpoint {
        let window = window.clamp(1, mpi.max_window());
        MpiEndpoint {
            mpi: ManuallyDrop::new(mpi),
            peer,
            window,
        }
    }

    fn settings(&self) -> serde_json::Map<String, Value> {
        let mut s = serde_json::Map::new();
        s.insert("rank".into(), json!(self.mpi.rank()));
        s.insert("peer_rank".into(), json!(self.peer));
        s.insert("processor".into(), json!(self.mpi.processor_name()));
        s.insert("window".into(), json!(self.window));
        s.insert("thread_level".into(), json!(self.mpi.thread_level().name()));
        let version = self.mpi.library_version();
        let env = |k: &str| std::env::var(k).ok();
        let facts = super::path::RankFacts {
            library_version: &version,
            world_size: self.mpi.size(),
            rdma_devices: std::fs::read_dir("/sys/class/infiniband")
                .is_ok_and(|mut d| d.next().is_some()),
            env: &env,
        };
        if let Some(path) = super::path::data_path(&facts) {
            s.insert(super::path::DATA_PATH_KEY.into(), json!(path));
        }
        s
    }
}

impl Drop for MpiEndpoint {
    fn drop(&mut self) {
        // SAFETY: drop runs once and `mpi` is not touched afterwards.
        park(unsafe { ManuallyDrop::take(&mut self.mpi) });
    }
}

impl Endpoint for MpiEndpoint {
    #[inline]
    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        self.mpi.send(buf, self.peer, DATA_TAG)
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.mpi.recv(buf, self.peer, DATA_TAG)
    }

    #[inline]
    fn exchange(&mut self, out: &[u8], inp: &mut [u8]) -> io::Result<()> {
        self.mpi.exchange(out, inp, self.peer, DATA_TAG)
    }

    fn stream_window(&self) -> u64 {
        self.window
    }

    #[inline]
    fn send_stream(&mut self, buf: &[u8], count: u64) -> io::Result<()> {
        self.mpi
            .send_window(buf, count, self.window, self.peer, DATA_TAG)
    }

    #[inline]
    fn recv_stream(&mut self, buf: &mut [u8], count: u64) -> io::Result<()> {
        self.mpi
            .recv_window(buf, count, self.window, self.peer, DATA_TAG)
    }
}

/// The listening rank's side of the set-up.
pub struct MpiListener {
    window: u64,
}

impl MpiListener {
    /// A listener whose channel streams with `window` messages in flight.
    pub fn new(window: u64) -> MpiListener {
        MpiListener { window }
    }
}

impl Listener for MpiListener {
    fn describe(&self) -> Value {
        // Which rank to talk to; the engine sends this to the other rank.
        let rank = SLOT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|m| m.rank());
        json!({ "rank": rank })
    }

    fn accept(self: Box<Self>, _timeout: Duration) -> Result<Connected> {
        // The hello is bounded by the worker's watchdog, not `_timeout`:
        // MPI calls cannot time out by themselves.
        // The peer is whichever rank greets first: in a two-rank sweep the
        // other one; among the ranks of a matrix, the one measuring against
        // this rank now (the others are busy in pairs of their own).
        let mpi = take_for_channel()?;
        let mut hello = [0u8; 8];
        let peer = match mpi.recv_any(&mut hello, HELLO_TAG) {
            Ok(p) => p,
            Err(e) => {
                park(mpi);
                return Err(anyhow::Error::new(e).context("no hello from the other rank"));
            }
        };
        let ep = MpiEndpoint::new(mpi, peer, self.window);
        if &hello != HELLO {
            bail!("the other rank sent a garbled hello: {hello:?}");
        }
        Ok(Connected {
            settings: ep.settings(),
            endpoint: Box::new(ep),
            warnings: Vec::new(),
        })
    }
}

/// The connecting rank's side of the set-up.
pub fn connect(description: &Value, window: u64) -> Result<Connected> {
    let peer = description
        .get("rank")
        .and_then(Value::as_u64)
        .context("the peer sent no MPI rank")?;
    let mpi = take_for_channel()?;
    if peer as usize == mpi.rank() || peer as usize >= mpi.size() {
        let (rank, size) = (mpi.rank(), mpi.size());
        park(mpi);
        bail!("the peer is rank {peer}, but this is rank {rank} of {size}");
    }
    let ep = MpiEndpoint::new(mpi, peer as usize, window);
    ep.mpi
        .send(HELLO, ep.peer, HELLO_TAG)
        .context("cannot greet the other rank")?;
    Ok(Connected {
        settings: ep.settings(),
        endpoint: Box::new(ep),
        warnings: Vec::new(),
    })
}
