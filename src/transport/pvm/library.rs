//! PVM's own library, libpvm3, loaded at run time with dlopen: wulf is
//! built without PVM (no pvm-dev, no link-time dependency), and a machine
//! without it only loses the `pvm` transports, each saying what to install.
//! The library is never unloaded (an enrolled task's sockets and signal
//! handlers belong to it).

use std::ffi::{c_char, c_int, CStr};
use std::sync::OnceLock;

use crate::sys::dynlib::Library;

/// What to install where PVM is missing (the runtime library is the `pvm`
/// package's dependency libpvm3; pvm-dev only for the C probe in bench/).
pub const INSTALL_HINT: &str = "PVM is not installed (apt install pvm pvm-dev)";

/// `pvm_initsend` encodings (pvm3.h).
pub const PVM_DATA_DEFAULT: c_int = 0;
/// Raw bytes, no XDR conversion.
pub const PVM_DATA_RAW: c_int = 1;
/// Raw bytes left in the caller's buffer at pack time and sent from it
/// (no copy into PVM's buffer): NetPIPE's choice for its PVM module.
pub const PVM_DATA_IN_PLACE: c_int = 2;
/// `pvm_setopt` option: the routing policy.
pub const PVM_ROUTE: c_int = 1;
/// `pvm_setopt` option: how libpvm reports a failed call on its own
/// (0: it does not; 1, the default: it prints `libpvm [tNNN]: call():
/// reason` on stderr).
pub const PVM_AUTO_ERR: c_int = 3;
/// Routing policy: every message through the pvmd daemons.
pub const PVM_DONT_ROUTE: c_int = 1;
/// Routing policy: ask for a direct task-to-task TCP link.
pub const PVM_ROUTE_DIRECT: c_int = 3;

/// The C `struct timeval` pvm_trecv takes.
#[repr(C)]
pub struct Timeval {
    /// Seconds.
    pub tv_sec: libc::time_t,
    /// Microseconds.
    pub tv_usec: libc::suseconds_t,
}

/// The entry points wulf calls (signatures from pvm3.h, PVM 3.4).
pub struct Api {
    /// Enrolls this process (connecting to the pvmd named by `$PVM_TMP`).
    pub mytid: unsafe extern "C" fn() -> c_int,
    /// Leaves the virtual machine.
    pub exit: unsafe extern "C" fn() -> c_int,
    /// Sets a library option (the routing policy).
    pub setopt: unsafe extern "C" fn(c_int, c_int) -> c_int,
    /// Clears the send buffer and picks its encoding.
    pub initsend: unsafe extern "C" fn(c_int) -> c_int,
    /// Packs bytes into the send buffer.
    pub pkbyte: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int,
    /// Unpacks bytes from the receive buffer.
    pub upkbyte: unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int,
    /// Sends the send buffer to a task with a tag.
    pub send: unsafe extern "C" fn(c_int, c_int) -> c_int,
    /// Receives a message, waiting at most the given time (0: timed out).
    pub trecv: unsafe extern "C" fn(c_int, c_int, *mut Timeval) -> c_int,
    /// Size, tag and sender of a received message.
    pub bufinfo: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, *mut c_int) -> c_int,
    /// Adds hosts to the virtual machine (names, count, per-host results).
    pub addhosts: unsafe extern "C" fn(*mut *mut c_char, c_int, *mut c_int) -> c_int,
    /// The library's version string.
    pub version: unsafe extern "C" fn() -> *const c_char,
}

/// The library, loaded once per process (or why it could not be).
static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// Library names tried in order: the runtime package's soname first.
const NAMES: [&str; 2] = ["libpvm3.so.3", "libpvm3.so"];

fn open() -> Result<Api, String> {
    let lib =
        Library::open_first(&NAMES, "libpvm3").map_err(|why| format!("{INSTALL_HINT}: {why}"))?;
    // SAFETY: each type below is the entry point's signature in pvm3.h
    // (PVM 3.4).
    unsafe {
        Ok(Api {
            mytid: lib.function("pvm_mytid")?,
            exit: lib.function("pvm_exit")?,
            setopt: lib.function("pvm_setopt")?,
            initsend: lib.function("pvm_initsend")?,
            pkbyte: lib.function("pvm_pkbyte")?,
            upkbyte: lib.function("pvm_upkbyte")?,
            send: lib.function("pvm_send")?,
            trecv: lib.function("pvm_trecv")?,
            bufinfo: lib.function("pvm_bufinfo")?,
            addhosts: lib.function("pvm_addhosts")?,
            version: lib.function("pvm_version")?,
        })
    }
}

/// The loaded library, or the reason there is none (naming the packages).
pub fn api() -> Result<&'static Api, String> {
    API.get_or_init(open).as_ref().map_err(Clone::clone)
}

/// PVM's version string, e.g. "3.4.6".
pub fn version(api: &Api) -> String {
    // SAFETY: pvm_version returns a static C string.
    let p = unsafe { (api.version)() };
    if p.is_null() {
        return "unknown".into();
    }
    // SAFETY: non-null, NUL-terminated, static.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
