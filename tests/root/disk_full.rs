//! A full disk is an error with a clear message, and leaves no half-written
//! result behind (results are written to a temporary file, then renamed).

use crate::common;
use common::*;

use std::process::Command;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn full_disk_is_reported_and_leaves_nothing_behind() {
    let dir = tempdir();
    let mnt = dir.path().join("tiny");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (not root?)");
        return;
    }
    let _guard = Mount(mnt.clone());
    let out = mnt.join("r.json");
    let mut args = vec![
        "sweep",
        "unix",
        "--sizes",
        "1:4Ki",
        "--json",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(QUICK);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("No space left") || e.contains("cannot write"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(
        std::fs::read_dir(&mnt).unwrap().count(),
        0,
        "no partial or temporary file"
    );
}
