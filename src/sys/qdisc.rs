//! The root queueing discipline of a network interface and, when it is a
//! shaper (`tbf` or `htb`), the rate it lets traffic leave at.
//!
//! A veth or a NIC under `tc qdisc add dev X root tbf rate 1gbit ...` carries
//! at most 1 Gbit/s whatever speed sysfs reports, so a link limit computed
//! from the nominal speed would make any measurement over it look poor. The
//! shaper's rate is the link's real speed.
//!
//! The kernel is asked over rtnetlink, with the two dump requests `tc qdisc
//! show` and `tc class show` send: no subprocess (iproute2 may be missing) and
//! no crate for a few dozen bytes of parsing. Rates travel as bytes per second
//! in `struct tc_ratespec`, with 64-bit attributes for rates beyond 2^32 - 1
//! bytes/s (about 34 Gbit/s).
//!
//! What this does not see: filters (traffic a filter steers to another htb
//! class than the default is not accounted), child qdiscs below a
//! non-shaping root (e.g. `mq` with a tbf per queue), ingress policing, and
//! the `overhead`/`linklayer` corrections of a rate table. All of it is per
//! network namespace, like the rest of the interface's description.

use std::os::fd::AsRawFd;
use std::time::Duration;

/// Longest wait for one reply datagram.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(1);

use nix::sys::socket::{
    recv, sendto, setsockopt, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};
use nix::sys::time::TimeVal;

/// A root qdisc as read from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootQdisc {
    /// The qdisc's kind as tc names it: "htb", "tbf", "noqueue", "fq_codel"...
    pub kind: String,
    /// The rate traffic leaves at, bytes/s, when the qdisc is a shaper whose
    /// rate applies to unclassified traffic; `None` otherwise.
    pub rate_bytes_per_s: Option<u64>,
}

// From <linux/netlink.h>, <linux/rtnetlink.h> and <linux/pkt_sched.h>.
const NLMSG_HDR_BYTES: usize = 16;
const TCMSG_BYTES: usize = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const RTM_NEWTCLASS: u16 = 40;
const RTM_GETTCLASS: u16 = 42;
/// Attribute type bits; the top two are the nested and byte-order flags.
const NLA_TYPE_MASK: u16 = 0x3fff;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
/// The parent of a root qdisc (and of an htb class directly below it).
const TC_H_ROOT: u32 = 0xffff_ffff;
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
/// Offset of `rate` in `struct tc_ratespec` (after cell_log, linklayer,
/// overhead, cell_align, mpu).
const RATESPEC_RATE_OFFSET: usize = 8;
/// Size of `struct tc_ratespec`.
const RATESPEC_BYTES: usize = 12;
/// Offset of `level` in `struct tc_htb_opt` (rate, ceil, buffer, cbuffer,
/// quantum, level, prio).
const HTB_LEVEL_OFFSET: usize = 36;
/// Offset of `defcls` in `struct tc_htb_glob` (version, rate2quantum, defcls).
const HTB_DEFCLS_OFFSET: usize = 8;

/// The root qdisc of interface `ifname` in this network namespace, with its
/// shaping rate. `None` when the interface does not exist or the kernel
/// cannot be asked (no rtnetlink in a sandbox).
pub fn root_qdisc(ifname: &str) -> Option<RootQdisc> {
    let ifindex = nix::net::if_::if_nametoindex(ifname).ok()?;
    let qdiscs = dump(RTM_GETQDISC, ifindex)?;
    root_of(ifindex, &qdiscs, || {
        dump(RTM_GETTCLASS, ifindex).unwrap_or_default()
    })
}

