//! PVM's own library, libpvm3, loaded at run time with dlopen: wulf is
//! built without PVM (no pvm-dev, no link-time dependency), and a machine
//! without it only loses the `pvm` transports, each saying what to install.
//! The library is never unloaded (an enrolled task's sockets and signal
//! handlers belong to it).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// What to install where PVM is missing (the runtime library is the `pvm`
/// package's dependency libpvm3; pvm-dev only for the C probe in bench/).
pub const INSTALL_HINT: &str = "PVM is not installed (apt install pvm pvm-dev)";

/// `pvm_initsend` encodings (pvm3.h).
pub const PVM_DATA_DEFAULT: c_int = 0;
/// Raw bytes, no XDR conversion.
pub const PVM_DATA_RAW: c_int = 1;
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

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a valid C string owned by libc.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        // SAFETY: non-null, NUL-terminated.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

fn symbol<T: Copy>(handle: *mut c_void, name: &str) -> Result<T, String> {
    let cname = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: handle came from dlopen; dlsym only reads the name.
    let p = unsafe { libc::dlsym(handle, cname.as_ptr()) };
    if p.is_null() {
        return Err(format!("libpvm3 has no symbol {name} (not PVM 3.4?)"));
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: T is the function pointer type of the symbol's C signature
    // (pvm3.h); the sizes are equal.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

fn open() -> Result<Api, String> {
    let mut why = Vec::new();
    for name in NAMES {
        let cname = CString::new(name).expect("no NUL");
        // SAFETY: a valid C string; libpvm3's constructors are its own.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            why.push(dlerror());
            continue;
        }
        return Ok(Api {
            mytid: symbol(handle, "pvm_mytid")?,
            exit: symbol(handle, "pvm_exit")?,
            setopt: symbol(handle, "pvm_setopt")?,
            initsend: symbol(handle, "pvm_initsend")?,
            pkbyte: symbol(handle, "pvm_pkbyte")?,
            upkbyte: symbol(handle, "pvm_upkbyte")?,
            send: symbol(handle, "pvm_send")?,
            trecv: symbol(handle, "pvm_trecv")?,
            bufinfo: symbol(handle, "pvm_bufinfo")?,
            addhosts: symbol(handle, "pvm_addhosts")?,
            version: symbol(handle, "pvm_version")?,
        });
    }
    Err(format!("{INSTALL_HINT}: {}", why.join("; ")))
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
