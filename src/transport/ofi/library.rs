//! libfabric (OFI), loaded at run time ([`crate::sys::dynlib`]): the
//! system's own library, the one a site's MPI (`mtl ofi`, ch4:ofi) uses,
//! bound through the calls wulf makes.
//!
//! Only `fi_getinfo`, `fi_freeinfo`, `fi_dupinfo`, `fi_fabric`,
//! `fi_strerror`, `fi_tostr_r` and `fi_version` are exported symbols; every
//! other call (`fi_domain`, `fi_endpoint`, `fi_tsend`, `fi_cq_read`...) is
//! a static inline wrapper in the headers that calls through the ops table
//! of the object it is given, so those tables are written out here as the
//! headers of libfabric 1.17 define them (fabric.h, fi_domain.h,
//! fi_endpoint.h, fi_tagged.h, fi_eq.h, fi_cm.h). Ops tables only grow at
//! their end across releases (each carries its size), and a test compiles a
//! C program against the installed headers to compare every size and
//! offset used.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use crate::sys::dynlib::Library;

/// What to install where libfabric is missing.
pub const INSTALL_HINT: &str =
    "libfabric is not installed (apt install libfabric1; libfabric-bin for fi_info and fi_pingpong)";

/// FI_MSG: the message interface.
pub const FI_MSG: u64 = 1 << 1;
/// FI_TAGGED: the tagged interface.
pub const FI_TAGGED: u64 = 1 << 3;
/// FI_RECV (capability and completion flag).
pub const FI_RECV: u64 = 1 << 10;
/// FI_SEND, also FI_TRANSMIT (capability, completion and bind flag).
pub const FI_SEND: u64 = 1 << 11;
/// FI_SOURCE: `fi_getinfo`'s node and service are the local address.
pub const FI_SOURCE: u64 = 1 << 57;
/// Mode FI_CONTEXT: every operation's context is a `struct fi_context`.
pub const FI_CONTEXT: u64 = 1 << 59;
/// Mode FI_CONTEXT2: every operation's context is a `struct fi_context2`.
pub const FI_CONTEXT2: u64 = 1 << 52;
/// Memory-registration mode FI_MR_LOCAL: sends and receives need
/// registered buffers (wulf registers none, so it asks for none).
pub const FI_MR_LOCAL: c_int = 1 << 2;
/// FI_EP_RDM: reliable datagram endpoints (connectionless, reliable).
pub const FI_EP_RDM: c_int = 3;
/// FI_CQ_FORMAT_TAGGED.
pub const FI_CQ_FORMAT_TAGGED: c_int = 4;
/// FI_WAIT_NONE: a completion queue only polled.
pub const FI_WAIT_NONE: c_int = 0;
/// FI_WAIT_UNSPEC: a completion queue `fi_cq_sread` may sleep on.
pub const FI_WAIT_UNSPEC: c_int = 1;
/// FI_ENABLE, `fi_control`'s command behind `fi_enable`.
pub const FI_ENABLE: c_int = 6;
/// FI_ADDR_UNSPEC: a receive from any source.
pub const FI_ADDR_UNSPEC: u64 = u64::MAX;
/// FI_EAGAIN: nothing to read yet, or a queue is full.
pub const FI_EAGAIN: isize = libc::EAGAIN as isize;
/// FI_EAVAIL: an error entry is waiting on the completion queue.
pub const FI_EAVAIL: isize = 259;
/// FI_TYPE_EP_TYPE, for `fi_tostr_r`.
pub const FI_TYPE_EP_TYPE: c_int = 1;
/// FI_TYPE_PROTOCOL, for `fi_tostr_r`.
pub const FI_TYPE_PROTOCOL: c_int = 12;
/// The API version wulf asks for (1.17, or the library's if older).
pub const API_VERSION: u32 = (1 << 16) | 17;

/// `struct fid`: every object starts with it.
#[repr(C)]
pub struct Fid {
    /// The kind of object.
    pub fclass: usize,
    /// The context given when it was opened.
    pub context: *mut c_void,
    /// Its base operations.
    pub ops: *const FidOps,
}

