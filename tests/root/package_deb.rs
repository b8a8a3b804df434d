//! The Debian package, end to end: scripts/build-deb packages the binary
//! these tests run (built by `scripts/test`, profile ci, or `cargo test
//! --release`) with cargo-deb, dpkg installs it, the
//! installed wulf answers `--version`, its man page renders with `man -l`,
//! its bash completion loads, it runs a quick sweep, and dpkg removes it.
//!
//! It changes the machine (dpkg), so it needs root and cargo-deb and is
//! skipped with a message otherwise, unless WULF_REQUIRE_PACKAGE=1 (set by
//! .ci/run), where that fails.

use crate::common;
use common::*;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const INSTALLED: &str = "/usr/bin/wulf";

#[test]
fn package_builds_installs_runs_and_removes() {
    if !package_test_possible() {
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let built = Command::new(format!("{root}/scripts/build-deb"))
        .args(["--no-build", "--profile", profile().expect("checked")])
        .output()
        .unwrap();
    assert!(built.status.success(), "build-deb: {}", stderr(&built));
    let stdout = String::from_utf8_lossy(&built.stdout);
    let printed = stdout.lines().last().unwrap_or("").trim();
    assert!(
        printed.ends_with(&format!("/wulf_{}_amd64.deb", env!("CARGO_PKG_VERSION"))),
        "build-deb printed {stdout:?}"
    );
    // Relative to the repository unless CARGO_TARGET_DIR made it absolute.
    let deb = Path::new(root).join(printed);

    let _installed = Installed::new(&deb.display().to_string());
    let version = Command::new(INSTALLED).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("wulf {}", env!("CARGO_PKG_VERSION"))
    );

    let page = "/usr/share/man/man1/wulf-sweep.1.gz";
    let man = Command::new("man")
        .args(["-l", page])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(man.status.success(), "man -l {page}: {}", stderr(&man));
    assert!(
        text.contains("wulf-sweep") && text.contains("--budget"),
        "{text}"
    );
    assert!(Path::new("/usr/share/man/man1/wulf.1.gz").is_file());

    let completion = Command::new("bash")
        .args([
            "-c",
            "source /usr/share/bash-completion/completions/wulf && complete -p wulf",
        ])
        .output()
        .unwrap();
    assert!(completion.status.success(), "{}", stderr(&completion));
    for f in [
        "/usr/share/zsh/vendor-completions/_wulf",
        "/usr/share/fish/vendor_completions.d/wulf.fish",
        "/usr/share/doc/wulf/results-schema.md",
        "/usr/share/wulf/reframe/wulf_checks.py",
    ] {
        assert!(Path::new(f).is_file(), "{f} is not installed");
    }

    let dir = tempdir();
    let json = file(&dir, "r.json");
    let sweep = Command::new(INSTALLED)
        .args(["sweep", "unix", "--sizes", "1,4Ki", "--no-perturb"])
        .args(QUICK)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(sweep.status.success(), "{}", stderr(&sweep));
    let r = common::json(&json);
    assert_eq!(r["complete"], true);
    assert_eq!(r["points"].as_array().map(Vec::len), Some(2));

    drop(_installed);
    assert!(!Path::new(INSTALLED).exists(), "dpkg -r left {INSTALLED}");
}

/// The Cargo profile the binary under test was built with (`ci`,
/// `release`), from its directory: the package holds that very binary.
fn profile() -> Option<&'static str> {
    Path::new(wulf_bin()).parent()?.file_name()?.to_str()
}

/// Root, an optimised build (the package holds the binary these tests
/// run; not a debug build, which would be slow and huge), cargo-deb
/// and no wulf package installed already (the test would replace and then
/// remove someone's); says why not, or fails under WULF_REQUIRE_PACKAGE.
fn package_test_possible() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let release = matches!(profile(), Some("release" | "ci"));
    let cargo_deb = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    let taken = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "wulf"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).ends_with(" installed"));
    let why = if !root {
        "not root (dpkg installs the package)"
    } else if !release {
        "not an optimised build (run scripts/test, or cargo test --release)"
    } else if !cargo_deb {
        "cargo-deb is not installed (scripts/install-test-deps)"
    } else if taken {
        "a wulf package is installed on this machine already"
    } else {
        return true;
    };
    if std::env::var_os("WULF_REQUIRE_PACKAGE").is_some_and(|v| v == "1") {
        panic!("the package test is required (WULF_REQUIRE_PACKAGE=1) but cannot run: {why}");
    }
    eprintln!("SKIPPED: the package test: {why}");
    false
}

/// The package, installed; removed with `dpkg -r` when dropped, also when
/// an assertion failed half-way.
struct Installed;

impl Installed {
    fn new(deb: &str) -> Installed {
        // Minimal Docker images tell dpkg to leave man pages and docs out
        // (path-exclude in /etc/dpkg/dpkg.cfg.d/); options on the command
        // line come after the configuration's, so these bring wulf's back.
        let out = dpkg(&[
            "--path-include=/usr/share/man/man1/wulf*",
            "--path-include=/usr/share/doc/wulf/*",
            "-i",
            deb,
        ]);
        assert!(out.status.success(), "dpkg -i {deb}: {}", stderr(&out));
        Installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let out = dpkg(&["-r", "wulf"]);
        if !out.status.success() && !std::thread::panicking() {
            panic!("dpkg -r wulf: {}", stderr(&out));
        }
    }
}

/// dpkg, waiting up to two minutes for its lock: another apt-get or dpkg
/// on the machine (an install-test-deps run) holds it while it works.
fn dpkg(args: &[&str]) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = Command::new("dpkg")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .unwrap();
        if out.status.success() || !stderr(&out).contains("lock") || Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
