//! What wulf asks of `fi_getinfo` (the hints) and what libfabric answered
//! (the provider, endpoint type and names a result records).

use std::ffi::CString;
use std::io;

use super::library::{self as fi, Api};

/// What libfabric chose for an endpoint, as a result records it.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The provider, layered ones joined by ';' ("tcp;ofi_rxm").
    pub provider: String,
    /// The fabric's name (a subnet, "shm").
    pub fabric: String,
    /// The domain's name (an interface, "shm").
    pub domain: String,
    /// "FI_EP_RDM".
    pub endpoint_type: String,
    /// The wire protocol ("FI_PROTO_RXM").
    pub protocol: String,
    /// The largest message the endpoint takes, in bytes.
    pub max_msg_bytes: usize,
    /// The largest message `fi_inject` would take, in bytes.
    pub inject_bytes: usize,
}

impl Chosen {
    /// What `info`, an answer of `fi_getinfo`, says was chosen.
    ///
    /// # Safety
    /// `info` and its attributes must be libfabric's, alive.
    pub unsafe fn of(api: &Api, info: &fi::Info) -> Chosen {
        // SAFETY: the caller vouches for the attributes.
        unsafe {
            let ep = &*info.ep_attr;
            Chosen {
                provider: fi::text((*info.fabric_attr).prov_name),
                fabric: fi::text((*info.fabric_attr).name),
                domain: fi::text((*info.domain_attr).name),
                endpoint_type: api.enum_name(ep.ep_type as u32, fi::FI_TYPE_EP_TYPE),
                protocol: api.enum_name(ep.protocol, fi::FI_TYPE_PROTOCOL),
                max_msg_bytes: ep.max_msg_size,
                inject_bytes: (*info.tx_attr).inject_size,
            }
        }
    }
}

/// The hints: tagged messages on an RDM endpoint of `provider`, a context
/// per operation supplied, no memory registration.
pub fn hints(api: &Api, provider: &str) -> io::Result<*mut fi::Info> {
    // SAFETY: fi_allocinfo is fi_dupinfo(NULL): every attribute allocated.
    let hints = unsafe { (api.dupinfo)(std::ptr::null()) };
    if hints.is_null() {
        return Err(io::Error::other("fi_allocinfo failed"));
    }
    let name = CString::new(provider).map_err(io::Error::other)?;
    // SAFETY: the attributes fi_allocinfo made; the provider's name is
    // strdup'ed, as fi_freeinfo frees it.
    unsafe {
        (*hints).caps = fi::FI_TAGGED;
        (*hints).mode = fi::FI_CONTEXT | fi::FI_CONTEXT2;
        (*(*hints).ep_attr).ep_type = fi::FI_EP_RDM;
        (*(*hints).domain_attr).mr_mode = 0;
        (*(*hints).fabric_attr).prov_name = libc::strdup(name.as_ptr());
    }
    Ok(hints)
}
