//! Tests of the shm rings (kept apart so shm_ring.rs holds the rings).
use super::super::shm_direct::{Lender, PeerMemory};
use super::super::shm_message::{self, Direct};
use super::super::wait::{Doorbell, WaitMode};
use super::*;
use proptest::prelude::*;
use std::time::Duration;

/// Zeroed, page-aligned memory standing in for a shared region: two
/// rings and two doorbells.
struct Mem {
    map: memmap2::MmapMut,
    geo: Geometry,
}

impl Mem {
    fn new(geo: Geometry) -> Mem {
        let map = memmap2::MmapMut::map_anon(512 + 2 * geo.ring_bytes()).unwrap();
        Mem { map, geo }
    }
    fn ptr(&self, off: usize) -> *mut u8 {
        // SAFETY: inside the map.
        unsafe { (self.map.as_ptr() as *mut u8).add(off) }
    }
    /// (producer, consumer, waiter) of side 0 or 1.
    fn side(&self, s: usize, mode: WaitMode) -> (Producer, Consumer, Waiter) {
        let rings = [self.ptr(512), self.ptr(512 + self.geo.ring_bytes())];
        let bells = [
            self.ptr(0) as *const Doorbell,
            self.ptr(256) as *const Doorbell,
        ];
        // SAFETY: the map outlives every use in these tests.
        unsafe {
            (
                Producer::new(rings[s], self.geo),
                Consumer::new(rings[1 - s], self.geo),
                Waiter::new(mode, Duration::from_secs(20), bells[s], bells[1 - s]),
            )
        }
    }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(131) ^ seed.wrapping_mul(0x9e37)) as u8)
        .collect()
}

#[test]
fn chunking_covers_every_byte_once() {
    let g = Geometry::new(128, 3).unwrap();
    assert_eq!(g.chunks(0), 1);
    assert_eq!(g.next_chunk(0, 0), 0..0);
    assert_eq!(g.chunks(128), 1);
    assert_eq!(g.chunks(129), 2);
    assert_eq!(g.next_chunk(300, 256), 256..300);
    assert!(Geometry::new(100, 2).is_err());
    assert!(Geometry::new(64, 0).is_err());
}

#[test]
fn single_thread_fill_and_drain() {
    let g = Geometry::new(64, 4).unwrap();
    let m = Mem::new(g);
    let (mut p, _, _) = m.side(0, WaitMode::Spin);
    let (_, mut c, _) = m.side(1, WaitMode::Spin);
    assert!(!c.ready());
    for i in 0..4u8 {
        assert!(p.has_room());
        p.push(&[i; 10]);
    }
    assert!(!p.has_room(), "four slots, four chunks in flight");
    let mut b = [0u8; 10];
    assert!(!c.pop(&mut b).unwrap(), "one of four: not yet published");
    assert_eq!(b, [0; 10]);
    assert!(!p.has_room(), "the release is not published yet");
    assert!(c.flush());
    assert!(!c.flush(), "nothing new to publish");
    assert!(p.has_room(), "one slot released");
    p.push(&[9; 64]);
    for i in 1..4u8 {
        assert!(c.ready());
        c.pop(&mut b).unwrap();
        assert_eq!(b, [i; 10]);
    }
    let mut wrong = [0u8; 10];
    assert!(c.ready());
    let e = c.pop(&mut wrong).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("64-byte chunk"), "{e}");
}

/// The single-copy state of both sides: with `min_bytes`, each reads the
/// other's send memory (one process stands in for two); without, ring only.
fn directs(min_bytes: Option<usize>) -> [Direct; 2] {
    let lenders = [Lender::new().unwrap(), Lender::new().unwrap()];
    let fds = [lenders[0].fd(), lenders[1].fd()];
    let pid = std::process::id();
    let mut side = 0;
    lenders.map(|lender| {
        let peer = min_bytes.map(|_| PeerMemory::open(pid, fds[1 - side] as u64).unwrap());
        side += 1;
        Direct {
            lender,
            peer,
            peer_reads_mine: min_bytes.is_some(),
            min_bytes: min_bytes.unwrap_or(usize::MAX),
        }
    })
}

/// Side 0 sends `msgs` one after the other, side 1 receives and checks;
/// with `direct`, messages from that size on go by single copy.
fn stream(geo: Geometry, msgs: &[usize], mode: WaitMode) {
    stream_via(geo, msgs, mode, None)
}

