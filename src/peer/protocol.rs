//! Control messages: one JSON object per line over the control connection.
//!
//! The first message each way is [`Hello`], whose shape never changes, so
//! that two different wulf versions can always tell each other apart and
//! say so. Lines are capped at [`MAX_LINE_BYTES`]: a client sending garbage
//! without newlines cannot make the server allocate without bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use anyhow::{bail, Context, Result};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::result::Mode;
use crate::transport::ChannelOptions;

/// Version of the control protocol. Peers must agree on the tool version
/// exactly; this number only lets a future wulf explain a mismatch better.
pub const PROTOCOL_VERSION: u32 = 2;

/// Longest control line accepted, in bytes.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

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
}

/// What a block does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockKind {
    /// A timed block in the sweep's mode.
    Timed,
    /// Individually timed round trips for tail latency (ping-pong).
    Tails,
    /// Pattern-checked transfers in the sweep's mode, untimed.
    Integrity,
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
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
    /// End of the test.
    Bye,
}

/// Server to client.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "lowercase", deny_unknown_fields)]
// Control messages are few and off the timing loops: their size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// The server accepts this client (answer to its Hello).
    Welcome,
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
    },
    /// The server is serving another client.
    Busy,
    /// The request failed.
    Error {
        /// What went wrong, for the user.
        message: String,
    },
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

    /// Receive one message.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T> {
        let mut line = String::new();
        let n = (&mut self.reader)
            .take(MAX_LINE_BYTES)
            .read_line(&mut line)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    anyhow::anyhow!("no answer on the control connection (timeout)")
                }
                std::io::ErrorKind::InvalidData => anyhow::anyhow!("control message is not UTF-8"),
                _ => anyhow::Error::new(e).context("control connection failed"),
            })?;
        if n == 0 {
            bail!("the other side closed the control connection");
        }
        if !line.ends_with('\n') {
            bail!("control message longer than {MAX_LINE_BYTES} bytes");
        }
        serde_json::from_str(&line).with_context(|| {
            let shown: String = line.trim_end().chars().take(80).collect();
            format!("not a wulf control message: {shown:?}")
        })
    }
}
