//! `wulf serve`.

use crate::cli::ServeArgs;
use crate::peer::server::{serve, ServeOptions};

/// Run the server.
pub fn execute(args: &ServeArgs) -> anyhow::Result<()> {
    // Ctrl-C ends a server at once: there is nothing of its own to save.
    crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
    serve(&ServeOptions {
        bind: args.bind,
        port: args.port,
        max_bytes: args.max_size,
        once: args.once,
        announce: args.announce,
    })
}
