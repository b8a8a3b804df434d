//! `wulf serve`.

use crate::cli::ServeArgs;
use crate::peer::auth::Secret;
use crate::peer::server::{serve, LocalTransports, ServeOptions, SessionPolicy};

/// Run the server.
pub fn execute(args: &ServeArgs) -> anyhow::Result<()> {
    // Ctrl-C ends a server at once: there is nothing of its own to save.
    crate::EXIT_ON_SIGNAL.store(true, std::sync::atomic::Ordering::Relaxed);
    let secret = Secret::from_file_or_env(args.secret_file.as_deref())
        .map_err(|e| crate::error::usage(format!("{e:#}")))?;
    // The local peer a sweep starts for itself serves only its parent.
    let policy = if args.once {
        SessionPolicy {
            max_bytes: args.max_size,
            secret,
            ..SessionPolicy::local_peer()
        }
    } else {
        SessionPolicy {
            max_bytes: args.max_size,
            max_timeout: args.max_timeout,
            max_session: args.max_session,
            handshake_limit: args.max_handshake,
            local_transports: LocalTransports::LoopbackClients,
            allow_pinning: args.allow_pinning,
            allow_load: args.allow_load,
            allow_lean_remote: args.allow_lean,
            max_memory_bytes: args.max_memory,
            secret,
        }
    };
    serve(&ServeOptions {
        bind: args.bind,
        port: args.port,
        policy,
        allow: args.allow.clone(),
        max_tests: 1,
        once: args.once,
        announce: args.announce,
        log: !args.once,
    })
}
