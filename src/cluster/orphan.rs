//! No stray remote processes: a wulf started on a node through a remote
//! shell for one pair sweep (`wulf serve --once`, `wulf sweep --peer`, see
//! [`super::pair`]) exits as soon as the shell's session closes, instead
//! of lingering until its own timeouts when the coordinator is killed.
//!
//! The coordinator keeps the remote shell's stdin open for the life of the
//! command and asks for this watch through [`EXIT_ON_STDIN_EOF_ENV`]; ssh
//! (and a lab's remote shell) turn the coordinator's end into end-of-file
//! on the remote process's stdin, which a thread of that process waits
//! for. A process started any other way does not watch its stdin.

use std::io::{Read, Write};

/// Environment variable (set to `1`) that makes a wulf exit when its
/// stdin reaches end-of-file.
pub const EXIT_ON_STDIN_EOF_ENV: &str = "WULF_EXIT_ON_STDIN_EOF";

/// Exit code of a process whose remote shell closed: its coordinator is
/// gone (as a lost peer, 3).
const ORPHANED_EXIT_CODE: i32 = 3;

/// Start the watch when [`EXIT_ON_STDIN_EOF_ENV`] asks for it (and take
/// the variable out of the environment, so nothing this process starts
/// inherits it).
pub fn exit_when_stdin_closes_if_asked() {
    if std::env::var_os(EXIT_ON_STDIN_EOF_ENV).is_none_or(|v| v != "1") {
        return;
    }
    std::env::remove_var(EXIT_ON_STDIN_EOF_ENV);
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 64];
        // Bounded by the other end: the remote shell's session, which
        // ends at the latest with the coordinator.
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        // Not eprintln: stderr most likely went with the shell, and a
        // failed write must not stop the exit.
        let _ = writeln!(
            std::io::stderr(),
            "wulf: the remote shell that started this process closed: exiting"
        );
        std::process::exit(ORPHANED_EXIT_CODE);
    });
}