/// `struct fi_ops`.
#[repr(C)]
pub struct FidOps {
    /// The table's size.
    pub size: usize,
    /// `fi_close`.
    pub close: unsafe extern "C" fn(*mut Fid) -> c_int,
    /// `fi_ep_bind` and the other binds.
    pub bind: unsafe extern "C" fn(*mut Fid, *mut Fid, u64) -> c_int,
    /// `fi_control` (`fi_enable`).
    pub control: unsafe extern "C" fn(*mut Fid, c_int, *mut c_void) -> c_int,
}

/// `struct fi_tx_attr`.
#[repr(C)]
pub struct TxAttr {
    /// Capabilities.
    pub caps: u64,
    /// Mode bits.
    pub mode: u64,
    /// Default operation flags.
    pub op_flags: u64,
    /// Message ordering.
    pub msg_order: u64,
    /// Completion ordering.
    pub comp_order: u64,
    /// The largest message `fi_inject` takes.
    pub inject_size: usize,
    /// Queue depth.
    pub size: usize,
    /// Unused here.
    pub iov_limit: usize,
    /// Unused here.
    pub rma_iov_limit: usize,
    /// Unused here.
    pub tclass: u32,
}

/// `struct fi_ep_attr`.
#[repr(C)]
pub struct EpAttr {
    /// An `enum fi_ep_type`.
    pub ep_type: c_int,
    /// An `enum fi_protocol`.
    pub protocol: u32,
    /// Unused here.
    pub protocol_version: u32,
    /// The largest message.
    pub max_msg_size: usize,
    /// Unused here.
    pub msg_prefix_size: usize,
    /// Unused here.
    pub max_order_raw_size: usize,
    /// Unused here.
    pub max_order_war_size: usize,
    /// Unused here.
    pub max_order_waw_size: usize,
    /// Unused here.
    pub mem_tag_format: u64,
    /// Unused here.
    pub tx_ctx_cnt: usize,
    /// Unused here.
    pub rx_ctx_cnt: usize,
    /// Unused here.
    pub auth_key_size: usize,
    /// Unused here.
    pub auth_key: *mut u8,
}

/// `struct fi_domain_attr`, up to the fields wulf reads or sets (the
/// library allocates it; wulf never makes one).
#[repr(C)]
pub struct DomainAttr {
    /// Unused here.
    pub domain: *mut c_void,
    /// The domain's name (an interface, "shm"...).
    pub name: *mut c_char,
    /// Unused here.
    pub threading: c_int,
    /// Unused here.
    pub control_progress: c_int,
    /// Unused here.
    pub data_progress: c_int,
    /// Unused here.
    pub resource_mgmt: c_int,
    /// Unused here.
    pub av_type: c_int,
    /// FI_MR_* bits the provider requires.
    pub mr_mode: c_int,
}

/// `struct fi_fabric_attr`.
#[repr(C)]
pub struct FabricAttr {
    /// Unused here.
    pub fabric: *mut c_void,
    /// The fabric's name (a subnet, "shm"...).
    pub name: *mut c_char,
    /// The provider, layered ones joined by ';' ("tcp;ofi_rxm").
    pub prov_name: *mut c_char,
    /// Unused here.
    pub prov_version: u32,
    /// Unused here.
    pub api_version: u32,
}

/// `struct fi_info`.
#[repr(C)]
pub struct Info {
    /// The next match.
    pub next: *mut Info,
    /// Capabilities.
    pub caps: u64,
    /// Mode bits the application supports (hints) or must honour.
    pub mode: u64,
    /// Unused here.
    pub addr_format: u32,
    /// Unused here.
    pub src_addrlen: usize,
    /// Unused here.
    pub dest_addrlen: usize,
    /// Unused here.
    pub src_addr: *mut c_void,
    /// Unused here.
    pub dest_addr: *mut c_void,
    /// Unused here.
    pub handle: *mut Fid,
    /// Transmit attributes.
    pub tx_attr: *mut TxAttr,
    /// Unused here.
    pub rx_attr: *mut c_void,
    /// Endpoint attributes.
    pub ep_attr: *mut EpAttr,
    /// Domain attributes.
    pub domain_attr: *mut DomainAttr,
    /// Fabric attributes.
    pub fabric_attr: *mut FabricAttr,
    /// Unused here.
    pub nic: *mut c_void,
}