fn stream_via(geo: Geometry, msgs: &[usize], mode: WaitMode, direct: Option<usize>) {
    let m = Mem::new(geo);
    let (mut p, _, w0) = m.side(0, mode);
    let (_, mut c, w1) = m.side(1, mode);
    let [mut d0, mut d1] = directs(direct);
    let max = msgs.iter().copied().max().unwrap_or(0).max(1);
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut lent = d0.lender.lend(max).unwrap().unwrap();
            for (k, &len) in msgs.iter().enumerate() {
                lent.map[..len].copy_from_slice(&pattern(len, k as u64));
                shm_message::send(&mut p, &d0, &w0, &lent.map[..len]).unwrap();
            }
        });
        for (k, &len) in msgs.iter().enumerate() {
            let mut b = vec![0u8; len];
            shm_message::recv(&mut c, &mut d1, &w1, &mut b).unwrap();
            assert!(b == pattern(len, k as u64), "message {k} of {len} bytes");
        }
    });
}

/// Both sides exchange `msgs` at once.
fn both_ways(geo: Geometry, msgs: &[usize], mode: WaitMode) {
    both_ways_via(geo, msgs, mode, None)
}

fn both_ways_via(geo: Geometry, msgs: &[usize], mode: WaitMode, direct: Option<usize>) {
    let m = Mem::new(geo);
    let sides = [m.side(0, mode), m.side(1, mode)];
    let max = msgs.iter().copied().max().unwrap_or(0).max(1);
    std::thread::scope(|s| {
        for ((side, (mut p, mut c, w)), mut d) in sides.into_iter().enumerate().zip(directs(direct))
        {
            s.spawn(move || {
                let mut lent = d.lender.lend(max).unwrap().unwrap();
                for (k, &len) in msgs.iter().enumerate() {
                    lent.map[..len].copy_from_slice(&pattern(len, (2 * k + side) as u64));
                    let mut inp = vec![0u8; len];
                    shm_message::exchange(&mut p, &mut c, &mut d, &w, &lent.map[..len], &mut inp)
                        .unwrap();
                    assert!(inp == pattern(len, (2 * k + 1 - side) as u64));
                }
            });
        }
    });
}

#[test]
fn single_copy_and_ring_messages_interleave() {
    let g = Geometry::new(256, 2).unwrap();
    // Around the threshold (1000) and the chunk size, both protocols in
    // one stream, in each wait mode that does not spin.
    let sizes = [0, 999, 1000, 1001, 255, 256, 257, 100_000, 3, 1000];
    for mode in [WaitMode::Yield, WaitMode::Block] {
        stream_via(g, &sizes, mode, Some(1000));
        both_ways_via(g, &sizes, mode, Some(1000));
    }
}

#[test]
fn messages_far_larger_than_the_ring() {
    let g = Geometry::new(256, 2).unwrap();
    // Spin only for a few hand-offs: on a busy two-CPU machine every
    // spin-mode hand-off may cost a time slice.
    stream(g, &[0, 1, 56, 57, 1000], WaitMode::Spin);
    stream(g, &[0, 1, 56, 57, 100_000, 3, 65_536], WaitMode::Yield);
    both_ways(g, &[1, 200_000, 0, 57], WaitMode::Yield);
}

#[test]
fn every_wait_mode_hands_off() {
    let g = Geometry::new(128, 4).unwrap();
    for mode in [WaitMode::Yield, WaitMode::Block] {
        stream(g, &[8, 5000, 1, 129], mode);
        both_ways(g, &[8, 5000], mode);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn chunk_ranges_partition_the_message(len in 0usize..100_000, chunk64 in 1usize..64) {
        let g = Geometry::new(chunk64 * 64, 2).unwrap();
        let (mut start, mut n) = (0, 0);
        loop {
            let r = g.next_chunk(len, start);
            prop_assert_eq!(r.start, start);
            prop_assert!(r.len() <= g.chunk_bytes);
            prop_assert!(r.end > r.start || len == 0);
            n += 1;
            start = r.end;
            if start >= len {
                break;
            }
        }
        prop_assert_eq!(start, len);
        prop_assert_eq!(n, g.chunks(len));
    }

    #[test]
    fn random_sizes_and_geometries_arrive_intact(
        chunk64 in 1usize..40,
        slots in 1usize..9,
        msgs in proptest::collection::vec(0usize..20_000, 1..12),
        bidir in any::<bool>(),
        direct in proptest::option::of(0usize..20_000),
    ) {
        let g = Geometry::new(chunk64 * 64, slots).unwrap();
        if bidir {
            both_ways_via(g, &msgs, WaitMode::Yield, direct);
        } else {
            stream_via(g, &msgs, WaitMode::Yield, direct);
        }
    }
}
