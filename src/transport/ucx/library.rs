//! UCX's UCP library, libucp, loaded at run time ([`crate::sys::dynlib`]):
//! the system's own UCX, the one a site tunes and its MPI uses, bound
//! through the few calls wulf makes. The crates on offer build a copy of
//! UCX of their own and put an async runtime in the timing loop.
//!
//! The structures are UCX 1.13's (ucp.h, ucp_def.h); UCX reads only the
//! fields named in each one's `field_mask`, and later releases only append
//! fields, so these layouts hold for 1.13 and after (checked against the
//! installed header by a test that compiles it).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use crate::sys::dynlib::Library;

/// What to install where UCX is missing.
pub const INSTALL_HINT: &str = "UCX is not installed (apt install libucx0; ucx-utils for ucx_info)";

/// `ucs_status_t`: a packed enum, one signed byte.
pub type Status = i8;
/// UCS_OK.
pub const UCS_OK: Status = 0;
/// UCS_INPROGRESS.
pub const UCS_INPROGRESS: Status = 1;
/// UCS_ERR_BUSY: `ucp_worker_arm` found events to progress first.
pub const UCS_ERR_BUSY: Status = -15;
/// UCS_ERR_LAST: status pointers at or above this address are errors.
pub const UCS_ERR_LAST: isize = -100;

/// `ucp_params_t` field: features.
pub const UCP_PARAM_FIELD_FEATURES: u64 = 1 << 0;
/// Feature: tag matching.
pub const UCP_FEATURE_TAG: u64 = 1 << 0;
/// Feature: waiting on an event descriptor.
pub const UCP_FEATURE_WAKEUP: u64 = 1 << 4;
/// `ucp_worker_params_t` field: thread mode.
pub const UCP_WORKER_PARAM_FIELD_THREAD_MODE: u64 = 1 << 0;
/// UCS_THREAD_MODE_SERIALIZED: one thread at a time, any thread (an
/// endpoint may be made on one thread and used on another).
pub const UCS_THREAD_MODE_SERIALIZED: c_uint = 1;
/// `ucp_ep_params_t` field: the remote worker's address.
pub const UCP_EP_PARAM_FIELD_REMOTE_ADDRESS: u64 = 1 << 0;
/// `ucp_request_param_t` field: receive information.
pub const UCP_OP_ATTR_FIELD_RECV_INFO: u32 = 1 << 7;
/// `ucp_request_param_t` attribute: never complete at once (always a
/// request to poll).
pub const UCP_OP_ATTR_FLAG_NO_IMM_CMPL: u32 = 1 << 16;
/// `ucp_request_param_t` field: operation flags.
pub const UCP_OP_ATTR_FIELD_FLAGS: u32 = 1 << 4;
/// `ucp_ep_close_nbx` flag: release the endpoint without waiting for the
/// peer (it may be gone).
pub const UCP_EP_CLOSE_FLAG_FORCE: u32 = 1 << 0;
/// The UCP API version wulf's structures are written against.
pub const API_MAJOR: c_uint = 1;
/// See [`API_MAJOR`].
pub const API_MINOR: c_uint = 13;

/// Opaque UCX handles.
pub type Handle = *mut c_void;

/// `ucp_params_t`.
#[repr(C)]
pub struct Params {
    /// Which fields are set.
    pub field_mask: u64,
    /// UCP_FEATURE_* bits.
    pub features: u64,
    /// Unused here.
    pub request_size: usize,
    /// Unused here.
    pub request_init: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Unused here.
    pub request_cleanup: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Unused here.
    pub tag_sender_mask: u64,
    /// Unused here.
    pub mt_workers_shared: c_int,
    /// Unused here.
    pub estimated_num_eps: usize,
    /// Unused here.
    pub estimated_num_ppn: usize,
    /// Unused here.
    pub name: *const c_char,
}

/// `ucp_worker_params_t`.
#[repr(C)]
pub struct WorkerParams {
    /// Which fields are set.
    pub field_mask: u64,
    /// A `ucs_thread_mode_t`.
    pub thread_mode: c_uint,
    /// Unused here (`ucs_cpu_set_t`, 1024 bits).
    pub cpu_mask: [u64; 16],
    /// Unused here.
    pub events: c_uint,
    /// Unused here.
    pub user_data: *mut c_void,
    /// Unused here.
    pub event_fd: c_int,
    /// Unused here.
    pub flags: u64,
    /// Unused here.
    pub name: *const c_char,
    /// Unused here.
    pub am_alignment: usize,
    /// Unused here.
    pub client_id: u64,
}