/// `struct fi_ops_fabric`, up to `domain`.
#[repr(C)]
pub struct FabricOps {
    /// The table's size.
    pub size: usize,
    /// `fi_domain`.
    pub domain:
        unsafe extern "C" fn(*mut Fabric, *mut Info, *mut *mut Domain, *mut c_void) -> c_int,
}

/// `struct fid_fabric`.
#[repr(C)]
pub struct Fabric {
    /// Its fid.
    pub fid: Fid,
    /// Its operations.
    pub ops: *const FabricOps,
}

/// `struct fi_av_attr`.
#[repr(C)]
pub struct AvAttr {
    /// An `enum fi_av_type` (0: the provider's choice).
    pub av_type: c_int,
    /// Unused here.
    pub rx_ctx_bits: c_int,
    /// Addresses expected.
    pub count: usize,
    /// Unused here.
    pub ep_per_node: usize,
    /// Unused here.
    pub name: *const c_char,
    /// Unused here.
    pub map_addr: *mut c_void,
    /// Unused here.
    pub flags: u64,
}

/// `struct fi_cq_attr`.
#[repr(C)]
pub struct CqAttr {
    /// Entries (0: the provider's default).
    pub size: usize,
    /// Unused here.
    pub flags: u64,
    /// An `enum fi_cq_format`.
    pub format: c_int,
    /// An `enum fi_wait_obj`.
    pub wait_obj: c_int,
    /// Unused here.
    pub signaling_vector: c_int,
    /// Unused here (FI_CQ_COND_NONE).
    pub wait_cond: c_int,
    /// Unused here.
    pub wait_set: *mut c_void,
}

/// The opening calls of `struct fi_ops_domain`, up to `endpoint`.
#[repr(C)]
pub struct DomainOps {
    /// The table's size.
    pub size: usize,
    /// `fi_av_open`.
    pub av_open: unsafe extern "C" fn(*mut Domain, *mut AvAttr, *mut *mut Av, *mut c_void) -> c_int,
    /// `fi_cq_open`.
    pub cq_open: unsafe extern "C" fn(*mut Domain, *mut CqAttr, *mut *mut Cq, *mut c_void) -> c_int,
    /// `fi_endpoint`.
    pub endpoint: unsafe extern "C" fn(*mut Domain, *mut Info, *mut *mut Ep, *mut c_void) -> c_int,
}

/// `struct fid_domain`.
#[repr(C)]
pub struct Domain {
    /// Its fid.
    pub fid: Fid,
    /// Its operations.
    pub ops: *const DomainOps,
}

/// `struct fi_ops_av`, up to `insert`.
#[repr(C)]
pub struct AvOps {
    /// The table's size.
    pub size: usize,
    /// `fi_av_insert`.
    pub insert:
        unsafe extern "C" fn(*mut Av, *const c_void, usize, *mut u64, u64, *mut c_void) -> c_int,
}

/// `struct fid_av`.
#[repr(C)]
pub struct Av {
    /// Its fid.
    pub fid: Fid,
    /// Its operations.
    pub ops: *const AvOps,
}

/// `struct fi_cq_tagged_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CqEntry {
    /// The operation's context.
    pub op_context: *mut c_void,
    /// FI_SEND, FI_RECV...
    pub flags: u64,
    /// Bytes received.
    pub len: usize,
    /// Unused here.
    pub buf: *mut c_void,
    /// Unused here.
    pub data: u64,
    /// The message's tag.
    pub tag: u64,
}

