//! How the two ends of a frame channel meet: the connecting end already
//! knows the listener's link address and identifier (from the listener's
//! description on the control connection) and sends Hello frames until
//! the listener answers; the listener learns the connecting end's address
//! from the Hello. Both then use the smaller of their two MTUs.

use std::io;
use std::time::{Duration, Instant};

use super::header::{Header, Kind, HEADER_BYTES};
use super::protocol::Params;
use super::FrameLink;

/// How often the connecting end repeats its Hello.
const HELLO_EVERY: Duration = Duration::from_millis(100);

/// Rounds without a repeated answer, each with a confirmation, before the
/// connecting end takes the handshake as done: all of them lost is 1 in
/// 3,200 at 20% loss.
const QUIET_ROUNDS: u32 = 5;

fn send(link: &mut impl FrameLink, kind: Kind, dst: u32, words: &[u32]) -> io::Result<()> {
    let mut payload = [0u8; 8];
    for (i, w) in words.iter().enumerate() {
        payload[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
    }
    let len = 4 * words.len();
    let h = Header {
        kind,
        payload_bytes: len as u16,
        dst,
        seq: 0,
        ack: 0,
    };
    link.send_frame(&h.encode(), &payload[..len])
}

fn word(payload: &[u8], i: usize) -> Option<u32> {
    let b = payload.get(4 * i..4 * i + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Wait until `deadline` for a frame of one of `kinds` addressed to
/// `own_id`: its kind and payload words.
fn await_frame(
    link: &mut impl FrameLink,
    kinds: &[Kind],
    own_id: u32,
    deadline: Instant,
    buf: &mut [u8],
) -> io::Result<Option<(Kind, [u32; 2])>> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        let Some(n) = link.recv_frame(buf, Some(deadline - now))? else {
            continue;
        };
        if let Some((h, p)) = Header::decode(&buf[..n]) {
            if kinds.contains(&h.kind) && h.dst == own_id {
                let words = [word(p, 0).unwrap_or(0), word(p, 1).unwrap_or(0)];
                return Ok(Some((h.kind, words)));
            }
        }
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, what.to_string())
}

/// Connecting end: introduce `own_id` to the listener `peer_id`, wait
/// for its answer and confirm it, at most `timeout`: the MTU both use.
///
/// The confirmation matters because the listener goes quiet once it has
/// it (its caller turns to the control connection): the listener repeats
/// its answer until confirmed, and this end stays until the answers stop,
/// so a lost confirmation is repeated while someone still listens.
pub fn connect(
    link: &mut impl FrameLink,
    own_id: u32,
    peer_id: u32,
    timeout: Duration,
) -> io::Result<usize> {
    let end = Instant::now() + timeout;
    let mut buf = vec![0u8; link.mtu_bytes().max(HEADER_BYTES) + 64];
    let mut agreed = None;
    let mut quiet_rounds = 0;
    while Instant::now() < end {
        match agreed {
            None => send(
                link,
                Kind::Hello,
                peer_id,
                &[own_id, link.mtu_bytes() as u32],
            )?,
            Some(_) => confirm(link, peer_id)?,
        }
        // Before the answer: repeat the Hello every round. After it: a
        // confirmation every round, done once no answer has repeated for
        // QUIET_ROUNDS rounds. One confirmation then silence once lost the
        // handshake to three lost frames (or a listener stalled 300 ms):
        // the listener waited for a confirmation while its client waited
        // on the control connection for the listener's Ready, until the
        // data timeout. Now every quiet round carries a confirmation.
        let round = (Instant::now() + HELLO_EVERY).min(end);
        match await_frame(link, &[Kind::HelloAck], own_id, round, &mut buf)? {
            Some((_, [mtu, _])) => {
                agreed = Some((mtu as usize).min(link.mtu_bytes()));
                quiet_rounds = 0;
            }
            None if agreed.is_some() => {
                quiet_rounds += 1;
                if quiet_rounds >= QUIET_ROUNDS {
                    break;
                }
            }
            None => {}
        }
    }
    agreed.ok_or_else(|| {
        timed_out("no answer to the frame handshake: is the peer on the same Ethernet segment?")
    })
}

/// Listening end: wait up to `timeout` for a Hello to `own_id`, answer it
/// until the connecting end confirms; the connecting end's identifier and
/// the MTU both use.
pub fn accept(
    link: &mut impl FrameLink,
    own_id: u32,
    timeout: Duration,
) -> io::Result<(u32, usize)> {
    let mut buf = vec![0u8; link.mtu_bytes().max(HEADER_BYTES) + 64];
    let end = Instant::now() + timeout;
    let Some((_, [peer_id, peer_mtu])) = await_frame(link, &[Kind::Hello], own_id, end, &mut buf)?
    else {
        return Err(timed_out(
            "the measuring side's frames never arrived (timeout)",
        ));
    };
    link.learn_peer();
    let mtu = (peer_mtu as usize).min(link.mtu_bytes());
    while Instant::now() < end {
        send(link, Kind::HelloAck, peer_id, &[mtu as u32])?;
        let round = (Instant::now() + HELLO_EVERY).min(end);
        // A data frame confirms too (it is lost here and sent again).
        let confirm = [Kind::Ack, Kind::Data];
        if await_frame(link, &confirm, own_id, round, &mut buf)?.is_some() {
            return Ok((peer_id, mtu));
        }
    }
    Err(timed_out(
        "the measuring side never confirmed the frame handshake (timeout)",
    ))
}

/// Confirm the listener's answer: the connecting end's last handshake
/// frame (a data frame confirms as well).
pub fn confirm(link: &mut impl FrameLink, peer_id: u32) -> io::Result<()> {
    send(link, Kind::Ack, peer_id, &[])
}

/// Answer a Hello that came again after the handshake (the answer was lost).
pub fn answer(link: &mut impl FrameLink, p: &Params) -> io::Result<()> {
    send(link, Kind::HelloAck, p.peer_id, &[p.mtu_bytes as u32])
}