/// The root qdisc of interface `ifindex` among the dumped `qdiscs`; the htb
/// classes are asked for only when the root is htb.
fn root_of(
    ifindex: u32,
    qdiscs: &[TcMessage],
    classes: impl FnOnce() -> Vec<TcMessage>,
) -> Option<RootQdisc> {
    let root = qdiscs
        .iter()
        .find(|m| m.ifindex == ifindex && m.parent == TC_H_ROOT)?;
    let kind = root.kind()?;
    let options = root.attr(TCA_OPTIONS);
    let rate_bytes_per_s = match kind.as_str() {
        "tbf" => options.and_then(tbf_rate),
        "htb" => options.and_then(|o| {
            let defcls = u32_at(find_attr(o, TCA_HTB_INIT)?, HTB_DEFCLS_OFFSET)?;
            let classes: Vec<HtbClass> = classes()
                .iter()
                .filter(|m| m.ifindex == ifindex)
                .filter_map(htb_class)
                .collect();
            htb_default_rate(root.handle, defcls, &classes)
        }),
        _ => None,
    };
    Some(RootQdisc {
        kind,
        rate_bytes_per_s,
    })
}

/// One traffic-control message: the `struct tcmsg` fields used and the raw
/// attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TcMessage {
    ifindex: u32,
    handle: u32,
    parent: u32,
    attrs: Vec<u8>,
}

impl TcMessage {
    fn attr(&self, kind: u16) -> Option<&[u8]> {
        find_attr(&self.attrs, kind)
    }

    fn kind(&self) -> Option<String> {
        let raw = self.attr(TCA_KIND)?;
        let text = raw.split(|b| *b == 0).next()?;
        Some(String::from_utf8_lossy(text).into_owned())
    }
}

/// Send one dump request and collect the replies until the kernel says done.
fn dump(msg_type: u16, ifindex: u32) -> Option<Vec<TcMessage>> {
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .ok()?;
    // A kernel that never answers must not hang the fingerprint.
    let timeout = TimeVal::new(RECEIVE_TIMEOUT.as_secs() as _, 0);
    setsockopt(&fd, sockopt::ReceiveTimeout, &timeout).ok()?;
    const SEQ: u32 = 1;
    let req = request(msg_type, ifindex, SEQ);
    sendto(
        fd.as_raw_fd(),
        &req,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .ok()?;
    let reply_type = match msg_type {
        RTM_GETQDISC => RTM_NEWQDISC,
        _ => RTM_NEWTCLASS,
    };
    // Dump replies come in datagrams of at most 32 KiB.
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::new();
    loop {
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()).ok()?;
        if n == 0 || parse_replies(&buf[..n], reply_type, SEQ, &mut out)? {
            return Some(out);
        }
    }
}

