//! `shm`'s two protocols and the switch between them, as MPI libraries
//! switch between eager and rendezvous:
//!
//! * **ring** (copy-in/copy-out, see [`shm_ring`]): the sender copies the
//!   message into ring slots chunk by chunk, the receiver copies it out.
//!   Small messages cost one cache-line transfer; nothing waits for an
//!   acknowledgement.
//! * **single copy** (see [`shm_direct`]): a message of at least the
//!   channel's threshold that the sender sends from its lent send memory
//!   travels as a descriptor (offset, length) in one slot; the receiver
//!   copies it once, straight out of the sender's buffer, and releases the
//!   slot, which tells the sender its buffer is free again. One copy
//!   instead of two, for the price of that acknowledgement.
//!
//! The receiver needs no threshold: each message's first slot says which
//! protocol it came by.
//!
//! [`shm_ring`]: super::shm_ring
//! [`shm_direct`]: super::shm_direct

use std::io;

use super::shm_direct::{Lender, PeerMemory};
use super::shm_ring::{self, Consumer, Producer};
use super::wait::Waiter;

/// The single-copy state of one end.
pub struct Direct {
    /// This end's send memory.
    pub lender: Lender,
    /// The other end's send memory; None when it cannot be opened (the
    /// other end then never sends descriptors).
    pub peer: Option<PeerMemory>,
    /// Whether the other end can read this end's send memory.
    pub peer_reads_mine: bool,
    /// Messages from this size on go by single copy when they can.
    pub min_bytes: usize,
}

impl Direct {
    /// Offset of `msg` in this end's send memory when it goes by single
    /// copy.
    #[inline(always)]
    fn offset(&self, msg: &[u8]) -> Option<u64> {
        if msg.len() < self.min_bytes || !self.peer_reads_mine {
            return None;
        }
        self.lender.offset_of(msg)
    }

    /// Copy the message a descriptor names into `buf`.
    #[inline(always)]
    fn copy_in(&mut self, (offset, len): (u64, u64), buf: &mut [u8]) -> io::Result<()> {
        if len != buf.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the peer sent a {len}-byte message where {} bytes were expected \
                     (the two ends disagree on the message size)",
                    buf.len()
                ),
            ));
        }
        let peer = self.peer.as_mut().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer sent a single-copy message this end cannot read",
            )
        })?;
        let src = peer.bytes(offset, len)?;
        // A plain copy (glibc's memcpy, which itself streams beyond about
        // three quarters of the last-level cache). Tried and dropped:
        // non-temporal AVX2 stores (_mm256_stream_si256 after a runtime
        // check) from 64 KiB on, three interleaved rounds of
        // `wulf sweep shm --sizes 64Ki,256Ki,1Mi,4Mi --budget 4s` at load
        // average 12-19, fastest trial plain vs streaming: 1.40 vs 3.42 us
        // at 64 KiB, 4.99 vs 14.7 us at 256 KiB, 30.9 vs 45.6 us at 1 MiB,
        // 280 vs 308 us at 4 MiB. The receive buffer is used again at once
        // (the next message, the reply), so sending it to memory costs
        // more than the read-for-ownership it saves.
        // SAFETY: `src` points to `len` readable bytes of the peer's send
        // memory (checked by `bytes`), which the peer leaves unchanged
        // until this end releases the descriptor; `buf` is private memory.
        unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }
}

/// Send `msg`: by single copy when it qualifies (then wait until the
/// receiver has copied it), else through the ring.
#[inline]
pub fn send(p: &mut Producer, d: &Direct, w: &Waiter, msg: &[u8]) -> io::Result<()> {
    let Some(offset) = d.offset(msg) else {
        return shm_ring::send(p, w, msg);
    };
    w.wait(|| Ok(p.has_room()))?;
    p.push_descriptor(offset, msg.len() as u64);
    w.notify();
    w.wait(|| Ok(p.all_released()))
}

/// Receive exactly `buf.len()` bytes by whichever protocol the sender chose.
#[inline]
pub fn recv(c: &mut Consumer, d: &mut Direct, w: &Waiter, buf: &mut [u8]) -> io::Result<()> {
    if !c.ready() {
        // About to wait: let the producer have the slots first.
        if c.flush() {
            w.notify();
        }
        w.wait(|| Ok(c.ready()))?;
    }
    match c.descriptor() {
        Some(desc) => {
            d.copy_in(desc, buf)?;
            c.pop_descriptor();
            w.notify();
            Ok(())
        }
        None => shm_ring::recv(c, w, buf),
    }
}

/// Where one direction of an exchange stands.
#[derive(Clone, Copy, PartialEq)]
enum Out {
    /// Next ring chunk starts here.
    Ring(usize),
    /// The descriptor of the message at this offset is still to be pushed.
    Descriptor(u64),
    /// The descriptor is out; the receiver has not copied the message yet.
    Lent,
    Done,
}

#[derive(Clone, Copy, PartialEq)]
enum In {
    /// Nothing received yet: the first slot says which protocol.
    First,
    /// Next ring chunk starts here.
    Ring(usize),
    Done,
}

/// Send `out` while receiving `inp`, each by its own protocol, moving
/// whichever direction can move, so that two ends exchanging messages far
/// larger than their rings both make progress.
pub fn exchange(
    p: &mut Producer,
    c: &mut Consumer,
    d: &mut Direct,
    w: &Waiter,
    out: &[u8],
    inp: &mut [u8],
) -> io::Result<()> {
    let mut tx = match d.offset(out) {
        Some(offset) => Out::Descriptor(offset),
        None => Out::Ring(0),
    };
    let mut rx = In::First;
    while tx != Out::Done || rx != In::Done {
        let mut progressed = false;
        match tx {
            Out::Ring(start) if p.has_room() => {
                let r = p.geo().next_chunk(out.len(), start);
                tx = if r.end < out.len() {
                    Out::Ring(r.end)
                } else {
                    Out::Done
                };
                p.push(&out[r]);
                progressed = true;
            }
            Out::Descriptor(offset) if p.has_room() => {
                p.push_descriptor(offset, out.len() as u64);
                tx = Out::Lent;
                progressed = true;
            }
            Out::Lent if p.all_released() => {
                tx = Out::Done;
                progressed = true;
            }
            _ => {}
        }
        if rx != In::Done && c.ready() {
            let desc = if rx == In::First {
                c.descriptor()
            } else {
                None
            };
            if let Some(desc) = desc {
                d.copy_in(desc, inp)?;
                c.pop_descriptor();
                rx = In::Done;
            } else {
                let start = if let In::Ring(s) = rx { s } else { 0 };
                let r = c.geo().next_chunk(inp.len(), start);
                rx = if r.end < inp.len() {
                    In::Ring(r.end)
                } else {
                    In::Done
                };
                c.pop(&mut inp[r])?;
            }
            progressed = true;
        }
        if progressed {
            w.notify();
        } else {
            c.flush();
            w.notify();
            w.wait(|| {
                Ok(match tx {
                    Out::Ring(_) | Out::Descriptor(_) => p.has_room(),
                    Out::Lent => p.all_released(),
                    Out::Done => false,
                } || (rx != In::Done && c.ready()))
            })?;
        }
    }
    Ok(())
}