impl CqEntry {
    /// An entry for the queue to overwrite.
    pub const EMPTY: CqEntry = CqEntry {
        op_context: std::ptr::null_mut(),
        flags: 0,
        len: 0,
        buf: std::ptr::null_mut(),
        data: 0,
        tag: 0,
    };
}

/// `struct fi_cq_err_entry`.
#[repr(C)]
pub struct CqErrEntry {
    /// The failed operation's context.
    pub op_context: *mut c_void,
    /// FI_SEND, FI_RECV...
    pub flags: u64,
    /// Bytes moved.
    pub len: usize,
    /// Unused here.
    pub buf: *mut c_void,
    /// Unused here.
    pub data: u64,
    /// The tag.
    pub tag: u64,
    /// Bytes that did not fit (FI_ETRUNC).
    pub olen: usize,
    /// A positive FI_E* error.
    pub err: c_int,
    /// The provider's own error.
    pub prov_errno: c_int,
    /// The provider's error data.
    pub err_data: *mut c_void,
    /// Its size (0: the provider may not write any).
    pub err_data_size: usize,
}

/// `struct fi_ops_cq`, up to `strerror`.
#[repr(C)]
pub struct CqOps {
    /// The table's size.
    pub size: usize,
    /// `fi_cq_read`.
    pub read: unsafe extern "C" fn(*mut Cq, *mut c_void, usize) -> isize,
    /// Unused here.
    pub readfrom: *const c_void,
    /// `fi_cq_readerr`.
    pub readerr: unsafe extern "C" fn(*mut Cq, *mut CqErrEntry, u64) -> isize,
    /// `fi_cq_sread`.
    pub sread: unsafe extern "C" fn(*mut Cq, *mut c_void, usize, *const c_void, c_int) -> isize,
    /// Unused here.
    pub sreadfrom: *const c_void,
    /// Unused here.
    pub signal: *const c_void,
    /// `fi_cq_strerror`.
    pub strerror:
        unsafe extern "C" fn(*mut Cq, c_int, *const c_void, *mut c_char, usize) -> *const c_char,
}

/// `struct fid_cq`.
#[repr(C)]
pub struct Cq {
    /// Its fid.
    pub fid: Fid,
    /// Its operations.
    pub ops: *const CqOps,
}

/// `struct fi_ops_ep`, up to `cancel`.
#[repr(C)]
pub struct EpOps {
    /// The table's size.
    pub size: usize,
    /// `fi_cancel`.
    pub cancel: unsafe extern "C" fn(*mut Fid, *mut c_void) -> isize,
}

/// `struct fi_ops_cm`, up to `getname`.
#[repr(C)]
pub struct CmOps {
    /// The table's size.
    pub size: usize,
    /// Unused here.
    pub setname: *const c_void,
    /// `fi_getname`.
    pub getname: unsafe extern "C" fn(*mut Fid, *mut c_void, *mut usize) -> c_int,
}

/// `struct fi_ops_tagged`, up to `send`.
#[repr(C)]
pub struct TaggedOps {
    /// The table's size.
    pub size: usize,
    /// `fi_trecv`.
    pub recv: unsafe extern "C" fn(
        *mut Ep,
        *mut c_void,
        usize,
        *mut c_void,
        u64,
        u64,
        u64,
        *mut c_void,
    ) -> isize,
    /// Unused here.
    pub recvv: *const c_void,
    /// Unused here.
    pub recvmsg: *const c_void,
    /// `fi_tsend`.
    pub send: unsafe extern "C" fn(
        *mut Ep,
        *const c_void,
        usize,
        *mut c_void,
        u64,
        u64,
        *mut c_void,
    ) -> isize,
}

/// `struct fid_ep`, up to `tagged`.
#[repr(C)]
pub struct Ep {
    /// Its fid.
    pub fid: Fid,
    /// Its endpoint operations.
    pub ops: *const EpOps,
    /// Its connection operations.
    pub cm: *const CmOps,
    /// Unused here (the message interface).
    pub msg: *const c_void,
    /// Unused here.
    pub rma: *const c_void,
    /// Its tagged operations.
    pub tagged: *const TaggedOps,
}

