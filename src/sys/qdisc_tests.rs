//! Tests of the rtnetlink parsing on replies captured from a real kernel
//! (Linux 6.x, x86_64, hence little-endian only): `tc qdisc add ... root`
//! on a veth in a namespace, then the dumps `root_qdisc` sends. Interface 1
//! is the namespace's loopback (noqueue), the veth is 6 (htb) or 5 (tbf).

use super::*;

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn parse(hex: &str, reply_type: u16) -> Vec<TcMessage> {
    let mut out = Vec::new();
    assert_eq!(
        parse_replies(&bytes(hex), reply_type, 1, &mut out),
        Some(false),
        "no end of dump in a data datagram"
    );
    out
}

fn root(qdiscs: &str, classes: Option<&str>, ifindex: u32) -> Option<RootQdisc> {
    let q = parse(qdiscs, RTM_NEWQDISC);
    root_of(ifindex, &q, || {
        classes.map(|c| parse(c, RTM_NEWTCLASS)).unwrap_or_default()
    })
}

const HTB_QDISCS: &str = concat!(
    "94000000240002000100000000380000000000000100000000000000ffffffff020000000c0001006e6f7175",
    "6575650005000c00000000003000070014000100000000000000000000000000000000001800030000000000",
    "000000000000000000000000000000002c000300000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000b4000000240002000100000000380000000000000600000000000100",
    "ffffffff0300000008000100687462002400020018000200110003000a000000010000000000000000000000",
    "08000500e803000005000c000000000030000700140001000000000000000000000000000000000018000300",
    "00000000000000000000000000000000000000002c0003000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000",
);

const HTB_CLASSES: &str = concat!(
    "ec000000280002000100000000380000000000000600000001000100ffffffff000000000800010068746200",
    "3400020030000100000100000000000020bcbe00000100000000000020bcbe00d0070000d0070000400d0300",
    "0000000000000000480007001400010000000000000000000000000000000000180003000000000000000000",
    "00000000000000000000000018000400000000000000000000000000d0070000d00700002c00030000000000",
    "0000000000000000000000000000000000000000000000000000000000000000000000001800040000000000",
    "0000000000000000d0070000d0070000",
);

const HTB_TREE_QDISCS: &str = concat!(
    "940000002400020001000000f5370000000000000100000000000000ffffffff020000000c0001006e6f7175",
    "6575650005000c00000000003000070014000100000000000000000000000000000000001800030000000000",
    "000000000000000000000000000000002c000300000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000b40000002400020001000000f5370000000000000600000000000100",
    "ffffffff0300000008000100687462002400020018000200110003000a000000200000000000000000000000",
    "08000500e803000005000c000000000030000700140001004600000000000000010000000000000018000300",
    "00000000000000000000000000000000000000002c0003004600000000000000010000000000000000000000",
    "0000000000000000000000000000000000000000",
);

const HTB_TREE_CLASSES: &str = concat!(
    "ec0000002800020001000000f5370000000000000600000001000100ffffffff000000000800010068746200",
    "3400020030000100000100000000000040597307000100000000000040597307bb000000bb000000400d0300",
    "0700000000000000480007001400010046000000000000000100000000000000180003000000000000000000",
    "00000000000000000000000018000400000000000000000000000000b2000000b20000002c00030046000000",
    "0000000001000000000000000000000000000000000000000000000000000000000000001800040000000000",
    "0000000000000000b2000000b2000000ec0000002800020001000000f5370000000000000600000010000100",
    "010001000000000008000100687462003400020030000100000100000000000020bcbe000001000000000000",
    "a0acb903d007000086010000400d030000000000000000004800070014000100000000000000000000000000",
    "0000000018000300000000000000000000000000000000000000000018000400000000000000000000000000",
    "d0070000860100002c0003000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000018000400000000000000000000000000d007000086010000ec0000002800020001000000",
    "f537000000000000060000002000010001000100000000000800010068746200340002003000010000010000",
    "0000000040787d01000100000000000080b2e60ee80300005d000000400d0300000000000000000048000700",
    "1400010046000000000000000100000000000000180003000000000000000000000000000000000000000000",
    "18000400010000000000000000000000bc030000580000002c00030046000000000000000100000000000000",
    "00000000000000000000000000000000000000000000000018000400010000000000000000000000bc030000",
    "58000000040100002800020001000000f5370000000000000600000002000100ffffffff0000000008000100",
    "687462004c000200300001000001000000000000ffffffff0001000000000000ffffffff0000000000000000",
    "400d030000000000000000000c00060000f2052a010000000c000700806e8774010000004800070014000100",
    "0000000000000000000000000000000018000300000000000000000000000000000000000000000018000400",
    "00000000000000000000000000000000000000002c0003000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000180004000000000000000000000000000000000000000000",
);

