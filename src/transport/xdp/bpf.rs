//! The XDP program that steers wulf's frames to the AF_XDP socket, and
//! the bpf(2) calls that load and attach it.
//!
//! The program is a few lines of eBPF written here as raw instructions,
//! so building wulf needs no clang and no C: after a bounds check it
//! reads the EtherType at offset 12 and the wulf header's destination
//! channel at offset 18; frames of wulf's EtherType (0x88B5) for this
//! channel go to the socket of their receive queue through an XSKMAP
//! (`bpf_redirect_map(xsks, rx_queue_index, XDP_PASS)`: with no socket on
//! that queue the frame passes on), every other frame passes to the
//! kernel's stack untouched, so the control connection (TCP), a `raw`
//! session on the same interface and anything else are left alone.
//!
//! It is attached through a BPF link (BPF_LINK_CREATE, kernel 5.9+), not
//! through netlink: a link detaches its program when its last descriptor
//! closes, so the program is gone when the run ends, however it ends (a
//! Ctrl-C, a crash, SIGKILL), with no cleanup code to miss. A link never
//! replaces a program someone else attached (EBUSY).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::transport::frames::ETHERTYPE;

/// bpf(2) commands used (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_LINK_CREATE: libc::c_int = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// Attach type of an XDP program (enum bpf_attach_type).
const BPF_XDP: u32 = 37;
/// The helper `bpf_redirect_map`.
const HELPER_REDIRECT_MAP: i32 = 51;
/// XDP verdict: hand the frame to the kernel's stack.
const XDP_PASS: i32 = 2;
/// Link flags: the driver's own hook (native) or the generic one (skb).
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Name of the program, as `bpftool prog` and `ip -d link` show it: how a
/// test (or a person) sees that nothing of wulf's stayed attached.
pub const PROG_NAME: &str = "wulf_xdp";

/// Where the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver, before an skb exists (XDP_FLAGS_DRV_MODE).
    Native,
    /// In the generic hook after the skb is built (XDP_FLAGS_SKB_MODE).
    Skb,
}

impl AttachMode {
    /// Name recorded in the result (`xdp_attach`).
    pub fn name(self) -> &'static str {
        match self {
            AttachMode::Native => "native",
            AttachMode::Skb => "skb",
        }
    }
}

/// One eBPF instruction (struct bpf_insn).
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | dst,
        off,
        imm,
    }
}

/// Opcodes (BPF_CLASS | BPF_OP/BPF_MODE | BPF_SIZE/BPF_SRC).
const MOV64_REG: u8 = 0xbf;
const MOV64_IMM: u8 = 0xb7;
const ADD64_IMM: u8 = 0x07;
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const JGT_REG: u8 = 0x2d;
const JNE_IMM: u8 = 0x55;
/// JNE against an immediate on the low 32 bits (BPF_JMP32): the
/// identifier is compared without sign extension.
const JNE32_IMM: u8 = 0x56;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
/// src_reg of a LD_IMM64 whose immediate is a map's descriptor.
const PSEUDO_MAP_FD: u8 = 1;

