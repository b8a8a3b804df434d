//! The hand-written libfabric structures and ops tables against the
//! installed headers (rdma/*.h): a C program prints each structure's size
//! and the offsets of the fields and entry points wulf uses, which must
//! equal Rust's. The ops tables matter most: every call but a handful is an
//! inline wrapper in the headers that jumps through them, so a wrong offset
//! calls the wrong function.

use std::mem::{offset_of, size_of};

use wulf::transport::ofi::library::*;

/// Sizes and offsets of the attribute structures and entries.
fn structures() -> Vec<(&'static str, usize)> {
    vec![
        ("sizeof(struct fi_info)", size_of::<Info>()),
        ("offsetof(struct fi_info, caps)", offset_of!(Info, caps)),
        ("offsetof(struct fi_info, mode)", offset_of!(Info, mode)),
        (
            "offsetof(struct fi_info, tx_attr)",
            offset_of!(Info, tx_attr),
        ),
        (
            "offsetof(struct fi_info, ep_attr)",
            offset_of!(Info, ep_attr),
        ),
        (
            "offsetof(struct fi_info, domain_attr)",
            offset_of!(Info, domain_attr),
        ),
        (
            "offsetof(struct fi_info, fabric_attr)",
            offset_of!(Info, fabric_attr),
        ),
        ("sizeof(struct fi_tx_attr)", size_of::<TxAttr>()),
        (
            "offsetof(struct fi_tx_attr, inject_size)",
            offset_of!(TxAttr, inject_size),
        ),
        ("sizeof(struct fi_ep_attr)", size_of::<EpAttr>()),
        (
            "offsetof(struct fi_ep_attr, protocol)",
            offset_of!(EpAttr, protocol),
        ),
        (
            "offsetof(struct fi_ep_attr, max_msg_size)",
            offset_of!(EpAttr, max_msg_size),
        ),
        (
            "offsetof(struct fi_domain_attr, name)",
            offset_of!(DomainAttr, name),
        ),
        (
            "offsetof(struct fi_domain_attr, mr_mode)",
            offset_of!(DomainAttr, mr_mode),
        ),
        ("sizeof(struct fi_fabric_attr)", size_of::<FabricAttr>()),
        (
            "offsetof(struct fi_fabric_attr, name)",
            offset_of!(FabricAttr, name),
        ),
        (
            "offsetof(struct fi_fabric_attr, prov_name)",
            offset_of!(FabricAttr, prov_name),
        ),
        ("sizeof(struct fi_av_attr)", size_of::<AvAttr>()),
        (
            "offsetof(struct fi_av_attr, count)",
            offset_of!(AvAttr, count),
        ),
        ("sizeof(struct fi_cq_attr)", size_of::<CqAttr>()),
        (
            "offsetof(struct fi_cq_attr, format)",
            offset_of!(CqAttr, format),
        ),
        (
            "offsetof(struct fi_cq_attr, wait_obj)",
            offset_of!(CqAttr, wait_obj),
        ),
        (
            "offsetof(struct fi_cq_attr, wait_set)",
            offset_of!(CqAttr, wait_set),
        ),
        ("sizeof(struct fi_cq_tagged_entry)", size_of::<CqEntry>()),
        (
            "offsetof(struct fi_cq_tagged_entry, len)",
            offset_of!(CqEntry, len),
        ),
        ("sizeof(struct fi_cq_err_entry)", size_of::<CqErrEntry>()),
        (
            "offsetof(struct fi_cq_err_entry, olen)",
            offset_of!(CqErrEntry, olen),
        ),
        (
            "offsetof(struct fi_cq_err_entry, err)",
            offset_of!(CqErrEntry, err),
        ),
        (
            "offsetof(struct fi_cq_err_entry, prov_errno)",
            offset_of!(CqErrEntry, prov_errno),
        ),
        (
            "offsetof(struct fi_cq_err_entry, err_data_size)",
            offset_of!(CqErrEntry, err_data_size),
        ),
        ("sizeof(struct fi_context2)", size_of::<Context2>()),
    ]
}

