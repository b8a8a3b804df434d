//! Unit tests of the core-to-core baselines, warm and cold.

use super::super::WaitMode;
use super::*;

fn setup(max_bytes: u64) -> BaselineSetup {
    BaselineSetup {
        mode: Mode::Pingpong,
        max_bytes,
        nocache: false,
        offset_bytes: 3,
        llc_bytes: None,
        caches: Vec::new(),
        helper_cpu: None,
        // Yield: this test must not depend on having two idle CPUs.
        wait: WaitMode::Yield,
        timeout: std::time::Duration::from_secs(10),
    }
}

#[test]
fn both_baselines_copy_intact_and_time() {
    for copies in [Copies::One, Copies::Two] {
        let mut b = C2cBench::new(&setup(1 << 17), copies).unwrap();
        for bytes in [0, 1, 63, 64, 4097, 1 << 17] {
            b.integrity(bytes).unwrap();
            assert!(b.block(bytes, 20).unwrap().elapsed_ns > 0);
        }
        assert!(b.block((1 << 17) + 1, 1).is_err());
    }
}

#[test]
fn cold_copies_are_intact_and_come_from_slots_past_the_cache() {
    let mut s = setup(1 << 16);
    s.nocache = true;
    s.llc_bytes = Some(1 << 20);
    for copies in [Copies::One, Copies::Two] {
        let mut b = C2cBench::new(&s, copies).unwrap();
        // Every size, and more messages than slots (the rotation wraps).
        for bytes in [0, 1, 64, 4097, 1 << 16] {
            b.integrity(bytes).unwrap();
            assert!(b.block(bytes, 40).unwrap().elapsed_ns > 0);
        }
        let r = b.mem.rotation(4096);
        assert!(r.slots * r.stride_bytes >= 2 << 20, "{r:?}");
        let (m, side) = (&*b.mem, b.side);
        // The copy's source and destination move with the message
        // number; warm they would not.
        let (src0, dst0) = side.recv_copy(m, r, 0);
        let (src1, dst1) = side.recv_copy(m, r, 1);
        assert_ne!(dst0, dst1);
        match copies {
            // Single copy reads a cold slot of the other's buffer.
            Copies::One => assert_ne!(src0, src1),
            // Two-copy reads the hot shared buffer, filled from a cold
            // private slot.
            Copies::Two => {
                assert_eq!(src0, src1);
                assert_ne!(side.send_copy(m, r, 0), side.send_copy(m, r, 1));
            }
        }
        assert_eq!(side.recv_copy(m, r, r.slots as u64), (src0, dst0));
        assert!(b.settings()["buffers"]
            .as_str()
            .unwrap()
            .starts_with("cold"));
    }
    let warm = C2cBench::new(&setup(1 << 16), Copies::One).unwrap();
    let r = warm.mem.rotation(4096);
    assert_eq!(
        warm.side.recv_copy(&warm.mem, r, 0),
        warm.side.recv_copy(&warm.mem, r, 1)
    );
}

#[test]
fn bad_set_ups_are_refused() {
    let mut s = setup(MAX_BYTES + 1);
    assert!(C2cBench::new(&s, Copies::One).is_err());
    s.max_bytes = 64;
    s.mode = Mode::Stream;
    assert!(C2cBench::new(&s, Copies::Two).is_err());
}
