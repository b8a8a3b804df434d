//! The message-passing libraries wulf loads at run time (UCX, libfabric):
//! whether they are installed, skipping or failing as CI requires, and
//! their structures' layout against the installed headers.

use super::tempdir;

/// Whether libucp is installed (else skip, or fail under CI).
pub fn have_ucx() -> bool {
    have_library(
        "libucp.so.0",
        "WULF_REQUIRE_UCX",
        "UCX is not installed (apt install libucx0; scripts/install-test-deps)",
    )
}

/// Whether the library `soname` is in the system's library folders; where
/// not, a `SKIPPED:` line says `missing`, or, with `require` set to 1
/// (CI), the test fails saying it.
fn have_library(soname: &str, require: &str, missing: &str) -> bool {
    let present = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .any(|d| std::path::Path::new(d).join(soname).exists());
    if !present {
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "{missing} but {require}=1"
        );
        eprintln!("SKIPPED: {missing}");
    }
    present
}

/// Whether libfabric is installed (libfabric.so.1), with a line saying
/// why not; with WULF_REQUIRE_OFI=1 (CI) its absence fails instead.
pub fn have_ofi() -> bool {
    have_library(
        "libfabric.so.1",
        "WULF_REQUIRE_OFI",
        "libfabric is not installed (apt install libfabric1; scripts/install-test-deps)",
    )
}

/// Assert that hand-written FFI structures match a C library's headers: a
/// C program with `includes` prints each `(C expression, Rust value)`
/// pair's expression (a size, an offset, a constant), compiled with `cc`,
/// and every value must equal Rust's.
pub fn assert_c_layout(includes: &str, layout: &[(&str, usize)]) {
    let prints: String = layout
        .iter()
        .map(|(c, _)| format!("  printf(\"%zu\\n\", (size_t)({c}));\n"))
        .collect();
    let program = format!(
        "#include <stdio.h>\n#include <stddef.h>\n{includes}int main(void) {{\n{prints}  return 0;\n}}\n"
    );
    let dir = tempdir();
    let (src, exe) = (dir.path().join("l.c"), dir.path().join("l"));
    std::fs::write(&src, program).unwrap();
    let cc = std::process::Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = std::process::Command::new(&exe).output().unwrap();
    let c_values: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    for ((what, rust), c) in layout.iter().zip(&c_values) {
        assert_eq!(rust, c, "{what}: Rust {rust}, C {c}");
    }
    assert_eq!(c_values.len(), layout.len());
}
