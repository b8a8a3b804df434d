//! Error kinds that decide wulf's exit code.
//!
//! Exit codes (documented in docs/reference.md):
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | error: I/O, a failed integrity check, a failed verification, bad input file |
//! | 2 | invalid command line (also clap's own code) |
//! | 3 | peer problem: unreachable, timed out, died, busy, other version |
//! | 4 | `compare --fail-if-slower`: a regression beyond the threshold |
//! | 130 | interrupted (Ctrl-C / SIGTERM / SIGHUP); what was measured is saved, marked incomplete; what the command started is ended (`exec::owned`) |

use thiserror::Error;

/// An error that carries its own exit code. Other errors exit with 1.
#[derive(Debug, Error)]
pub enum WulfError {
    /// The command line is wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The peer could not be reached, answered wrongly, timed out or died (exit 3).
    #[error("{0}")]
    Peer(String),
    /// A comparison found a regression beyond the threshold (exit 4).
    #[error("{0}")]
    Regression(String),
    /// A comparison gate could neither pass nor fail: no slowdown shown,
    /// but the data are too noisy to exclude one beyond the threshold
    /// (exit 5).
    #[error("{0}")]
    Inconclusive(String),
    /// The user interrupted the run (exit 130).
    #[error("interrupted")]
    Interrupted,
    /// A wulf run inside a lab node failed and has said why itself: exit
    /// with its code and print nothing more.
    #[error("the command in the lab exited with code {0}")]
    Relayed(i32),
}

impl WulfError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            WulfError::Usage(_) => 2,
            WulfError::Peer(_) => 3,
            WulfError::Regression(_) => 4,
            WulfError::Inconclusive(_) => 5,
            WulfError::Interrupted => 130,
            WulfError::Relayed(code) => *code,
        }
    }
}

/// Exit code for any error: the [`WulfError`] code if one is in the chain, else 1.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<WulfError>())
        .map(WulfError::exit_code)
        .unwrap_or(1)
}

/// An error saying `msg` that exits with `code`, as far as the codes of
/// usage (2) and peer (3) errors go; any other code exits with 1. For
/// errors reported across a process boundary or summed up in one line,
/// which keep the code of what went wrong.
pub fn with_exit_code(code: i32, msg: impl Into<String>) -> anyhow::Error {
    match code {
        2 => usage(msg),
        3 => peer(msg),
        _ => anyhow::Error::msg(msg.into()),
    }
}

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    WulfError::Usage(msg.into()).into()
}

/// Shorthand for a peer error.
pub fn peer(msg: impl Into<String>) -> anyhow::Error {
    WulfError::Peer(msg.into()).into()
}
