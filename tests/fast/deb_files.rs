//! The packaging files a distribution reads, checked without building a
//! package (tests/root/package_deb.rs builds, lints and installs one):
//! the licence files and their SPDX expression, debian/changelog's version,
//! and the `wulf-serve` systemd unit, verified by `systemd-analyze verify`
//! where systemd is installed (skipped with a line otherwise).

use crate::common;
use common::*;

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn licences_are_shipped_and_named_alike_everywhere() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    assert!(read("LICENSE-MIT").contains("Permission is hereby granted, free of charge"));
    assert!(
        read("LICENSE-APACHE").contains("Apache License\n                           Version 2.0")
    );
    let copyright = read("debian/copyright");
    assert!(copyright.starts_with(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
    ));
    assert!(copyright.contains("SPDX-License-Identifier: MIT OR Apache-2.0"));
    for para in [
        "License: MIT or Apache-2.0\n",
        "License: MIT\n",
        "License: Apache-2.0\n",
    ] {
        assert!(copyright.contains(para), "no {para:?} in debian/copyright");
    }
    // The short description (the package's synopsis) fits one line.
    assert!(env!("CARGO_PKG_DESCRIPTION").len() <= 80);
}

#[test]
fn the_changelog_is_this_version() {
    let changelog = read("debian/changelog");
    let first = changelog.lines().next().unwrap_or("");
    assert_eq!(
        first,
        format!(
            "wulf ({}) unstable; urgency=medium",
            env!("CARGO_PKG_VERSION")
        ),
        "debian/changelog's top entry must be the version being packaged"
    );
    let trailer = changelog
        .lines()
        .find(|l| l.starts_with(" -- "))
        .unwrap_or("");
    assert!(!trailer.contains(".invalid>"), "{trailer}");
}

#[test]
fn the_service_unit_is_hardened_and_needs_its_secret() {
    let unit = read("debian/wulf-serve.service");
    let keys: Vec<&str> = unit
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .collect();
    for want in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "LoadCredential=secret:/etc/wulf/serve.secret",
        "ExecStart=/usr/bin/wulf serve --secret-file ${CREDENTIALS_DIRECTORY}/secret",
    ] {
        assert!(keys.contains(&want), "no {want} in the unit: {keys:?}");
    }
    // Capabilities only in comments, for the lean stacks.
    assert!(unit.contains("CAP_NET_RAW"));
    assert!(!keys.iter().any(|k| k.contains("CAP_")), "{keys:?}");
    // The secret never travels in the environment.
    assert!(!keys.iter().any(|k| k.contains("WULF_SECRET")));
}

#[test]
fn systemd_accepts_the_service_unit() {
    let have = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIPPED: systemd-analyze is not installed: the unit is not verified");
        return;
    }
    let unit = read("debian/wulf-serve.service");
    // verify exits 0 on an unknown key, only saying so: any word is a fault.
    let said = verify(&unit);
    assert!(said.as_ref().is_ok_and(|s| s.trim().is_empty()), "{said:?}");
    // The check can fail: a misspelt key is reported.
    let said = verify(&unit.replace("NoNewPrivileges", "NoNewPrivilege"));
    assert!(
        said.as_ref().is_ok_and(|s| s.contains("NoNewPrivilege")),
        "{said:?}"
    );
}

/// What `systemd-analyze verify` says of the unit `text`, installed with
/// the binary under test in place of /usr/bin/wulf (verify checks that
/// ExecStart's program exists); an error with its words when it fails.
fn verify(text: &str) -> Result<String, String> {
    let dir = tempdir();
    let unit = file(&dir, "wulf-serve.service");
    std::fs::write(&unit, text.replace("/usr/bin/wulf", wulf_bin())).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    if out.status.success() {
        Ok(said)
    } else {
        Err(said)
    }
}