/// The steering program for the XSKMAP `map_fd`, taking only the frames
/// addressed to channel `own_id` (the wulf header's destination, at
/// offset 18): a frame of wulf's EtherType for anyone else (a `raw`
/// session on the same interface, another run's) passes to the kernel's
/// stack, where its packet socket gets it, so frame transports share an
/// interface instead of this program swallowing the other's frames.
fn program(map_fd: i32, own_id: u32) -> [Insn; 18] {
    // The EtherType and the identifier as loads from the frame see them
    // (network order bytes read in host order).
    let ethertype = i32::from(u16::from_ne_bytes(ETHERTYPE.to_be_bytes()));
    let id = u32::from_ne_bytes(own_id.to_be_bytes()) as i32;
    [
        insn(MOV64_REG, 6, 1, 0, 0),                 // r6 = ctx (struct xdp_md *)
        insn(LDX_W, 2, 1, 0, 0),                     // r2 = ctx->data
        insn(LDX_W, 3, 1, 4, 0),                     // r3 = ctx->data_end
        insn(MOV64_REG, 4, 2, 0, 0),                 // r4 = data
        insn(ADD64_IMM, 4, 0, 0, 22),                // r4 += Ethernet header + 8
        insn(JGT_REG, 4, 3, 10, 0),                  // shorter than that: pass
        insn(LDX_H, 5, 2, 12, 0),                    // r5 = EtherType
        insn(JNE_IMM, 5, 0, 8, ethertype),           // not wulf's: pass
        insn(LDX_W, 5, 2, 18, 0),                    // r5 = destination channel
        insn(JNE32_IMM, 5, 0, 6, id),                // another channel's: pass
        insn(LDX_W, 2, 6, 16, 0),                    // r2 = ctx->rx_queue_index
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd), // r1 = &xsks
        insn(0, 0, 0, 0, 0),                         // (second half of the 64-bit load)
        insn(MOV64_IMM, 3, 0, 0, XDP_PASS),          // no socket on the queue: pass
        insn(CALL, 0, 0, 0, HELPER_REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
        insn(MOV64_IMM, 0, 0, 0, XDP_PASS), // pass:
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// bpf(2) on `attr`: the descriptor (or 0) it returns.
fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: attr is a live, fully initialised bpf_attr prefix of the
    // size given; the kernel zero-extends the rest.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: fd is a descriptor bpf(2) just returned, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    let n = name.len().min(15);
    out[..n].copy_from_slice(&name.as_bytes()[..n]);
    out
}

/// A new XSKMAP with room for `queues` sockets (one per receive queue).
pub fn create_xskmap(queues: u32) -> io::Result<OwnedFd> {
    #[repr(C)]
    struct MapCreate {
        map_type: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        map_flags: u32,
        inner_map_fd: u32,
        numa_node: u32,
        map_name: [u8; 16],
    }
    let mut attr = MapCreate {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: queues.max(1),
        map_flags: 0,
        inner_map_fd: 0,
        numa_node: 0,
        map_name: name16("wulf_xsks"),
    };
    bpf(BPF_MAP_CREATE, &mut attr).map(owned)
}

/// Put socket `xsk` into `map` for receive queue `queue`.
pub fn set_socket(map: &OwnedFd, queue: u32, xsk: &OwnedFd) -> io::Result<()> {
    #[repr(C)]
    struct MapUpdate {
        map_fd: u32,
        _pad: u32,
        key: u64,
        value: u64,
        flags: u64,
    }
    let key = queue;
    let value = xsk.as_raw_fd() as u32;
    let mut attr = MapUpdate {
        map_fd: map.as_raw_fd() as u32,
        _pad: 0,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        flags: 0,
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(|_| ())
}

#[repr(C)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// Load the steering program for `map`. A refusal by the verifier comes
/// back with the end of its log, which says why.
pub fn load_program(map: &OwnedFd, own_id: u32) -> io::Result<OwnedFd> {
    let insns = program(map.as_raw_fd(), own_id);
    // "GPL": bpf_redirect_map is a GPL-only helper.
    let license = b"GPL\0";
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 0,
        log_size: 0,
        log_buf: 0,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name16(PROG_NAME),
        prog_ifindex: 0,
        expected_attach_type: BPF_XDP,
    };
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(owned(fd)),
        Err(e)
            if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::EACCES) =>
        {
            // Once more with the verifier's log, only to explain the refusal.
            let mut log = vec![0u8; 16 * 1024];
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let _ = bpf(BPF_PROG_LOAD, &mut attr).map(owned);
            let text = String::from_utf8_lossy(&log);
            let text = text.trim_end_matches('\0').trim();
            let tail: Vec<&str> = text.lines().rev().take(4).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(io::Error::new(
                e.kind(),
                format!(
                    "the kernel refused wulf's XDP program ({e}): {}",
                    tail.join(" / ")
                ),
            ))
        }
        Err(e) => Err(e),
    }
}

/// Attach `prog` to interface `ifindex` through a BPF link: in the
/// driver if it can run XDP itself, in the generic hook otherwise. The
/// program stays attached exactly as long as the returned link lives.
pub fn attach(prog: &OwnedFd, ifindex: i32) -> io::Result<(OwnedFd, AttachMode)> {
    #[repr(C)]
    struct LinkCreate {
        prog_fd: u32,
        target_ifindex: u32,
        attach_type: u32,
        flags: u32,
    }
    let mut first_error = None;
    for (mode, flags) in [
        (AttachMode::Native, XDP_FLAGS_DRV_MODE),
        (AttachMode::Skb, XDP_FLAGS_SKB_MODE),
    ] {
        let mut attr = LinkCreate {
            prog_fd: prog.as_raw_fd() as u32,
            target_ifindex: ifindex as u32,
            attach_type: BPF_XDP,
            flags,
        };
        match bpf(BPF_LINK_CREATE, &mut attr) {
            Ok(fd) => return Ok((owned(fd), mode)),
            // Someone else's program holds the hook: never replace it.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Err(io::Error::new(
                    e.kind(),
                    "another XDP program is attached to the interface (see `ip -d link`); wulf does not replace it",
                ))
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| io::Error::other("cannot attach XDP")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_tests_wulfs_ethertype_and_channel_and_ends_in_exits() {
        let p = program(7, 0x8000_0001);
        assert_eq!(p.len(), 18);
        // Every jump lands on the pass branch (index 16).
        for i in [5, 7, 9] {
            assert_eq!(i + 1 + p[i].off as usize, 16, "jump at {i}");
        }
        // 0x88B5 as the bytes 0x88, 0xB5 read in host order.
        assert_eq!(
            (p[7].imm as u16).to_ne_bytes(),
            [0x88, 0xB5],
            "EtherType compared in network byte order"
        );
        // The identifier in network order, compared on 32 bits (its top
        // bit set: a 64-bit compare would sign-extend it and never match).
        assert_eq!((p[9].imm as u32).to_ne_bytes(), [0x80, 0, 0, 1]);
        assert_eq!(p[9].code, JNE32_IMM);
        assert_eq!(p[8].off, 18, "the wulf header's destination");
        assert_eq!(p[11].imm, 7);
        assert_eq!(p[11].regs >> 4, PSEUDO_MAP_FD);
        assert_eq!(p[15].code, EXIT);
        assert_eq!(p[17].code, EXIT);
    }
}
