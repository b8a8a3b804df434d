//! Named shared-memory regions in /dev/shm for the `shm` and `cma`
//! transports: created and zeroed by the peer's `listen`, opened by the
//! measuring side's `connect`, and unlinked as soon as both have mapped it.
//!
//! Unlinking early is what makes cleanup survive `kill -9`: once both ends
//! hold a mapping, the name is gone and the memory is freed by the kernel
//! when the last mapping goes, whoever dies first and however. The only
//! window with a name in /dev/shm is between the peer's `listen` and the
//! client's `connect` (milliseconds); a region dropped in that window (the
//! client never came) is unlinked by [`Region`]'s `Drop`.
//!
//! Every region starts with a [`RegionHeader`]: a magic number naming the
//! transport, the layout parameters the creator chose (so the opener never
//! has to guess, and refuses a region it does not understand), both process
//! ids, and the attach flag the peer waits for.

use std::fs::File;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use memmap2::{MmapMut, MmapOptions};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::mman::{shm_open, shm_unlink};
use nix::sys::stat::Mode;
use std::os::fd::AsRawFd;

/// Prefix of every region name wulf creates (as `/dev/shm/wulf-...`).
pub const NAME_PREFIX: &str = "/wulf-";

/// Bytes reserved for the header at the start of every region.
pub const HEADER_BYTES: usize = 256;

/// Layout parameters a header can carry.
pub const PARAMS: usize = 8;

/// The start of every region. Written by the creator before the name is
/// published, except `client_pid` and `ready`, which the two ends use to
/// meet.
#[repr(C, align(128))]
pub struct RegionHeader {
    /// Names the transport and layout version.
    pub magic: AtomicU64,
    /// Total size of the region in bytes.
    pub total_bytes: AtomicU64,
    /// Process id of the creator (the peer).
    pub server_pid: AtomicU32,
    /// Process id of the opener; non-zero once it has mapped the region.
    pub client_pid: AtomicU32,
    /// Free for the transport's own set-up handshake.
    pub ready: AtomicU32,
    /// Layout parameters (chunk size, slots, wait mode...).
    pub params: [AtomicU32; PARAMS],
    /// Free for the transport's own set-up handshake (addresses).
    pub words: [AtomicU64; 4],
}

const _: () = assert!(std::mem::size_of::<RegionHeader>() <= HEADER_BYTES);

/// Unlink the regions of wulf processes that are gone: a peer killed
/// with -9 between its `listen` and the client's connect leaves its region
/// behind (a drop never runs), and nothing else would ever remove it.
/// Names carry the creator's pid (`wulf-<pid>-<tag>`); a region whose pid
/// no longer exists is stale. Best effort: errors are ignored.
pub fn remove_stale() {
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let prefix = &NAME_PREFIX[1..];
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        let gone = matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if gone {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A mapped region, unlinked at the latest when dropped.
#[derive(Debug)]
pub struct Region {
    map: MmapMut,
    name: String,
    unlinked: bool,
}

impl Region {
    /// Create, size, map (pre-faulted) and zero a new region of `bytes`,
    /// with `magic` and `params` in its header.
    pub fn create(magic: u64, params: [u32; PARAMS], bytes: usize) -> Result<Region> {
        remove_stale();
        let bytes = bytes.max(HEADER_BYTES);
        let pid = std::process::id();
        let mut last = None;
        for attempt in 0..16u32 {
            let name = format!("{NAME_PREFIX}{pid}-{:08x}", unique_tag(attempt));
            match shm_open(
                name.as_str(),
                OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR,
                Mode::S_IRUSR | Mode::S_IWUSR,
            ) {
                Ok(fd) => {
                    let path = format!("/dev/shm{name}");
                    let file = File::from(fd);
                    // Reserve the pages, not only the size: a sparse file
                    // on a full tmpfs maps fine and then kills the process
                    // with SIGBUS at the first touch of a missing page.
                    let mapped = file
                        .set_len(bytes as u64)
                        .with_context(|| format!("cannot size shared memory {path} to {bytes} bytes"))
                        .and_then(|_| {
                            nix::fcntl::posix_fallocate(file.as_raw_fd(), 0, bytes as libc::off_t)
                                .with_context(|| {
                                    format!("cannot reserve {bytes} bytes of shared memory in /dev/shm (is it full? see df /dev/shm)")
                                })
                        })
                        .and_then(|_| map(&file, bytes, &path));
                    let map = match mapped {
                        Ok(m) => m,
                        Err(e) => {
                            let _ = shm_unlink(name.as_str());
                            return Err(e);
                        }
                    };
                    let region = Region {
                        map,
                        name,
                        unlinked: false,
                    };
                    let h = region.header();
                    h.total_bytes.store(bytes as u64, Ordering::Relaxed);
                    h.server_pid.store(pid, Ordering::Relaxed);
                    for (p, v) in h.params.iter().zip(params) {
                        p.store(v, Ordering::Relaxed);
                    }
                    // Release: an opener that sees the magic sees the rest.
                    h.magic.store(magic, Ordering::Release);
                    return Ok(region);
                }
                Err(Errno::EEXIST) => last = Some(Errno::EEXIST),
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!(
                        "cannot create shared memory /dev/shm{name} (is /dev/shm mounted and writable?)"
                    )))
                }
            }
        }
        bail!("cannot find a free shared memory name: {last:?}")
    }

    /// Open and map the region `name` created by the peer, checking that it
    /// is a wulf region of this transport (`magic`).
    pub fn open(name: &str, magic: u64) -> Result<Region> {
        let valid = name.starts_with(NAME_PREFIX)
            && name.len() < 64
            && name[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            bail!("the peer described an invalid shared memory name {name:?}");
        }
        let path = format!("/dev/shm{name}");
        let fd = shm_open(name, OFlag::O_RDWR, Mode::empty()).map_err(|e| {
            anyhow::anyhow!(
                "cannot open shared memory {path}: {e} (the peer must run on this host)"
            )
        })?;
        let file = File::from(fd);
        let bytes = file.metadata()?.len() as usize;
        if bytes < HEADER_BYTES {
            bail!("shared memory {path} is too small ({bytes} bytes) to be a wulf region");
        }
        let region = Region {
            map: map(&file, bytes, &path)?,
            name: name.to_string(),
            unlinked: false,
        };
        let h = region.header();
        let found = h.magic.load(Ordering::Acquire);
        if found != magic {
            bail!("shared memory {path} is not a region of this transport (magic {found:#x})");
        }
        if h.total_bytes.load(Ordering::Relaxed) != bytes as u64 {
            bail!("shared memory {path} has an inconsistent size");
        }
        Ok(region)
    }

    /// The header.
    pub fn header(&self) -> &RegionHeader {
        // SAFETY: the mapping is at least HEADER_BYTES long and page
        // aligned, and the header is made only of atomics.
        unsafe { &*(self.map.as_ptr() as *const RegionHeader) }
    }

    /// Layout parameter `i` of the header.
    pub fn param(&self, i: usize) -> u32 {
        self.header().params[i].load(Ordering::Relaxed)
    }

    /// Start of the mapping. Memory behind it is shared with another
    /// process: access it only through atomics or raw copies ordered by them.
    pub fn base(&self) -> *mut u8 {
        self.map.as_ptr() as *mut u8
    }

    /// Size of the mapping in bytes (never zero).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The region's path in the file system.
    pub fn path(&self) -> String {
        format!("/dev/shm{}", self.name)
    }

    /// The name to send to the other end.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Remove the name (the mappings stay valid). Idempotent; a name the
    /// other end already removed is fine.
    pub fn unlink(&mut self) {
        if !self.unlinked {
            let _ = shm_unlink(self.name.as_str());
            self.unlinked = true;
        }
    }

    /// Opener side: record this process as attached (after mapping).
    pub fn attach(&self) {
        self.header()
            .client_pid
            .store(std::process::id(), Ordering::Release);
    }

    /// Creator side: wait until the opener has attached, at most `timeout`;
    /// returns its process id.
    pub fn wait_for_attach(&self, timeout: Duration, aborted: &dyn Fn() -> bool) -> Result<u32> {
        let deadline = Instant::now() + timeout;
        loop {
            let pid = self.header().client_pid.load(Ordering::Acquire);
            if pid != 0 {
                return Ok(pid);
            }
            if aborted() {
                bail!("the wait for the other side to open the shared memory was aborted");
            }
            if Instant::now() >= deadline {
                bail!(
                    "the other side did not open the shared memory within {}",
                    humantime::format_duration(timeout)
                );
            }
            // Set-up, not a timing loop: sleeping here is fine.
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.unlink();
    }
}