/// The objects' headers and the offsets of the entry points called.
fn ops_tables() -> Vec<(&'static str, usize)> {
    vec![
        ("sizeof(struct fid)", size_of::<Fid>()),
        ("offsetof(struct fid, ops)", offset_of!(Fid, ops)),
        ("offsetof(struct fi_ops, close)", offset_of!(FidOps, close)),
        ("offsetof(struct fi_ops, bind)", offset_of!(FidOps, bind)),
        (
            "offsetof(struct fi_ops, control)",
            offset_of!(FidOps, control),
        ),
        ("offsetof(struct fid_fabric, ops)", offset_of!(Fabric, ops)),
        (
            "offsetof(struct fi_ops_fabric, domain)",
            offset_of!(FabricOps, domain),
        ),
        ("offsetof(struct fid_domain, ops)", offset_of!(Domain, ops)),
        (
            "offsetof(struct fi_ops_domain, av_open)",
            offset_of!(DomainOps, av_open),
        ),
        (
            "offsetof(struct fi_ops_domain, cq_open)",
            offset_of!(DomainOps, cq_open),
        ),
        (
            "offsetof(struct fi_ops_domain, endpoint)",
            offset_of!(DomainOps, endpoint),
        ),
        ("offsetof(struct fid_av, ops)", offset_of!(Av, ops)),
        (
            "offsetof(struct fi_ops_av, insert)",
            offset_of!(AvOps, insert),
        ),
        ("offsetof(struct fid_cq, ops)", offset_of!(Cq, ops)),
        ("offsetof(struct fi_ops_cq, read)", offset_of!(CqOps, read)),
        (
            "offsetof(struct fi_ops_cq, readerr)",
            offset_of!(CqOps, readerr),
        ),
        (
            "offsetof(struct fi_ops_cq, sread)",
            offset_of!(CqOps, sread),
        ),
        (
            "offsetof(struct fi_ops_cq, strerror)",
            offset_of!(CqOps, strerror),
        ),
        ("offsetof(struct fid_ep, ops)", offset_of!(Ep, ops)),
        ("offsetof(struct fid_ep, cm)", offset_of!(Ep, cm)),
        ("offsetof(struct fid_ep, tagged)", offset_of!(Ep, tagged)),
        (
            "offsetof(struct fi_ops_ep, cancel)",
            offset_of!(EpOps, cancel),
        ),
        (
            "offsetof(struct fi_ops_cm, getname)",
            offset_of!(CmOps, getname),
        ),
        (
            "offsetof(struct fi_ops_tagged, recv)",
            offset_of!(TaggedOps, recv),
        ),
        (
            "offsetof(struct fi_ops_tagged, send)",
            offset_of!(TaggedOps, send),
        ),
    ]
}

/// The constants wulf passes or compares.
fn constants() -> Vec<(&'static str, usize)> {
    vec![
        ("FI_MSG", FI_MSG as usize),
        ("FI_TAGGED", FI_TAGGED as usize),
        ("FI_RECV", FI_RECV as usize),
        ("FI_SEND", FI_SEND as usize),
        ("FI_TRANSMIT", FI_SEND as usize),
        ("FI_SOURCE", FI_SOURCE as usize),
        ("FI_CONTEXT", FI_CONTEXT as usize),
        ("FI_CONTEXT2", FI_CONTEXT2 as usize),
        ("FI_MR_LOCAL", FI_MR_LOCAL as usize),
        ("FI_EP_RDM", FI_EP_RDM as usize),
        ("FI_CQ_FORMAT_TAGGED", FI_CQ_FORMAT_TAGGED as usize),
        ("FI_WAIT_NONE", FI_WAIT_NONE as usize),
        ("FI_WAIT_UNSPEC", FI_WAIT_UNSPEC as usize),
        ("FI_ENABLE", FI_ENABLE as usize),
        ("FI_ADDR_UNSPEC", FI_ADDR_UNSPEC as usize),
        ("FI_EAGAIN", FI_EAGAIN as usize),
        ("FI_EAVAIL", FI_EAVAIL as usize),
        ("FI_TYPE_EP_TYPE", FI_TYPE_EP_TYPE as usize),
        ("FI_TYPE_PROTOCOL", FI_TYPE_PROTOCOL as usize),
        (
            "FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) >= 0x10011",
            1,
        ),
    ]
}

#[test]
fn structures_and_ops_tables_match_the_installed_headers() {
    let header = std::path::Path::new("/usr/include/rdma/fi_tagged.h");
    if !header.exists() {
        assert!(
            std::env::var_os("WULF_REQUIRE_OFI").is_none(),
            "WULF_REQUIRE_OFI is set but rdma/fi_tagged.h is missing (apt install libfabric-dev)"
        );
        eprintln!("SKIPPED: no rdma/fi_tagged.h (apt install libfabric-dev)");
        return;
    }
    let includes = [
        "fabric",
        "fi_domain",
        "fi_endpoint",
        "fi_tagged",
        "fi_eq",
        "fi_cm",
        "fi_errno",
    ]
    .map(|h| format!("#include <rdma/{h}.h>\n"))
    .concat();
    let mut layout = structures();
    layout.extend(ops_tables());
    layout.extend(constants());
    crate::common::assert_c_layout(&includes, &layout);
}
