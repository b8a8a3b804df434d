//! Loading wulf's MPI adapter into the process with dlopen: the table of
//! its entry points, checked against the ABI this wulf was built for.
//! The library is never unloaded (dlclose under a live MPI is undefined).

use std::ffi::{c_char, c_int, c_longlong, c_void, CStr, CString};
use std::path::Path;
use std::sync::OnceLock;

/// The adapter ABI this wulf expects (`WULF_ADAPTER_ABI` in adapter.c).
pub const ADAPTER_ABI: i32 = 7;

/// Entry points of a loaded adapter.
pub(super) struct Api {
    pub(super) abi: unsafe extern "C" fn() -> c_int,
    pub(super) max_window: unsafe extern "C" fn() -> c_int,
    pub(super) init: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, *mut c_int) -> c_int,
    pub(super) finalize: unsafe extern "C" fn() -> c_int,
    pub(super) abort: unsafe extern "C" fn(c_int) -> c_int,
    pub(super) library_version: unsafe extern "C" fn(*mut c_char, c_int) -> c_int,
    pub(super) version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    pub(super) processor_name: unsafe extern "C" fn(*mut c_char, c_int) -> c_int,
    pub(super) error_string: unsafe extern "C" fn(c_int, *mut c_char, c_int),
    pub(super) wtime: unsafe extern "C" fn() -> f64,
    pub(super) send: unsafe extern "C" fn(*const c_void, c_longlong, c_int, c_int) -> c_int,
    pub(super) recv: unsafe extern "C" fn(*mut c_void, c_longlong, c_int, c_int) -> c_int,
    pub(super) recv_any: unsafe extern "C" fn(*mut c_void, c_longlong, c_int, *mut c_int) -> c_int,
    pub(super) recv_counted:
        unsafe extern "C" fn(*mut c_void, c_longlong, c_int, c_int, *mut c_longlong) -> c_int,
    pub(super) sendrecv: unsafe extern "C" fn(
        *const c_void,
        c_longlong,
        c_int,
        *mut c_void,
        c_longlong,
        c_int,
        c_int,
        *mut c_longlong,
    ) -> c_int,
    pub(super) exchange: unsafe extern "C" fn(
        *const c_void,
        c_longlong,
        *mut c_void,
        c_longlong,
        c_int,
        c_int,
    ) -> c_int,
    pub(super) send_window:
        unsafe extern "C" fn(*const c_void, c_longlong, c_longlong, c_int, c_int, c_int) -> c_int,
    pub(super) recv_window:
        unsafe extern "C" fn(*mut c_void, c_longlong, c_longlong, c_int, c_int, c_int) -> c_int,
    pub(super) allreduce_f64: unsafe extern "C" fn(*mut f64, c_longlong, c_int) -> c_int,
    pub(super) alltoallv: unsafe extern "C" fn(
        *const c_void,
        *const c_int,
        *const c_int,
        *mut c_void,
        *const c_int,
        *const c_int,
        c_int,
    ) -> c_int,
    pub(super) barrier: unsafe extern "C" fn() -> c_int,
    pub(super) bcast: unsafe extern "C" fn(*mut c_void, c_longlong, c_int) -> c_int,
    pub(super) alltoall: unsafe extern "C" fn(*const c_void, *mut c_void, c_longlong) -> c_int,
    pub(super) irecv: unsafe extern "C" fn(*mut c_void, c_longlong, c_int, c_int, c_int) -> c_int,
    pub(super) isend: unsafe extern "C" fn(*const c_void, c_longlong, c_int, c_int, c_int) -> c_int,
    pub(super) wait: unsafe extern "C" fn(c_int, *mut c_longlong) -> c_int,
}

/// The adapter loaded into this process, if any (never unloaded).
static API: OnceLock<Api> = OnceLock::new();

fn symbol<T: Copy>(handle: *mut c_void, name: &str) -> Result<T, String> {
    let cname = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: handle came from dlopen; dlsym only reads the name.
    let p = unsafe { libc::dlsym(handle, cname.as_ptr()) };
    if p.is_null() {
        return Err(format!("the MPI adapter has no symbol {name}"));
    }
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: T is a function pointer type of the symbol's C signature
    // (adapter.c, checked by the ABI number); sizes are equal.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
}

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

pub(super) fn load(path: &Path) -> Result<&'static Api, String> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let cpath = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
    // RTLD_GLOBAL: some MPI builds dlopen their own plug-ins, which expect
    // libmpi's symbols in the global namespace.
    // SAFETY: a valid C path; the library's constructors are MPI's own.
    let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(format!("cannot load {}: {}", path.display(), dlerror()));
    }
    let api = Api {
        abi: symbol(handle, "wulf_abi")?,
        max_window: symbol(handle, "wulf_max_window")?,
        init: symbol(handle, "wulf_init")?,
        finalize: symbol(handle, "wulf_finalize")?,
        abort: symbol(handle, "wulf_abort")?,
        library_version: symbol(handle, "wulf_library_version")?,
        version: symbol(handle, "wulf_version")?,
        processor_name: symbol(handle, "wulf_processor_name")?,
        error_string: symbol(handle, "wulf_error_string")?,
        wtime: symbol(handle, "wulf_wtime")?,
        send: symbol(handle, "wulf_send")?,
        recv: symbol(handle, "wulf_recv")?,
        recv_any: symbol(handle, "wulf_recv_any")?,
        recv_counted: symbol(handle, "wulf_recv_counted")?,
        sendrecv: symbol(handle, "wulf_sendrecv")?,
        exchange: symbol(handle, "wulf_exchange")?,
        send_window: symbol(handle, "wulf_send_window")?,
        recv_window: symbol(handle, "wulf_recv_window")?,
        allreduce_f64: symbol(handle, "wulf_allreduce_f64")?,
        alltoallv: symbol(handle, "wulf_alltoallv")?,
        barrier: symbol(handle, "wulf_barrier")?,
        bcast: symbol(handle, "wulf_bcast")?,
        alltoall: symbol(handle, "wulf_alltoall")?,
        irecv: symbol(handle, "wulf_irecv")?,
        isend: symbol(handle, "wulf_isend")?,
        wait: symbol(handle, "wulf_wait")?,
    };
    // SAFETY: a plain C function of no arguments.
    let abi = unsafe { (api.abi)() };
    if abi != ADAPTER_ABI {
        return Err(format!(
            "{} has adapter ABI {abi}, this wulf needs {ADAPTER_ABI} (a stale cache entry?)",
            path.display()
        ));
    }
    Ok(API.get_or_init(|| api))
}
