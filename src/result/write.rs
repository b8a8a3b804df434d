//! Writing of result files: atomically where the target is a file, plainly
//! where it is anything else.
//!
//! A result is written to a temporary file beside its target and renamed
//! over it, so a reader never sees half a file and a full disk leaves the
//! old file intact. That rename must only ever replace a regular file (or
//! create one): renaming over `/dev/null`, a FIFO or a socket would replace
//! the device node for the whole machine (as root, `--json /dev/null`
//! once did exactly that), and renaming over a symlink would replace the
//! link and leave the file it names stale. So the target is examined
//! first ([`Target`]): a symlink is followed to the file it names, which
//! is then replaced atomically; a device, FIFO or socket is opened and
//! written through; `-` is standard output; a directory is refused.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::SweepResult;

/// Links followed before a chain is called a loop (the kernel's own limit).
const MAX_SYMLINK_HOPS: usize = 40;
/// How long a FIFO target may wait for its reader before the write fails.
const FIFO_READER_WAIT: Duration = Duration::from_secs(10);

/// What an output path turned out to be, and so how it is written.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    /// `-`: written to standard output.
    Stdout,
    /// A regular file, existing or not, at this path (symlinks followed):
    /// replaced atomically.
    File(PathBuf),
    /// A character or block device, FIFO or socket: opened and written
    /// through, never replaced.
    Special(PathBuf),
}

/// Decide how `path` is written: follow symlinks to the file they name
/// (which need not exist yet), refuse a directory and a symlink loop.
pub fn target_of(path: &Path) -> Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let mut here = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        let meta = match std::fs::symlink_metadata(&here) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::File(here)),
            Err(e) => return Err(e).with_context(|| format!("cannot examine {}", here.display())),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let link = std::fs::read_link(&here)
                .with_context(|| format!("cannot read the link {}", here.display()))?;
            here = match here.parent() {
                Some(dir) if link.is_relative() => dir.join(link),
                _ => link,
            };
        } else if kind.is_dir() {
            bail!(
                "{} is a directory: give a file name to write to",
                path.display()
            );
        } else if kind.is_file() {
            return Ok(Target::File(here));
        } else if kind.is_char_device()
            || kind.is_block_device()
            || kind.is_fifo()
            || kind.is_socket()
        {
            return Ok(Target::Special(here));
        } else {
            bail!(
                "{} is neither a file nor a device: not written",
                path.display()
            );
        }
    }
    bail!(
        "{} is a chain of more than {MAX_SYMLINK_HOPS} symbolic links (a loop?): not written",
        path.display()
    )
}

/// Write `bytes` to `path`: atomically where it is (or will be) a regular
/// file, through where it is a device, FIFO or socket, to standard output
/// for `-` (see the module doc). A full disk leaves an old file intact and
/// returns an error.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// [`write_atomically`] for a document written piece by piece by `fill`
/// (a matrix streamed from its cell file), never whole in memory.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match target_of(path)? {
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            fill(&mut out)
                .and_then(|_| out.flush())
                .context("cannot write to standard output")
        }
        Target::Special(node) => write_through(&node, fill),
        Target::File(file) => replace_file(&file, fill),
    }
}

/// Write into a device, FIFO or socket node without replacing it. A FIFO
/// with no reader is waited for (bounded), not blocked on forever.
fn write_through(
    node: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let deadline = Instant::now() + FIFO_READER_WAIT;
    let file = loop {
        // O_NONBLOCK so that opening a FIFO with no reader fails (ENXIO)
        // instead of hanging; cleared again before writing.
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(node)
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                bail!(
                    "{} is a FIFO with no reader (waited {} s): not written",
                    node.display(),
                    FIFO_READER_WAIT.as_secs()
                )
            }
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", node.display())),
        }
    };
    let flags = nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&file),
        nix::fcntl::FcntlArg::F_GETFL,
    )
    .with_context(|| format!("cannot read the flags of {}", node.display()))?;
    let blocking = nix::fcntl::OFlag::from_bits_truncate(flags) - nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(
        std::os::fd::AsRawFd::as_raw_fd(&file),
        nix::fcntl::FcntlArg::F_SETFL(blocking),
    )
    .with_context(|| format!("cannot set the flags of {}", node.display()))?;
    let mut w = std::io::BufWriter::new(file);
    fill(&mut w)
        .and_then(|_| w.flush())
        .with_context(|| format!("cannot write {}", node.display()))
}

/// Replace (or create) the regular file `file` atomically: a temporary file
/// beside it, synced, then renamed over it. An existing file keeps its mode.
fn replace_file(
    file: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    let written = {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        fill(&mut w).and_then(|_| w.flush())
    };
    written
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", file.display()))?;
    // tempfile creates 0600 files; a result is not a secret, and a file
    // being replaced keeps the mode its owner gave it.
    let mode = std::fs::metadata(file)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set permissions on {}", file.display()))?;
    tmp.persist(file)
        .with_context(|| format!("cannot rename the result into {}", file.display()))?;
    Ok(())
}

/// Serialise `result` as pretty JSON and write it to `path` (see
/// [`write_atomically`]; `-` is standard output).
pub fn write_result(path: &Path, result: &SweepResult) -> Result<()> {
    write_json(path, result)
}

/// Serialise any result document (sweep or NPB) as pretty JSON and write it
/// to `path` (see [`write_atomically`]; `-` is standard output).
pub fn write_json<T: serde::Serialize>(path: &Path, document: &T) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(document)?;
    json.push(b'\n');
    write_atomically(path, &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_classified() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        assert_eq!(target_of(Path::new("-")).unwrap(), Target::Stdout);
        assert_eq!(target_of(&file).unwrap(), Target::File(file.clone()));
        // A dangling link names the file it will create.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("r.json", &link).unwrap();
        assert_eq!(
            target_of(&link).unwrap(),
            Target::File(dir.path().join("r.json"))
        );
        assert_eq!(
            target_of(Path::new("/dev/null")).unwrap(),
            Target::Special(PathBuf::from("/dev/null"))
        );
        let e = target_of(dir.path()).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = target_of(&a).unwrap_err().to_string();
        assert!(e.contains("loop"), "{e}");
    }

    #[test]
    fn a_link_is_followed_and_its_target_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the replaced file keeps its mode");
    }

    #[test]
    fn a_fifo_is_written_through_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_atomically(&fifo, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), "through");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}
