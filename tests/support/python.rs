//! The Python virtual environment of scripts/test-venv (ReFrame,
//! prometheus-client from PyPI, pinned), for the tests that run Python
//! tools against wulf. Included with `#[path]` by the tests that need it.

use std::path::{Path, PathBuf};

/// The venv, when scripts/install-test-deps has made it; otherwise says
/// why the test is skipped, or fails when WULF_REQUIRE_PYTHON=1
/// (scripts/test, which has just made it).
pub fn venv() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv");
    // Written last by scripts/test-venv: a half-made venv has none.
    if venv.join(".pins").is_file() {
        return Some(venv);
    }
    let why = format!(
        "no Python venv at {} (scripts/install-test-deps or scripts/test-venv makes it)",
        venv.display()
    );
    if std::env::var("WULF_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("WULF_REQUIRE_PYTHON=1: {why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}
