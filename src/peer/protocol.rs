//! Control messages: one JSON object per line over the control connection.
//!
//! The first message each way is [`Hello`], whose shape never changes, so
//! that two different wulf versions can always tell each other apart and
//! say so. Lines are capped at [`MAX_LINE_BYTES`] (a server reads its
//! clients' lines with the smaller [`MAX_REQUEST_BYTES`]): a client sending
//! garbage without newlines cannot make the server allocate without bound.
//!
//! After the Hellos the server sends [`Reply::Challenge`] with a fresh
//! nonce, the client answers [`Request::Auth`] with its own nonce and, when
//! it has the shared secret, its proof; the server's [`Reply::Welcome`]
//! carries the server's proof in turn (see [`super::auth`]). Only then is
//! the server's one test slot taken (or [`Reply::Busy`] sent).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

pub use crate::measure::loops::BlockKind;
use crate::result::Mode;
use crate::transport::ChannelOptions;

/// Version of the control protocol. Peers must agree on the tool version
/// exactly; this number only lets a future wulf explain a mismatch better.
///
/// 4: `Setup.loads`, `Request::StopLoads` and `Reply::Loads`
/// (`--load-peer`), all used only when the client asks for a load.
/// 5: `Auth.sink`, `Reply::Sink` and `Reply::SinkDone` (`--load network`
/// with `--peer`: a sink session instead of a test).
/// 6: `Reply::Done.run_delay_ns` (the server's end of a block was kept
/// off its CPU so long: the sweep's clean blocks).
/// 7: a stream block ends with one byte from the receiver on the data
/// channel (`measure::loops`), which the sender waits for.
/// 8: `Reply::Done.helper_cpu_ns` (how long the transport's helper
/// processes on the server's end ran in the block: credited against the
/// ends' run delay).
pub const PROTOCOL_VERSION: u32 = 8;

/// Longest control line accepted, in bytes (the server's replies carry a
/// whole machine fingerprint).
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// Longest line a server accepts from a client: requests are a few hundred
/// bytes, so a connection costs the server at most this much memory.
pub const MAX_REQUEST_BYTES: u64 = 16 << 10;

/// Identifies this magic in every Hello.
pub const MAGIC: &str = "wulf";

/// First message in each direction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    /// Always [`MAGIC`].
    pub magic: String,
    /// The sender's wulf version.
    pub tool_version: String,
    /// The sender's [`PROTOCOL_VERSION`].
    pub protocol: u32,
}

impl Hello {
    /// This wulf's Hello.
    pub fn ours() -> Hello {
        Hello {
            magic: MAGIC.into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            protocol: PROTOCOL_VERSION,
        }
    }
}

/// Everything the server needs to set up a test.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Transport name.
    pub transport: String,
    /// Data channel options.
    pub channel: ChannelOptions,
    /// Largest message of the sweep in bytes.
    pub max_bytes: u64,
    /// Rotate buffers through a pool larger than the last-level cache.
    pub nocache: bool,
    /// Buffer misalignment in bytes.
    pub offset_bytes: u64,
    /// CPU to pin the server's measuring thread to.
    pub cpu: Option<usize>,
    /// Background load the server runs for the length of the test
    /// (`--load` text, `--load-peer`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loads: Option<String>,
}

