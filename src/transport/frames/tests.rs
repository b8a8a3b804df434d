//! The protocol over a lossy, duplicating, reordering in-memory link:
//! every message arrives once, in order, intact; a dead peer is an error
//! after the timeout, never a hang.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::handshake;
use super::memlink::{pair, Faults, MemLink};
use super::protocol::{Params, Reliable};
use crate::transport::Endpoint;

const MTU: usize = 16 + 48;

/// Both ends of a channel after a real handshake.
fn channel(faults: Faults, seed: u64, timeout: Duration) -> (Reliable<MemLink>, Reliable<MemLink>) {
    channel_waiting(faults, seed, timeout, false)
}

/// [`channel`], spinning on receives with `busy_poll`.
fn channel_waiting(
    faults: Faults,
    seed: u64,
    timeout: Duration,
    busy_poll: bool,
) -> (Reliable<MemLink>, Reliable<MemLink>) {
    let (mut a, mut b) = pair(MTU, faults, seed);
    let listener = std::thread::spawn(move || {
        let (peer, mtu) = handshake::accept(&mut b, 7, timeout).unwrap();
        (b, peer, mtu)
    });
    let mtu = handshake::connect(&mut a, 9, 7, timeout).unwrap();
    let (b, peer, mtu_b) = listener.join().unwrap();
    assert_eq!((peer, mtu, mtu_b), (9, MTU, MTU));
    let params = |own_id, peer_id| Params {
        own_id,
        peer_id,
        mtu_bytes: MTU,
        timeout,
        busy_poll,
    };
    (
        Reliable::new(a, params(9, 7)),
        Reliable::new(b, params(7, 9)),
    )
}

/// Message `i` of length `len`: every byte depends on both.
fn message(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + i * 7 + k / 251) as u8).collect()
}

#[derive(Debug, Clone, Copy)]
enum Pattern {
    PingPong,
    Stream,
    Bidir,
}

/// Run `sizes` through the pattern; panics on any loss or corruption.
fn run(pattern: Pattern, sizes: &[usize], faults: Faults, seed: u64) {
    let (mut a, mut b) = channel(faults, seed, Duration::from_secs(20));
    let theirs = sizes.to_vec();
    let peer = std::thread::spawn(move || {
        for (i, &len) in theirs.iter().enumerate() {
            let mut got = vec![0u8; len];
            match pattern {
                Pattern::PingPong => {
                    b.recv(&mut got).unwrap();
                    assert!(got == message(i, len), "message {i} of {len} B damaged");
                    b.send(&message(i + 1000, len)).unwrap();
                }
                Pattern::Stream => {
                    b.recv(&mut got).unwrap();
                    assert!(got == message(i, len), "message {i} of {len} B damaged");
                }
                Pattern::Bidir => {
                    b.exchange(&message(i + 1000, len), &mut got).unwrap();
                    assert!(got == message(i, len), "message {i} of {len} B damaged");
                }
            }
        }
        b
    });
    for (i, &len) in sizes.iter().enumerate() {
        let mut got = vec![0u8; len];
        match pattern {
            Pattern::PingPong => {
                a.send(&message(i, len)).unwrap();
                a.recv(&mut got).unwrap();
            }
            Pattern::Stream => a.send(&message(i, len)).unwrap(),
            Pattern::Bidir => a.exchange(&message(i, len), &mut got).unwrap(),
        }
        if !matches!(pattern, Pattern::Stream) {
            assert!(
                got == message(i + 1000, len),
                "reply {i} of {len} B damaged"
            );
        }
    }
    peer.join().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn every_message_arrives_once_in_order_intact(
        sizes in prop::collection::vec(prop_oneof![1usize..100, 100usize..6000], 1..12),
        loss in 0.0f64..0.2,
        duplicate in 0.0f64..0.1,
        reorder in 0.0f64..0.1,
        seed in any::<u64>(),
        which in 0usize..3,
    ) {
        let pattern = [Pattern::PingPong, Pattern::Stream, Pattern::Bidir][which];
        run(pattern, &sizes, Faults { loss, duplicate, reorder, queue_frames: 0 }, seed);
    }
}

#[test]
fn a_clean_link_needs_no_resend_and_streams_in_batches() {
    let (mut a, mut b) = channel(Faults::default(), 1, Duration::from_secs(20));
    let peer = std::thread::spawn(move || {
        let mut got = vec![0u8; 1000];
        b.recv_stream(&mut got, 64).unwrap();
        assert!(got == message(0, 1000));
        b
    });
    a.send_stream(&message(0, 1000), 64).unwrap();
    let b = peer.join().unwrap();
    assert_eq!(a.counters().resent_frames, 0);
    // 1000 B in 48-byte chunks is 21 frames per message.
    assert_eq!(a.counters().data_frames, 64 * 21);
    assert!(
        b.counters().ack_frames < 64 * 21 / 4 + 2,
        "{:?}",
        b.counters()
    );
}

#[test]
fn heavy_loss_in_every_pattern_still_delivers() {
    let faults = Faults {
        loss: 0.3,
        duplicate: 0.2,
        reorder: 0.2,
        queue_frames: 0,
    };
    for pattern in [Pattern::PingPong, Pattern::Stream, Pattern::Bidir] {
        run(pattern, &[1, 47, 48, 49, 5000, 0, 20000], faults, 42);
    }
}

#[test]
fn a_dead_peer_is_an_error_after_the_timeout() {
    let timeout = Duration::from_millis(1500);
    for busy_poll in [false, true] {
        let (mut a, b) = channel_waiting(Faults::default(), 3, timeout, busy_poll);
        drop(b);
        let t = Instant::now();
        // A send may end early (the peer might have taken it and gone
        // quiet); the receive that follows cannot.
        if let Err(e) = a.send(&message(0, 500)) {
            assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        }
        let mut buf = [0u8; 10];
        let e = a.recv(&mut buf).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(t.elapsed() >= timeout && t.elapsed() < Duration::from_secs(20));
    }
}

#[test]
fn a_short_queue_that_drops_the_tail_of_every_burst_still_delivers() {
    // A shaper's queue shorter than the window: each burst loses its tail.
    let faults = Faults {
        queue_frames: 20,
        ..Faults::default()
    };
    for pattern in [Pattern::PingPong, Pattern::Stream, Pattern::Bidir] {
        run(pattern, &[30000, 1, 60000, 60000, 7], faults, 5);
    }
}