/// A dump request: `struct nlmsghdr` followed by `struct tcmsg` asking for
/// interface `ifindex` (the class dump needs it; the qdisc dump may ignore
/// it, so replies are filtered again).
fn request(msg_type: u16, ifindex: u32, seq: u32) -> Vec<u8> {
    let len = (NLMSG_HDR_BYTES + TCMSG_BYTES) as u32;
    let mut m = Vec::with_capacity(len as usize);
    m.extend_from_slice(&len.to_ne_bytes());
    m.extend_from_slice(&msg_type.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
    m.extend_from_slice(&[0u8; 4]); // family AF_UNSPEC, padding
    m.extend_from_slice(&ifindex.to_ne_bytes());
    m.extend_from_slice(&[0u8; 12]); // handle, parent, info
    m
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Netlink aligns messages and attributes to 4 bytes.
fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Parse one datagram of replies, appending messages of `reply_type` and
/// sequence `seq` to `out`. `Some(true)` at the end of the dump, `Some(false)`
/// when more datagrams follow, `None` on an error reply or a malformed one.
fn parse_replies(buf: &[u8], reply_type: u16, seq: u32, out: &mut Vec<TcMessage>) -> Option<bool> {
    let mut at = 0;
    while at + NLMSG_HDR_BYTES <= buf.len() {
        let len = u32_at(buf, at)? as usize;
        let kind = u16_at(buf, at + 4)?;
        if len < NLMSG_HDR_BYTES || at + len > buf.len() {
            return None;
        }
        let body = &buf[at + NLMSG_HDR_BYTES..at + len];
        match kind {
            NLMSG_DONE => return Some(true),
            NLMSG_ERROR => return None,
            k if k == reply_type && u32_at(buf, at + 8)? == seq && body.len() >= TCMSG_BYTES => {
                out.push(TcMessage {
                    ifindex: u32_at(body, 4)?,
                    handle: u32_at(body, 8)?,
                    parent: u32_at(body, 12)?,
                    attrs: body[TCMSG_BYTES..].to_vec(),
                });
            }
            _ => {}
        }
        at += align4(len);
    }
    Some(false)
}

/// The payload of the first attribute of type `kind` in a run of attributes.
fn find_attr(mut attrs: &[u8], kind: u16) -> Option<&[u8]> {
    while attrs.len() >= 4 {
        let len = u16_at(attrs, 0)? as usize;
        let t = u16_at(attrs, 2)? & NLA_TYPE_MASK;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if t == kind {
            return Some(&attrs[4..len]);
        }
        attrs = attrs.get(align4(len)..).unwrap_or(&[]);
    }
    None
}

/// The rate of a `tc_ratespec` starting at `at`, or the 64-bit attribute the
/// kernel adds when the rate does not fit 32 bits.
fn rate_at(parms: &[u8], at: usize, options: &[u8], attr64: u16) -> Option<u64> {
    if let Some(r) = find_attr(options, attr64).and_then(|b| u64_at(b, 0)) {
        return Some(r);
    }
    u32_at(parms, at + RATESPEC_RATE_OFFSET).map(u64::from)
}

/// A tbf qdisc's rate from its options (`struct tc_tbf_qopt` starts with the
/// rate's `tc_ratespec`). The peak rate only bounds bursts, so the sustained
/// rate is the limit.
fn tbf_rate(options: &[u8]) -> Option<u64> {
    let parms = find_attr(options, TCA_TBF_PARMS)?;
    rate_at(parms, 0, options, TCA_TBF_RATE64).filter(|r| *r > 0)
}

/// One htb class: where it hangs and how fast it may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HtbClass {
    classid: u32,
    parent: u32,
    /// 0 for a leaf: only leaves hold traffic.
    level: u32,
    rate: u64,
    ceil: u64,
}

fn htb_class(m: &TcMessage) -> Option<HtbClass> {
    let options = m.attr(TCA_OPTIONS)?;
    let parms = find_attr(options, TCA_HTB_PARMS)?;
    Some(HtbClass {
        classid: m.handle,
        parent: m.parent,
        level: u32_at(parms, HTB_LEVEL_OFFSET)?,
        rate: rate_at(parms, 0, options, TCA_HTB_RATE64)?,
        ceil: rate_at(parms, RATESPEC_BYTES, options, TCA_HTB_CEIL64)?,
    })
}

/// The rate unclassified traffic leaves an htb qdisc at: the lowest `ceil`
/// on the way from the default class (`defcls`, the minor number of the
/// `default` option) up to the root, as a class never exceeds its parent's
/// ceiling. Without a default class, or when it is not a leaf, htb sends
/// unclassified traffic unshaped, so there is no rate.
fn htb_default_rate(qdisc_handle: u32, defcls: u32, classes: &[HtbClass]) -> Option<u64> {
    if defcls == 0 {
        return None;
    }
    let find = |id: u32| classes.iter().find(|c| c.classid == id);
    let default = find((qdisc_handle & 0xffff_0000) | (defcls & 0xffff))?;
    if default.level != 0 {
        return None;
    }
    let mut rate = default.ceil.max(default.rate);
    let mut class = default;
    // Bounded walk: a malformed reply must not loop.
    for _ in 0..classes.len() {
        if class.parent == TC_H_ROOT {
            break;
        }
        class = find(class.parent)?;
        rate = rate.min(class.ceil.max(class.rate));
    }
    (rate > 0).then_some(rate)
}

#[cfg(test)]
#[path = "qdisc_tests.rs"]
mod tests;
