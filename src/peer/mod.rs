//! The peer: the control protocol between the measuring side (client) and
//! the process at the other end of the data channel (server).
//!
//! The client owns every parameter: after a versioned handshake it sends the
//! whole test set-up, then one command per block of operations. The server
//! runs each block's mirror loop and answers with its own CPU time and, in
//! streaming mode, its own timing. So `wulf serve` needs no options beyond
//! where to listen, and a local sweep is the same code with a peer process
//! the client starts itself.

pub mod admission;
pub mod auth;
pub mod client;
pub mod penalty;
pub mod protocol;
pub mod server;
mod session;
pub mod sink;
mod test_run;
pub mod watchdog;

/// Default control port of `wulf serve`.
pub const DEFAULT_PORT: u16 = 9137;