/// A client's request for a sink: the server accepts one TCP stream from
/// it and reads (and discards) what arrives, at most this fast and this
/// long, whichever limit of its own is lower.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkAsk {
    /// Rate the stream runs at, bit/s (None: as fast as the server lets it).
    pub rate_bits_per_s: Option<u64>,
    /// Longest the stream runs, seconds (the client closes it earlier when
    /// its test ends).
    pub seconds: u64,
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// Answer to [`Reply::Challenge`]: the client's nonce and, when it has
    /// the shared secret, its proof.
    Auth {
        /// Fresh random nonce of the client, hex.
        nonce: String,
        /// [`super::auth::Secret::prove`] as the client, or None without a
        /// secret.
        proof: Option<String>,
        /// Ask for a sink session (a network load's stream) instead of a
        /// test: asked here, before the server's one test slot is taken,
        /// so that the load never keeps the measured test out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sink: Option<SinkAsk>,
    },
    /// Prepare the data channel.
    Setup(Setup),
    /// Run one block: `repeats` operations plus one untimed primer.
    Block {
        /// Pattern.
        mode: Mode,
        /// What the block is for.
        kind: BlockKind,
        /// Message size.
        bytes: u64,
        /// Operations after the primer.
        repeats: u64,
    },
    /// Stop the background load and report what it achieved (answered
    /// with [`Reply::Loads`]); only after a set-up with loads.
    #[serde(rename = "stop_loads")]
    StopLoads,
    /// End of the test.
    Bye,
}

/// Server to client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "lowercase", deny_unknown_fields)]
// Control messages are few and off the timing loops: their size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// Answer to the client's Hello: a nonce for the client's proof.
    Challenge {
        /// Fresh random nonce of the server, hex.
        nonce: String,
        /// Whether the server requires the client to prove the secret.
        secret_required: bool,
    },
    /// The server accepts this client and will run its test.
    Welcome {
        /// The server's proof (when the client sent one and the server has
        /// the secret).
        proof: Option<String>,
    },
    /// The data channel is listening; connect with this description.
    Listening {
        /// Transport-specific description (port, path...).
        description: serde_json::Value,
        /// The server's machine.
        host: crate::sys::Host,
    },
    /// The data channel is connected; the server's settings.
    Ready {
        /// Settings in effect on the server's end.
        settings: serde_json::Map<String, serde_json::Value>,
        /// Server-side warnings.
        warnings: Vec<String>,
        /// CPU the server pinned to, if any.
        cpu: Option<usize>,
    },
    /// A block finished.
    Done {
        /// Server CPU time in user mode during the block's timed part, ns.
        user_ns: u64,
        /// Server CPU time in the kernel during the block's timed part, ns.
        sys_ns: u64,
        /// Server-side time of the timed part (streaming receiver), ns.
        elapsed_ns: u64,
        /// How long the server's thread waited for a CPU during the timed
        /// part, ns (schedstat's run delay; absent where its kernel does
        /// not keep it). Protocol version 6.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_delay_ns: Option<u64>,
        /// How long the transport's helper processes on the server's end
        /// (PVM's daemon) were on a CPU during the timed part, ns; absent
        /// where it has none. Protocol version 8.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        helper_cpu_ns: Option<u64>,
    },
    /// The background load stopped: what each load achieved on the server.
    Loads {
        /// One record per load kind.
        loads: Vec<crate::load::LoadRecord>,
    },
    /// The sink listens on this TCP port of the control connection's
    /// address, for the client's address only.
    Sink {
        /// The port.
        port: u16,
        /// The rate the server reads at most, bit/s.
        rate_bits_per_s: u64,
        /// The longest the server reads, seconds.
        seconds: u64,
    },
    /// The sink ended: the payload bytes it read.
    #[serde(rename = "sink_done")]
    SinkDone {
        /// Bytes read.
        bytes: u64,
    },
    /// The server is serving another client.
    Busy,
    /// The request failed.
    Error {
        /// What went wrong, for the user.
        message: String,
    },
}

/// Longest a connection is held after an error line so that its peer can
/// read it ([`ControlChannel::close_after_error`]).
pub const LINGER: Duration = Duration::from_millis(500);

/// Most bytes read and dropped after an error line.
pub const LINGER_BYTES: usize = 64 << 10;

/// An error already sent to the peer in a [`Reply::Error`].
#[derive(Debug)]
pub struct Told(pub String);