/// `ucs_sock_addr_t`.
#[repr(C)]
pub struct SockAddr {
    /// Unused here.
    pub addr: *const c_void,
    /// Unused here.
    pub addrlen: u32,
}

/// `ucp_ep_params_t`.
#[repr(C)]
pub struct EpParams {
    /// Which fields are set.
    pub field_mask: u64,
    /// The remote worker's address.
    pub address: *const c_void,
    /// Unused here.
    pub err_mode: c_uint,
    /// Unused here (`ucp_err_handler_t`: callback and argument).
    pub err_handler: [*mut c_void; 2],
    /// Unused here.
    pub user_data: *mut c_void,
    /// Unused here.
    pub flags: c_uint,
    /// Unused here.
    pub sockaddr: SockAddr,
    /// Unused here.
    pub conn_request: *mut c_void,
    /// Unused here.
    pub name: *const c_char,
    /// Unused here.
    pub local_sockaddr: SockAddr,
}

/// `ucp_tag_recv_info_t`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct TagRecvInfo {
    /// The sender's tag.
    pub sender_tag: u64,
    /// Bytes received.
    pub length: usize,
}

/// `ucp_request_param_t`.
#[repr(C)]
pub struct RequestParam {
    /// Which fields are set.
    pub op_attr_mask: u32,
    /// Operation flags.
    pub flags: u32,
    /// Unused here.
    pub request: *mut c_void,
    /// Unused here (a callback union).
    pub cb: *mut c_void,
    /// Unused here (`ucp_datatype_t`; contiguous bytes by default).
    pub datatype: u64,
    /// Unused here.
    pub user_data: *mut c_void,
    /// Unused here.
    pub reply_buffer: *mut c_void,
    /// Unused here (`ucs_memory_type_t`).
    pub memory_type: c_uint,
    /// Where a tag receive's information goes.
    pub recv_info: *mut TagRecvInfo,
    /// Unused here.
    pub memh: *mut c_void,
}

impl RequestParam {
    /// No attributes: no callback, contiguous bytes; completion is polled.
    pub fn plain() -> RequestParam {
        RequestParam {
            op_attr_mask: 0,
            flags: 0,
            request: std::ptr::null_mut(),
            cb: std::ptr::null_mut(),
            datatype: 0,
            user_data: std::ptr::null_mut(),
            reply_buffer: std::ptr::null_mut(),
            memory_type: 0,
            recv_info: std::ptr::null_mut(),
            memh: std::ptr::null_mut(),
        }
    }
}

/// The entry points wulf calls (signatures from ucp.h, UCX 1.13).
#[allow(missing_docs)]
pub struct Api {
    pub config_read: unsafe extern "C" fn(*const c_char, *const c_char, *mut Handle) -> Status,
    pub config_modify: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> Status,
    pub config_release: unsafe extern "C" fn(Handle),
    pub init_version:
        unsafe extern "C" fn(c_uint, c_uint, *const Params, Handle, *mut Handle) -> Status,
    pub cleanup: unsafe extern "C" fn(Handle),
    pub worker_create: unsafe extern "C" fn(Handle, *const WorkerParams, *mut Handle) -> Status,
    pub worker_destroy: unsafe extern "C" fn(Handle),
    pub worker_get_address: unsafe extern "C" fn(Handle, *mut *mut c_void, *mut usize) -> Status,
    pub worker_release_address: unsafe extern "C" fn(Handle, *mut c_void),
    pub worker_progress: unsafe extern "C" fn(Handle) -> c_uint,
    pub worker_get_efd: unsafe extern "C" fn(Handle, *mut c_int) -> Status,
    pub worker_arm: unsafe extern "C" fn(Handle) -> Status,
    pub ep_create: unsafe extern "C" fn(Handle, *const EpParams, *mut Handle) -> Status,
    pub ep_close_nbx: unsafe extern "C" fn(Handle, *const RequestParam) -> *mut c_void,
    pub ep_print_info: unsafe extern "C" fn(Handle, *mut libc::FILE),
    pub tag_send_nbx:
        unsafe extern "C" fn(Handle, *const c_void, usize, u64, *const RequestParam) -> *mut c_void,
    pub tag_recv_nbx: unsafe extern "C" fn(
        Handle,
        *mut c_void,
        usize,
        u64,
        u64,
        *const RequestParam,
    ) -> *mut c_void,
    pub request_check_status: unsafe extern "C" fn(*mut c_void) -> Status,
    pub tag_recv_request_test: unsafe extern "C" fn(*mut c_void, *mut TagRecvInfo) -> Status,
    pub request_cancel: unsafe extern "C" fn(Handle, *mut c_void),
    pub request_free: unsafe extern "C" fn(*mut c_void),
    pub status_string: unsafe extern "C" fn(Status) -> *const c_char,
    pub version_string: unsafe extern "C" fn() -> *const c_char,
}