/// `struct fi_context2`: the space a provider in FI_CONTEXT2 (or
/// FI_CONTEXT) mode keeps per operation.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Context2 {
    /// The provider's.
    pub internal: [*mut c_void; 8],
}

impl Context2 {
    /// An unused context.
    pub const EMPTY: Context2 = Context2 {
        internal: [std::ptr::null_mut(); 8],
    };
}

/// The exported entry points wulf calls (signatures from fabric.h, 1.17).
#[allow(missing_docs)]
pub struct Api {
    pub getinfo: unsafe extern "C" fn(
        u32,
        *const c_char,
        *const c_char,
        u64,
        *const Info,
        *mut *mut Info,
    ) -> c_int,
    pub freeinfo: unsafe extern "C" fn(*mut Info),
    pub dupinfo: unsafe extern "C" fn(*const Info) -> *mut Info,
    pub fabric: unsafe extern "C" fn(*mut FabricAttr, *mut *mut Fabric, *mut c_void) -> c_int,
    pub strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    pub tostr_r: unsafe extern "C" fn(*mut c_char, usize, *const c_void, c_int) -> *mut c_char,
    pub version: unsafe extern "C" fn() -> u32,
}

/// Library names tried in order: the runtime package's soname first.
const NAMES: [&str; 2] = ["libfabric.so.1", "libfabric.so"];

fn open() -> Result<Api, String> {
    let lib =
        Library::open_first(&NAMES, "libfabric").map_err(|why| format!("{INSTALL_HINT}: {why}"))?;
    // SAFETY: each type is the entry point's signature in fabric.h and
    // fi_errno.h (libfabric 1.17).
    unsafe {
        Ok(Api {
            getinfo: lib.function("fi_getinfo")?,
            freeinfo: lib.function("fi_freeinfo")?,
            dupinfo: lib.function("fi_dupinfo")?,
            fabric: lib.function("fi_fabric")?,
            strerror: lib.function("fi_strerror")?,
            tostr_r: lib.function("fi_tostr_r")?,
            version: lib.function("fi_version")?,
        })
    }
}

/// The library, loaded once per process (or why it could not be).
static API: OnceLock<Result<Api, String>> = OnceLock::new();

/// The loaded library, or the reason there is none (naming the packages).
pub fn api() -> Result<&'static Api, String> {
    API.get_or_init(open).as_ref().map_err(Clone::clone)
}

/// A C string libfabric owns, as Rust text ("" for NULL).
pub(super) fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated, owned by libfabric.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Api {
    /// libfabric's version, e.g. "1.17".
    pub fn version_text(&self) -> String {
        // SAFETY: a plain query.
        let v = unsafe { (self.version)() };
        format!("{}.{}", v >> 16, v & 0xffff)
    }

    /// The API version to ask for: wulf's, or the library's if older.
    pub fn api_version(&self) -> u32 {
        // SAFETY: a plain query.
        API_VERSION.min(unsafe { (self.version)() })
    }

    /// libfabric's words for a (negative or positive) FI_E* return.
    pub fn describe(&self, ret: isize) -> String {
        let code = ret.unsigned_abs() as c_int;
        // SAFETY: returns a static C string for any number.
        format!(
            "{} (libfabric error {code})",
            text(unsafe { (self.strerror)(code) })
        )
    }

    /// libfabric's name for the enum value `value` of `kind` (FI_TYPE_*).
    pub fn enum_name(&self, value: u32, kind: c_int) -> String {
        let mut buf = [0 as c_char; 64];
        // SAFETY: a buffer of its length; the value is read as the enum.
        let p = unsafe {
            (self.tostr_r)(
                buf.as_mut_ptr(),
                buf.len(),
                (&value as *const u32).cast(),
                kind,
            )
        };
        text(p).trim().to_string()
    }
}