impl std::fmt::Display for Told {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Told {}

/// Whether `e` was sent to the peer already ([`ControlChannel::refuse`]).
pub fn told(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Told>().is_some()
}

/// A line-oriented JSON channel over a TCP stream.
pub struct ControlChannel {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl ControlChannel {
    /// Wrap a connected control stream (timeouts must already be set).
    pub fn new(stream: TcpStream) -> Result<Self> {
        stream.set_nodelay(true)?;
        Ok(ControlChannel {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
        })
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.writer
    }

    /// Send one message.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<()> {
        let mut line = serde_json::to_vec(msg)?;
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .context("cannot write to the control connection")
    }

    /// Receive one message of at most `max_line_bytes`, all of it by
    /// `deadline`: a peer that trickles bytes cannot hold the connection
    /// longer than that, however often it sends one.
    pub fn recv_by<T: DeserializeOwned>(
        &mut self,
        deadline: Instant,
        max_line_bytes: u64,
    ) -> Result<T> {
        let before = self.writer.read_timeout()?;
        let got = self.read_line_by(deadline, max_line_bytes);
        self.writer.set_read_timeout(before)?;
        let line = got?;
        parse_line(&line)
    }

    fn read_line_by(&mut self, deadline: Instant, max_line_bytes: u64) -> Result<String> {
        let mut line = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("no complete control message in time (deadline)");
            }
            self.writer.set_read_timeout(Some(left))?;
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(e)),
            };
            if buf.is_empty() {
                bail!("the other side closed the control connection");
            }
            let (taken, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            line.extend_from_slice(&buf[..taken]);
            self.reader.consume(taken);
            if line.len() as u64 > max_line_bytes {
                bail!("control message longer than {max_line_bytes} bytes");
            }
            if done {
                return String::from_utf8(line).context("control message is not UTF-8");
            }
        }
    }

    /// Tell the peer `message` in a [`Reply::Error`]; the error to return,
    /// marked as told ([`told`]) so that it is not sent twice.
    pub fn refuse(&mut self, message: impl Into<String>) -> anyhow::Error {
        let message = message.into();
        let _ = self.send(&Reply::Error {
            message: message.clone(),
        });
        anyhow::Error::new(Told(message))
    }

    /// End the connection after an error line, so that the peer reads the
    /// line. Closing a socket with unread input makes the kernel send a
    /// reset, which can destroy what was sent just before (and a client
    /// that sent garbage usually has more on its way): the write side is
    /// shut first (the peer reads the line, then end of file), then what
    /// still arrives is read and dropped, at most [`LINGER_BYTES`] for at
    /// most [`LINGER`], until the peer closes too.
    pub fn close_after_error(&mut self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Write);
        let until = Instant::now() + LINGER;
        let mut drained = 0usize;
        while drained < LINGER_BYTES {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || self.writer.set_read_timeout(Some(left)).is_err() {
                return;
            }
            let n = match self.reader.fill_buf() {
                Ok([]) | Err(_) => return,
                Ok(b) => b.len(),
            };
            self.reader.consume(n);
            drained += n;
        }
    }

    /// Receive one message.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T> {
        let mut line = String::new();
        let n = (&mut self.reader)
            .take(MAX_LINE_BYTES)
            .read_line(&mut line)
            .map_err(read_error)?;
        if n == 0 {
            bail!("the other side closed the control connection");
        }
        if !line.ends_with('\n') {
            bail!("control message longer than {MAX_LINE_BYTES} bytes");
        }
        parse_line(&line)
    }
}

fn read_error(e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            anyhow::anyhow!("no answer on the control connection (timeout)")
        }
        std::io::ErrorKind::InvalidData => anyhow::anyhow!("control message is not UTF-8"),
        _ => anyhow::Error::new(e).context("control connection failed"),
    }
}

/// Decode one control line (also the fuzzing entry point: any bytes give a
/// message or an error, never a panic).
pub fn parse_line<T: DeserializeOwned>(line: &str) -> Result<T> {
    serde_json::from_str(line).with_context(|| {
        let shown: String = line.trim_end().chars().take(80).collect();
        format!("not a wulf control message: {shown:?}")
    })
}