const TBF_QDISCS: &str = concat!(
    "94000000240002000100000003380000000000000100000000000000ffffffff020000000c0001006e6f7175",
    "6575650005000c00000000003000070014000100000000000000000000000000000000001800030000000000",
    "000000000000000000000000000000002c000300000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000bc000000240002000100000003380000000000000500000000000c80",
    "ffffffff0300000008000100746266002c00020028000100000100000000000050d6dc010000000000000000",
    "0000000084d71800008000000000000005000c00000000003000070014000100000000000000000000000000",
    "000000001800030000000000000000000000000000000000000000002c000300000000000000000000000000",
    "00000000000000000000000000000000000000000000000000000000",
);

const TBF64_QDISCS: &str = concat!(
    "940000002400020001000000f8370000000000000100000000000000ffffffff020000000c0001006e6f7175",
    "6575650005000c00000000003000070014000100000000000000000000000000000000001800030000000000",
    "000000000000000000000000000000002c000300000000000000000000000000000000000000000000000000",
    "00000000000000000000000000000000c80000002400020001000000f8370000000000000500000000000b80",
    "ffffffff03000000080001007462660038000200280001000001000000000000ffffffff0000000000000000",
    "0000000080f00a03cc0c0000000000000c00040000f2052a0100000005000c00000000003000070014000100",
    "8c0000000000000002000000000000001800030000000000000000000000000000000000000000002c000300",
    "8c000000000000000200000000000000000000000000000000000000000000000000000000000000",
);

#[test]
#[cfg(target_endian = "little")]
fn htb_with_one_default_class() {
    // tc qdisc add dev V root handle 1: htb default 1
    // tc class add dev V parent 1: classid 1:1 htb rate 100mbit ceil 100mbit
    let r = root(HTB_QDISCS, Some(HTB_CLASSES), 6).unwrap();
    assert_eq!(r.kind, "htb");
    assert_eq!(r.rate_bytes_per_s, Some(100_000_000 / 8));
    // The loopback beside it in the same dump: noqueue, no rate, no classes
    // asked for.
    let q = parse(HTB_QDISCS, RTM_NEWQDISC);
    let lo = root_of(1, &q, || panic!("classes read for noqueue")).unwrap();
    assert_eq!(lo.kind, "noqueue");
    assert_eq!(lo.rate_bytes_per_s, None);
    // An interface the dump does not hold.
    assert_eq!(root(HTB_QDISCS, None, 9), None);
}

#[test]
#[cfg(target_endian = "little")]
fn htb_tree_takes_the_lowest_ceiling_up_from_the_default_class() {
    // htb default 20; 1:1 rate 1gbit ceil 1gbit; below it 1:10 (100mbit,
    // ceil 500mbit) and 1:20 (200mbit, ceil 2gbit); beside it 1:2 (rate
    // 40gbit ceil 50gbit, beyond 32 bits of bytes/s).
    let r = root(HTB_TREE_QDISCS, Some(HTB_TREE_CLASSES), 6).unwrap();
    assert_eq!(r.kind, "htb");
    assert_eq!(r.rate_bytes_per_s, Some(1_000_000_000 / 8));
    let classes: Vec<HtbClass> = parse(HTB_TREE_CLASSES, RTM_NEWTCLASS)
        .iter()
        .filter_map(htb_class)
        .collect();
    let wide = classes.iter().find(|c| c.classid == 0x0001_0002).unwrap();
    assert_eq!(wide.rate, 40_000_000_000 / 8, "TCA_HTB_RATE64");
    assert_eq!(wide.ceil, 50_000_000_000 / 8, "TCA_HTB_CEIL64");
    assert_eq!(wide.parent, TC_H_ROOT);
    let inner = classes.iter().find(|c| c.classid == 0x0001_0001).unwrap();
    // htb numbers an inner class's level down from its maximum depth (8):
    // any level above 0 is not a leaf.
    assert_eq!((inner.level, inner.ceil), (7, 125_000_000));
    let leaf = classes.iter().find(|c| c.classid == 0x0001_0020).unwrap();
    assert_eq!(
        (leaf.level, leaf.parent, leaf.ceil),
        (0, 0x0001_0001, 250_000_000)
    );
    // Without its classes the rate is unknown, the qdisc still named.
    let r = root(HTB_TREE_QDISCS, None, 6).unwrap();
    assert_eq!((r.kind.as_str(), r.rate_bytes_per_s), ("htb", None));
}

