//! Compiling the adapter with an MPI's own compiler wrapper, once.
//!
//! The shared library goes to a cache directory, named by a hash of that
//! MPI's identity: the wrapper's path, what `mpicc -show` prints (include
//! and library paths, the library linked) and the adapter's source text. A
//! rebuilt or upgraded MPI, or a new adapter, gets a new entry; a second
//! wulf process, or two compiling at once, reuse or atomically replace the
//! same file. The cache is `$WULF_CACHE_DIR`, else `$XDG_CACHE_HOME/wulf`,
//! else `~/.cache/wulf`; the temporary directory when none of these can be
//! created. wulf loads code from it, so it must be private to the user.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::discover::{run_with_timeout, show, MpiInstall};

/// The adapter's source, compiled at run time.
pub const ADAPTER_SOURCE: &str = include_str!("adapter.c");

/// The probe's source: two ranks exchange one byte, so that a library
/// that sets up its path lazily has set it up (and reported it) before
/// exiting ([`super::probe`]).
pub const PROBE_SOURCE: &str = include_str!("probe.c");

/// Longest wait for one compilation.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

/// Where compiled adapters live.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("WULF_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("wulf")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache/wulf")))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("wulf-cache-{}", unsafe_uid())));
    base.join("mpi")
}

fn unsafe_uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// FNV-1a, 64 bits: stable across Rust versions (unlike `DefaultHasher`),
/// so cache names survive a wulf rebuild.
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A compiled adapter and the identity it was built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adapter {
    /// The shared library.
    pub library: PathBuf,
    /// What the wrapper's `-show` printed (part of the cache key).
    pub show: String,
}

/// The compiled adapter for `install`, building it if the cache has none.
/// Errors say what failed and what to install.
pub fn adapter_library(install: &MpiInstall) -> Result<Adapter, String> {
    let (dir, shown) = prepared_cache(install)?;
    let lib = cached(install, &dir, &shown, ADAPTER, "so")?;
    Ok(Adapter {
        library: lib,
        show: shown,
    })
}

/// The compiled probe program for `install` ([`PROBE_SOURCE`]), building
/// it if the cache has none.
pub fn probe_program(install: &MpiInstall) -> Result<PathBuf, String> {
    let (dir, shown) = prepared_cache(install)?;
    cached(install, &dir, &shown, PROBE, "bin")
}

/// What one cached build compiles: its source, its name and the
/// wrapper's flags.
struct Source {
    text: &'static str,
    stem: &'static str,
    flags: &'static [&'static str],
}

const ADAPTER: Source = Source {
    text: ADAPTER_SOURCE,
    stem: "adapter",
    flags: &["-shared", "-fPIC", "-O2"],
};
const PROBE: Source = Source {
    text: PROBE_SOURCE,
    stem: "probe",
    flags: &["-O2"],
};

/// The cache directory, made private, and what the wrapper's `-show`
/// printed.
fn prepared_cache(install: &MpiInstall) -> Result<(PathBuf, String), String> {
    let shown = show(&install.wrapper).map_err(|e| {
        format!(
            "{e}; is the MPI development package installed (apt-get install {})?",
            install.flavor.packages()
        )
    })?;
    let mut dir = cache_dir();
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    if made.is_err() {
        // A read-only home must not stop a measurement.
        let fallback = std::env::temp_dir().join(format!("wulf-cache-{}/mpi", unsafe_uid()));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&fallback)
            .map_err(|e| {
                format!(
                    "cannot create a cache directory ({} or {}): {e}",
                    dir.display(),
                    fallback.display()
                )
            })?;
        dir = fallback;
    }
    private(&dir)?;
    Ok((dir, shown))
}

/// The build of `source` in `dir`, named by the MPI's identity and the
/// source text, compiled when missing.
fn cached(
    install: &MpiInstall,
    dir: &Path,
    shown: &str,
    source: Source,
    ext: &str,
) -> Result<PathBuf, String> {
    let wrapper = install.wrapper.display().to_string();
    let key = fnv1a64(&[wrapper.as_bytes(), shown.as_bytes(), source.text.as_bytes()]);
    let out = dir.join(format!("{}-{key:016x}.{ext}", source.stem));
    if !out.is_file() {
        compile(install, dir, &out, shown, &source)?;
    }
    Ok(out)
}

/// wulf loads libraries from the cache, so nobody else may write there: a
/// directory of another user (a predictable name in /tmp) is refused, and
/// one of ours that others could write is made private first.
fn private(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if meta.uid() != unsafe_uid() {
        return Err(format!(
            "the cache directory {} belongs to uid {}, not to you; wulf loads the MPI adapter \
             from it, so it must be yours (or set WULF_CACHE_DIR)",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            format!(
                "cannot make the cache directory {} private: {e}",
                dir.display()
            )
        })?;
    }
    Ok(())
}

fn compile(
    install: &MpiInstall,
    dir: &Path,
    lib: &Path,
    shown: &str,
    source: &Source,
) -> Result<(), String> {
    let work = tempfile::Builder::new()
        .prefix("build-")
        .tempdir_in(dir)
        .map_err(|e| format!("cannot create a build directory in {}: {e}", dir.display()))?;
    let src = work.path().join(format!("wulf_mpi_{}.c", source.stem));
    std::fs::write(&src, source.text)
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = work.path().join(source.stem);
    let mut cmd = Command::new(&install.wrapper);
    cmd.args(source.flags).arg("-o").arg(&out).arg(&src);
    let result = run_with_timeout(&mut cmd, COMPILE_TIMEOUT)?;
    if !result.status.success() {
        let text = String::from_utf8_lossy(&result.stderr);
        let tail: Vec<&str> = text.lines().rev().take(12).collect();
        return Err(format!(
            "cannot compile wulf's MPI {} with {} ({}): {}; is the MPI development package installed (apt-get install {})?",
            source.stem,
            install.wrapper.display(),
            result.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            install.flavor.packages()
        ));
    }
    // A note for humans beside the library: which MPI it belongs to.
    let _ = std::fs::write(
        lib.with_extension("txt"),
        format!(
            "wrapper: {}\nlauncher: {}\nshow: {shown}\n",
            install.wrapper.display(),
            install.launcher.display()
        ),
    );
    // rename() is atomic: a concurrent build of the same key just replaces
    // an identical file, and no reader ever sees a partial library.
    std::fs::rename(&out, lib).map_err(|e| format!("cannot store {}: {e}", lib.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_others_could_write_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        assert!(private(d.path()).is_ok());
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        private(d.path()).unwrap();
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "made private");
    }

    #[test]
    fn hash_is_stable_and_separates_parts() {
        assert_eq!(fnv1a64(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(&[b"ab", b"c"]), fnv1a64(&[b"ab", b"c"]));
        assert_ne!(fnv1a64(&[b"ab", b"c"]), fnv1a64(&[b"a", b"bc"]));
    }

    #[test]
    fn the_adapter_source_is_embedded() {
        let abi = super::super::ffi::ADAPTER_ABI;
        assert!(ADAPTER_SOURCE.contains(&format!("#define WULF_ADAPTER_ABI {abi}\n")));
    }
}