/// Map `bytes` of `file` shared, with every page faulted in now (so no page
/// fault lands in a timing loop).
fn map(file: &File, bytes: usize, path: &str) -> Result<MmapMut> {
    // SAFETY: the file is a shared memory object only wulf processes map;
    // all access goes through raw pointers and atomics, never references
    // to the shared bytes that another process could change under us.
    unsafe { MmapOptions::new().len(bytes).populate().map_mut(file) }
        .with_context(|| format!("cannot map shared memory {path}"))
}

/// A tag that differs between calls and processes (names must be unique,
/// not secret: the file is created O_EXCL with mode 0600).
fn unique_tag(attempt: u32) -> u32 {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9)
        ^ attempt
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: u64 = 0x7465_7374_7265_6731;

    #[test]
    fn create_open_unlink() {
        let mut a = Region::create(MAGIC, [7, 8, 0, 0, 0, 0, 0, 0], 8192).unwrap();
        assert!(std::path::Path::new(&a.path()).exists());
        let b = Region::open(a.name(), MAGIC).unwrap();
        assert_eq!(b.param(0), 7);
        assert_eq!(b.len(), 8192);
        b.attach();
        assert_eq!(
            a.wait_for_attach(Duration::from_secs(1), &|| false)
                .unwrap(),
            std::process::id()
        );
        // SAFETY: both map the same object; plain bytes beyond the header.
        unsafe {
            a.base().add(4096).write_volatile(42);
            assert_eq!(b.base().add(4096).read_volatile(), 42);
        }
        a.unlink();
        assert!(!std::path::Path::new(&a.path()).exists());
    }

    #[test]
    fn wrong_regions_are_refused() {
        let a = Region::create(MAGIC, [0; PARAMS], 4096).unwrap();
        assert!(Region::open(a.name(), MAGIC + 1)
            .unwrap_err()
            .to_string()
            .contains("not a region"));
        assert!(Region::open("/etc/passwd", MAGIC).is_err());
        assert!(Region::open("/wulf-does-not-exist", MAGIC)
            .unwrap_err()
            .to_string()
            .contains("this host"));
        let path = a.path();
        drop(a);
        assert!(!std::path::Path::new(&path).exists(), "dropped => unlinked");
    }

    #[test]
    fn attach_wait_times_out() {
        let a = Region::create(MAGIC, [0; PARAMS], 4096).unwrap();
        assert!(a
            .wait_for_attach(Duration::from_millis(20), &|| false)
            .is_err());
    }
}