/// Library names tried in order: the runtime package's soname first.
const NAMES: [&str; 2] = ["libucp.so.0", "libucp.so"];

fn open() -> Result<Api, String> {
    let lib =
        Library::open_first(&NAMES, "libucp").map_err(|why| format!("{INSTALL_HINT}: {why}"))?;
    // SAFETY: each type is the entry point's signature in ucp.h (UCX 1.13);
    // ucs_status_string is libucs's, found through libucp's dependencies.
    unsafe {
        Ok(Api {
            config_read: lib.function("ucp_config_read")?,
            config_modify: lib.function("ucp_config_modify")?,
            config_release: lib.function("ucp_config_release")?,
            init_version: lib.function("ucp_init_version")?,
            cleanup: lib.function("ucp_cleanup")?,
            worker_create: lib.function("ucp_worker_create")?,
            worker_destroy: lib.function("ucp_worker_destroy")?,
            worker_get_address: lib.function("ucp_worker_get_address")?,
            worker_release_address: lib.function("ucp_worker_release_address")?,
            worker_progress: lib.function("ucp_worker_progress")?,
            worker_get_efd: lib.function("ucp_worker_get_efd")?,
            worker_arm: lib.function("ucp_worker_arm")?,
            ep_create: lib.function("ucp_ep_create")?,
            ep_close_nbx: lib.function("ucp_ep_close_nbx")?,
            ep_print_info: lib.function("ucp_ep_print_info")?,
            tag_send_nbx: lib.function("ucp_tag_send_nbx")?,
            tag_recv_nbx: lib.function("ucp_tag_recv_nbx")?,
            request_check_status: lib.function("ucp_request_check_status")?,
            tag_recv_request_test: lib.function("ucp_tag_recv_request_test")?,
            request_cancel: lib.function("ucp_request_cancel")?,
            request_free: lib.function("ucp_request_free")?,
            status_string: lib.function("ucs_status_string")?,
            version_string: lib.function("ucp_get_version_string")?,
        })
    }
}

/// The library, loaded once per process (or why it could not be).
static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The loaded library, or the reason there is none (naming the packages).
pub fn api() -> Result<&'static Api, String> {
    API.get_or_init(open).as_ref().map_err(Clone::clone)
}

/// A C string UCX owns, as Rust text ("" for NULL).
fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null, NUL-terminated, static in UCX.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Api {
    /// UCX's version, e.g. "1.13.1".
    pub fn version(&self) -> String {
        // SAFETY: returns a static C string.
        text(unsafe { (self.version_string)() })
    }

    /// UCX's words for `status`.
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: returns a static C string for any status.
        format!(
            "{} (UCX status {status})",
            text(unsafe { (self.status_string)(status) })
        )
    }
}

/// What a `*_nbx` call returned.
#[derive(Clone, Copy)]
pub enum Started {
    /// Completed at once.
    Done,
    /// Failed with this status.
    Failed(Status),
    /// A request to poll and free.
    Pending(*mut c_void),
}

/// Sort a `ucs_status_ptr_t` (UCS_PTR_IS_ERR and UCS_PTR_RAW_STATUS).
pub fn started(p: *mut c_void) -> Started {
    if p.is_null() {
        Started::Done
    } else if (p as usize) >= (UCS_ERR_LAST as usize) {
        Started::Failed(p as isize as Status)
    } else {
        Started::Pending(p)
    }
}
