//! Loading wulf's MPI adapter into the process with dlopen: the table of
//! its entry points, checked against the ABI this wulf was built for.
//! The library is never unloaded (dlclose under a live MPI is undefined).

use std::ffi::{c_char, c_int, c_longlong, c_void};
use std::path::Path;
use std::sync::OnceLock;

use crate::sys::dynlib::Library;

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
    pub(super) allreduce_i32: unsafe extern "C" fn(*mut c_int, c_longlong) -> c_int,
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

pub(super) fn load(path: &Path) -> Result<&'static Api, String> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let name = path
        .to_str()
        .ok_or_else(|| format!("{} is not a UTF-8 path", path.display()))?;
    // RTLD_GLOBAL (Library's): some MPI builds dlopen their own plug-ins,
    // which expect libmpi's symbols in the global namespace.
    let lib = Library::open_first(&[name], "the MPI adapter")
        .map_err(|why| format!("cannot load {}: {why}", path.display()))?;
    // SAFETY: each type is the adapter's function signature (adapter.c,
    // checked by the ABI number below).
    let api = unsafe {
        Api {
            abi: lib.function("wulf_abi")?,
            max_window: lib.function("wulf_max_window")?,
            init: lib.function("wulf_init")?,
            finalize: lib.function("wulf_finalize")?,
            abort: lib.function("wulf_abort")?,
            library_version: lib.function("wulf_library_version")?,
            version: lib.function("wulf_version")?,
            processor_name: lib.function("wulf_processor_name")?,
            error_string: lib.function("wulf_error_string")?,
            wtime: lib.function("wulf_wtime")?,
            send: lib.function("wulf_send")?,
            recv: lib.function("wulf_recv")?,
            recv_any: lib.function("wulf_recv_any")?,
            recv_counted: lib.function("wulf_recv_counted")?,
            sendrecv: lib.function("wulf_sendrecv")?,
            exchange: lib.function("wulf_exchange")?,
            send_window: lib.function("wulf_send_window")?,
            recv_window: lib.function("wulf_recv_window")?,
            allreduce_f64: lib.function("wulf_allreduce_f64")?,
            allreduce_i32: lib.function("wulf_allreduce_i32")?,
            alltoallv: lib.function("wulf_alltoallv")?,
            barrier: lib.function("wulf_barrier")?,
            bcast: lib.function("wulf_bcast")?,
            alltoall: lib.function("wulf_alltoall")?,
            irecv: lib.function("wulf_irecv")?,
            isend: lib.function("wulf_isend")?,
            wait: lib.function("wulf_wait")?,
        }
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
