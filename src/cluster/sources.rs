//! Where agents started by srun or mpirun may connect from. Their hosts
//! are not known beforehand (the launcher placed them), so each task
//! publishes its machine's addresses in a file of its own beside the
//! rendezvous file, in the working directory the launcher starts every
//! task in; the coordinator accepts connections only from this machine's
//! addresses and those published. Only the user can write a file the
//! user owns with mode 0600: a stranger cannot add an address, and a file
//! that is not private is ignored. The secret and the admission limits
//! hold as for every matrix.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};

/// Longest addresses file read: a few addresses.
const MAX_ADDRESSES_BYTES: u64 = 16 << 10;

/// Most addresses taken from one file.
const MAX_ADDRESSES: usize = 64;

/// What [`read_private`] found.
#[derive(Debug)]
pub enum Private {
    /// No such file.
    Missing,
    /// A file the user's own tasks did not write (why), never to be used.
    Refused(String),
    /// The user's own private file: its bytes and when it was written.
    Read(Vec<u8>, SystemTime),
}

/// The file at `path` if it is the user's own private regular file (owner
/// the effective uid, no group or other permissions, not a symbolic link)
/// of at most `max_bytes`; whoever can write it decides what a task trusts.
pub fn read_private(path: &Path, max_bytes: u64) -> Result<Private> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // Not through a symbolic link: its target would be someone's choice.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Private::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(Private::Refused("it is a symbolic link".into()))
        }
        Err(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot read {}", path.display())))
        }
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Ok(Private::Refused("it is not a regular file".into()));
    }
    if meta.uid() != own_uid() {
        return Ok(Private::Refused(format!(
            "it is owned by uid {}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Ok(Private::Refused(format!(
            "its mode is {:04o}, open to other users",
            meta.mode() & 0o7777
        )));
    }
    let written = meta.modified()?;
    let mut bytes = Vec::new();
    f.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Ok(Private::Refused(format!(
            "it is longer than {max_bytes} bytes"
        )));
    }
    Ok(Private::Read(bytes, written))
}

/// This process's effective user id: the owner a private file must have.
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Write `bytes` to `path` readable by the owner alone, atomically.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The addresses file of task `rank`, beside the rendezvous file
/// `rendezvous` (`.wulf-matrix-JOB.json` gives
/// `.wulf-matrix-JOB.rank-3.addresses`).
pub fn addresses_path(rendezvous: &Path, rank: usize) -> PathBuf {
    let stem = rendezvous
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    rendezvous.with_file_name(format!("{stem}.rank-{rank}.addresses"))
}

/// Publish this machine's `addresses` for the coordinator at `path`.
pub fn publish(path: &Path, addresses: &[IpAddr]) -> Result<()> {
    write_private(path, &serde_json::to_vec(addresses)?)
}

/// The tasks' addresses files, read as they appear.
#[derive(Debug, Clone)]
pub struct RankSources {
    /// One file per task other than the coordinator's.
    files: Vec<PathBuf>,
    /// A file written before this is an earlier run's.
    since: SystemTime,
    /// Files read already.
    read: Vec<bool>,
}

impl RankSources {
    /// The files `files`, taken only when written since `since`.
    pub fn new(files: Vec<PathBuf>, since: SystemTime) -> RankSources {
        RankSources {
            read: vec![false; files.len()],
            files,
            since,
        }
    }

    /// The addresses in the files not read yet that are there now, the
    /// user's own, private and fresh (the others are skipped, to be
    /// looked at again next time: a task's file may not be there yet).
    pub fn read_new(&mut self) -> Vec<IpAddr> {
        let mut out = Vec::new();
        for (file, read) in self.files.iter().zip(self.read.iter_mut()) {
            if *read {
                continue;
            }
            let Ok(Private::Read(bytes, written)) = read_private(file, MAX_ADDRESSES_BYTES) else {
                continue;
            };
            if written < self.since {
                continue;
            }
            if let Ok(ips) = serde_json::from_slice::<Vec<IpAddr>>(&bytes) {
                out.extend(ips.into_iter().take(MAX_ADDRESSES));
                *read = true;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    #[test]
    fn only_the_users_own_private_fresh_files_add_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let rendezvous = dir.path().join(".wulf-matrix-pmi-0.json");
        let one = addresses_path(&rendezvous, 1);
        let two = addresses_path(&rendezvous, 2);
        assert!(one.ends_with(".wulf-matrix-pmi-0.rank-1.addresses"));
        let mut sources = RankSources::new(
            vec![one.clone(), two.clone()],
            SystemTime::now() - Duration::from_secs(60),
        );
        assert!(sources.read_new().is_empty());
        // A planted file open to others: ignored.
        std::fs::write(&two, "[\"192.0.2.66\"]").unwrap();
        std::fs::set_permissions(&two, std::fs::Permissions::from_mode(0o644)).unwrap();
        publish(&one, &["192.0.2.1".parse().unwrap()]).unwrap();
        assert_eq!(sources.read_new(), vec![IpAddr::from([192, 0, 2, 1])]);
        // Read once.
        assert!(sources.read_new().is_empty());
        // A symbolic link to a private file: ignored too.
        std::fs::remove_file(&two).unwrap();
        std::os::unix::fs::symlink(&one, &two).unwrap();
        assert!(sources.read_new().is_empty());
        // A stale file (an earlier run's): ignored.
        std::fs::remove_file(&two).unwrap();
        publish(&two, &["192.0.2.2".parse().unwrap()]).unwrap();
        let mut later = RankSources::new(
            vec![two.clone()],
            SystemTime::now() + Duration::from_secs(60),
        );
        assert!(later.read_new().is_empty());
        assert_eq!(sources.read_new(), vec![IpAddr::from([192, 0, 2, 2])]);
    }
}
