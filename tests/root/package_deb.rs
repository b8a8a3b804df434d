//! The Debian package, end to end: scripts/build-deb packages the binary
//! these tests run (built by `scripts/test`, profile ci, or `cargo test
//! --release`) with cargo-deb, dpkg installs it, the
//! installed wulf answers `--version`, its man page renders with `man -l`,
//! its bash completion loads, it runs a quick sweep, and dpkg removes it.
//! Before installing, lintian (a distribution's checker) finds no error or
//! warning at its default level, and Depends holds every package
//! dpkg-shlibdeps asks for the binary; once installed, the wulf-serve unit
//! is not enabled, and `systemd-analyze verify` accepts it; under a running
//! systemd it starts with a secret and answers a sweep.
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
    lint(&deb);
    depends_cover_shlibs(&deb);
    suggests_what_wulf_can_use(&deb);

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
    every_result_schema_is_installed();

    let dir = tempdir();
    let json = file(&dir, "r.json");
    let sweep = Command::new(INSTALLED)
        .args(["sweep", "unix", "--sizes", "1,4Ki", "--no-perturb"])
        // Both sizes are counted: room for them (the budget is a deadline).
        .args(common::EVERY_SIZE)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(sweep.status.success(), "{}", stderr(&sweep));
    let r = common::json(&json);
    assert_eq!(r["complete"], true);
    assert_eq!(r["points"].as_array().map(Vec::len), Some(2));

    service_unit();

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

/// lintian at its default level: no error (E:) or warning (W:) line. It
/// says on stderr that root should not run it; it is not a finding.
fn lint(deb: &Path) {
    let Ok(out) = Command::new("lintian").arg(deb).output() else {
        if std::env::var_os("WULF_REQUIRE_PACKAGE").is_some_and(|v| v == "1") {
            panic!("lintian is not installed (scripts/install-test-deps)");
        }
        eprintln!("SKIPPED: lintian is not installed (scripts/install-test-deps): the package is not linted");
        return;
    };
    let said = String::from_utf8_lossy(&out.stdout);
    let findings: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("E: ") || l.starts_with("W: "))
        .collect();
    assert!(
        findings.is_empty(),
        "lintian: {findings:#?}\n{}",
        stderr(&out)
    );
}

/// Every package dpkg-shlibdeps names for the packaged binary is in the
/// package's Depends (cargo-deb's `$auto` leaves libgcc-s1 out).
fn depends_cover_shlibs(deb: &Path) {
    let dir = tempdir();
    let extracted = dir.path().join("x");
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(deb)
        .arg(&extracted)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // dpkg-shlibdeps wants a debian/control in its working directory.
    std::fs::create_dir_all(dir.path().join("debian")).unwrap();
    std::fs::write(dir.path().join("debian/control"), "Source: wulf\n").unwrap();
    let shlibs = Command::new("dpkg-shlibdeps")
        .arg("-O")
        .arg(extracted.join("usr/bin/wulf"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(shlibs.status.success(), "{}", stderr(&shlibs));
    let want = String::from_utf8_lossy(&shlibs.stdout);
    let want = want.trim().trim_start_matches("shlibs:Depends=");
    let depends = Command::new("dpkg-deb")
        .arg("-f")
        .arg(deb)
        .arg("Depends")
        .output()
        .unwrap();
    let depends = String::from_utf8_lossy(&depends.stdout);
    let names = |list: &str| -> Vec<String> {
        list.split(',')
            .filter_map(|d| d.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let have = names(&depends);
    for package in names(want) {
        assert!(
            have.contains(&package),
            "Depends {depends:?} lacks {package} ({want})"
        );
    }
}

/// The installed unit: not enabled by the package, accepted by systemd;
/// started where systemd runs this machine.
fn service_unit() {
    let unit = "/usr/lib/systemd/system/wulf-serve.service";
    assert!(Path::new(unit).is_file(), "{unit} is not installed");
    let enabled = Path::new("/etc/systemd/system/multi-user.target.wants/wulf-serve.service");
    assert!(!enabled.exists(), "the package enabled the unit");
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: systemd-analyze is not installed: the installed unit is not verified");
        return;
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no", unit])
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success() && said.trim().is_empty(), "{said}");
    if !Path::new("/run/systemd/system").is_dir() {
        eprintln!(
            "SKIPPED: systemd is not running this machine: wulf-serve is verified, not started"
        );
        return;
    }
    start_the_service();
}

/// Under a running systemd: without its secret file the unit does not
/// start; with one it serves a sweep that gives the same secret.
fn start_the_service() {
    let secret = Path::new("/etc/wulf/serve.secret");
    if secret.exists() {
        eprintln!(
            "SKIPPED: {} exists (someone's): the unit is not started",
            secret.display()
        );
        return;
    }
    let systemctl = |args: &[&str]| Command::new("systemctl").args(args).output().unwrap();
    let refused = systemctl(&["start", "wulf-serve"]);
    assert!(
        !refused.status.success(),
        "wulf-serve started without a secret"
    );
    std::fs::create_dir_all("/etc/wulf").unwrap();
    std::fs::write(secret, "a test secret\n").unwrap();
    std::fs::set_permissions(secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let started = systemctl(&["start", "wulf-serve"]);
    let dir = tempdir();
    let secret_copy = file(&dir, "secret");
    std::fs::copy(secret, &secret_copy).unwrap();
    let mut sweep = None;
    // The server listens a moment after systemd says it started.
    for _ in 0..20 {
        let out = Command::new(INSTALLED)
            .args(["sweep", "tcp", "--sizes", "1", "--peer", "127.0.0.1"])
            .args(QUICK)
            .arg("--secret-file")
            .arg(&secret_copy)
            .output()
            .unwrap();
        if out.status.success() {
            sweep = Some(out);
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let status = systemctl(&["status", "--no-pager", "wulf-serve"]);
    let _ = systemctl(&["stop", "wulf-serve"]);
    let _ = std::fs::remove_file(secret);
    let _ = std::fs::remove_dir("/etc/wulf");
    assert!(started.status.success(), "{}", stderr(&started));
    assert!(
        sweep.is_some(),
        "no sweep against the service: {}",
        String::from_utf8_lossy(&status.stdout)
    );
}

/// The packages wulf uses where installed (MPI, PVM, HPL, the lab's
/// tools) are all in the package's Suggests.
fn suggests_what_wulf_can_use(deb: &Path) {
    let out = Command::new("dpkg-deb")
        .arg("-f")
        .arg(deb)
        .arg("Suggests")
        .output()
        .unwrap();
    let suggests = String::from_utf8_lossy(&out.stdout);
    let have: Vec<&str> = suggests
        .split(',')
        .filter_map(|d| d.split_whitespace().next())
        .collect();
    for package in [
        "openmpi-bin",
        "mpich",
        "pvm",
        "hpcc",
        "iproute2",
        "nftables",
    ] {
        assert!(
            have.contains(&package),
            "Suggests {suggests:?} lacks {package}"
        );
    }
}

/// Every JSON Schema in docs/schema/ is installed beside the schema docs,
/// byte for byte.
fn every_result_schema_is_installed() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
    let mut count = 0;
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path.file_name().unwrap();
        let installed = Path::new("/usr/share/doc/wulf/schema").join(name);
        let want = std::fs::read(&path).unwrap();
        let got = std::fs::read(&installed)
            .unwrap_or_else(|e| panic!("{} is not installed: {e}", installed.display()));
        assert_eq!(
            got,
            want,
            "{} differs from {}",
            installed.display(),
            path.display()
        );
        count += 1;
    }
    assert!(count >= 6, "only {count} schemas in {}", source.display());
}