#[test]
fn htb_default_class_rules() {
    let class = |classid, parent, level, rate, ceil| HtbClass {
        classid,
        parent,
        level,
        rate,
        ceil,
    };
    let tree = [
        class(0x1_0001, TC_H_ROOT, 1, 1000, 1000),
        class(0x1_0010, 0x1_0001, 0, 100, 500),
        class(0x1_0020, 0x1_0001, 0, 200, 2000),
    ];
    assert_eq!(htb_default_rate(0x1_0000, 0x10, &tree), Some(500));
    assert_eq!(htb_default_rate(0x1_0000, 0x20, &tree), Some(1000));
    // No default: unclassified traffic goes out unshaped.
    assert_eq!(htb_default_rate(0x1_0000, 0, &tree), None);
    // A default that does not exist, or is an inner class: htb sends direct.
    assert_eq!(htb_default_rate(0x1_0000, 0x30, &tree), None);
    assert_eq!(htb_default_rate(0x1_0000, 0x1, &tree), None);
    // A parent missing from the dump: unknown.
    assert_eq!(htb_default_rate(0x1_0000, 0x10, &tree[1..]), None);
    // A loop in a malformed dump ends.
    let looped = [
        class(0x1_0001, 0x1_0002, 0, 10, 10),
        class(0x1_0002, 0x1_0001, 1, 10, 10),
    ];
    assert_eq!(htb_default_rate(0x1_0000, 0x1, &looped), Some(10));
}

#[test]
#[cfg(target_endian = "little")]
fn tbf_rate_and_its_64_bit_form() {
    // tc qdisc add dev V root tbf rate 250mbit burst 64kb latency 50ms
    let r = root(TBF_QDISCS, None, 5).unwrap();
    assert_eq!(r.kind, "tbf");
    assert_eq!(r.rate_bytes_per_s, Some(250_000_000 / 8));
    // tc qdisc add dev V root tbf rate 40gbit burst 1mb latency 10ms: the
    // 32-bit field says 0xffffffff, TCA_TBF_RATE64 the rate.
    let r = root(TBF64_QDISCS, None, 5).unwrap();
    assert_eq!(r.rate_bytes_per_s, Some(40_000_000_000 / 8));
}

#[test]
fn request_and_end_of_dump() {
    let req = request(RTM_GETTCLASS, 7, 1);
    assert_eq!(req.len(), 36);
    assert_eq!(u32_at(&req, 0), Some(36));
    assert_eq!(u16_at(&req, 4), Some(RTM_GETTCLASS));
    assert_eq!(u16_at(&req, 6), Some(NLM_F_REQUEST | NLM_F_DUMP));
    assert_eq!(u32_at(&req, 16 + 4), Some(7), "tcm_ifindex");
    // NLMSG_DONE as the kernel sends it: 20 bytes, type 3.
    let mut done = Vec::new();
    done.extend_from_slice(&20u32.to_ne_bytes());
    done.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    done.extend_from_slice(&[0u8; 14]);
    let mut out = Vec::new();
    assert_eq!(parse_replies(&done, RTM_NEWQDISC, 1, &mut out), Some(true));
    // An error reply, and a length running past the datagram.
    let mut err = done.clone();
    err[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
    assert_eq!(parse_replies(&err, RTM_NEWQDISC, 1, &mut out), None);
    let mut long = done.clone();
    long[0..4].copy_from_slice(&64u32.to_ne_bytes());
    assert_eq!(parse_replies(&long, RTM_NEWQDISC, 1, &mut out), None);
    assert!(out.is_empty());
}

#[test]
fn attributes_are_bounded() {
    // A length beyond the buffer, and one below the attribute header.
    assert_eq!(find_attr(&[40, 0, 1, 0, 0, 0, 0, 0], 1), None);
    assert_eq!(find_attr(&[2, 0, 1, 0], 1), None);
    // The nested flag (0x8000) is not part of the type.
    assert_eq!(
        find_attr(&[8, 0, 2, 0x80, 9, 9, 9, 9], 2),
        Some(&[9u8; 4][..])
    );
    assert_eq!(tbf_rate(&[]), None);
}
