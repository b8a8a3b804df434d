//! The hand-written structures against UCX's own header: a C program
//! compiled against the installed ucp.h prints each structure's size and
//! the offsets of the fields wulf sets, which must equal Rust's.

use std::mem::{offset_of, size_of};

use wulf::transport::ucx::library::*;

/// (C expression, Rust value) pairs: sizes and offsets.
fn rust_layout() -> Vec<(&'static str, usize)> {
    vec![
        ("sizeof(ucp_params_t)", size_of::<Params>()),
        (
            "offsetof(ucp_params_t, features)",
            offset_of!(Params, features),
        ),
        ("offsetof(ucp_params_t, name)", offset_of!(Params, name)),
        ("sizeof(ucp_worker_params_t)", size_of::<WorkerParams>()),
        (
            "offsetof(ucp_worker_params_t, thread_mode)",
            offset_of!(WorkerParams, thread_mode),
        ),
        (
            "offsetof(ucp_worker_params_t, client_id)",
            offset_of!(WorkerParams, client_id),
        ),
        ("sizeof(ucp_ep_params_t)", size_of::<EpParams>()),
        (
            "offsetof(ucp_ep_params_t, address)",
            offset_of!(EpParams, address),
        ),
        (
            "offsetof(ucp_ep_params_t, local_sockaddr)",
            offset_of!(EpParams, local_sockaddr),
        ),
        ("sizeof(ucp_request_param_t)", size_of::<RequestParam>()),
        (
            "offsetof(ucp_request_param_t, flags)",
            offset_of!(RequestParam, flags),
        ),
        (
            "offsetof(ucp_request_param_t, recv_info)",
            offset_of!(RequestParam, recv_info),
        ),
        (
            "offsetof(ucp_request_param_t, memh)",
            offset_of!(RequestParam, memh),
        ),
        ("sizeof(ucp_tag_recv_info_t)", size_of::<TagRecvInfo>()),
        ("sizeof(ucs_status_t)", size_of::<Status>()),
        ("UCP_FEATURE_TAG", UCP_FEATURE_TAG as usize),
        ("UCP_FEATURE_WAKEUP", UCP_FEATURE_WAKEUP as usize),
        (
            "UCP_OP_ATTR_FIELD_RECV_INFO",
            UCP_OP_ATTR_FIELD_RECV_INFO as usize,
        ),
        ("UCP_OP_ATTR_FIELD_FLAGS", UCP_OP_ATTR_FIELD_FLAGS as usize),
        (
            "UCP_OP_ATTR_FLAG_NO_IMM_CMPL",
            UCP_OP_ATTR_FLAG_NO_IMM_CMPL as usize,
        ),
        ("UCP_EP_CLOSE_FLAG_FORCE", UCP_EP_CLOSE_FLAG_FORCE as usize),
        (
            "UCS_THREAD_MODE_SERIALIZED",
            UCS_THREAD_MODE_SERIALIZED as usize,
        ),
        (
            "(size_t)(UCS_ERR_BUSY + 256)",
            (UCS_ERR_BUSY as isize + 256) as usize,
        ),
        ("UCP_API_MINOR >= 13", 1),
    ]
}

#[test]
fn structures_match_the_installed_header() {
    let header = std::path::Path::new("/usr/include/ucp/api/ucp.h");
    if !header.exists() {
        assert!(
            std::env::var_os("WULF_REQUIRE_UCX").is_none(),
            "WULF_REQUIRE_UCX is set but ucp.h is missing (apt install libucx-dev)"
        );
        eprintln!("SKIPPED: no ucp.h (apt install libucx-dev)");
        return;
    }
    crate::common::assert_c_layout("#include <ucp/api/ucp.h>\n", &rust_layout());
}

#[test]
fn status_pointers_sort_as_ucs_ptr_is_err_does() {
    assert!(matches!(started(std::ptr::null_mut()), Started::Done));
    let busy = UCS_ERR_BUSY as isize as *mut std::ffi::c_void;
    assert!(matches!(started(busy), Started::Failed(UCS_ERR_BUSY)));
    let last = -100isize as *mut std::ffi::c_void;
    assert!(matches!(started(last), Started::Failed(-100)));
    let request = 0x1000 as *mut std::ffi::c_void;
    assert!(matches!(started(request), Started::Pending(_)));
}
