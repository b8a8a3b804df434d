//! The header of a wulf frame: 16 bytes, big-endian, after the link's own.
//!
//! ```text
//! 0      1      2             4             8             12            16
//! | ver  | kind | payload len | destination | sequence    | ack         |
//! ```
//!
//! `destination` is the receiving end's identifier (random per channel):
//! frames of another channel or an earlier run on the same interface are
//! ignored. `ack` is cumulative (the next sequence number the sender of
//! the frame expects) and rides on every frame, so data in one direction
//! acknowledges data in the other.

/// Bytes of the header.
pub const HEADER_BYTES: usize = 16;
/// Version of this layout; frames of another version are ignored.
pub const VERSION: u8 = 1;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Message bytes, numbered by `seq`.
    Data,
    /// Only an acknowledgement.
    Ack,
    /// Handshake: a connecting end introduces itself.
    Hello,
    /// Handshake: the listening end's answer.
    HelloAck,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Data => 1,
            Kind::Ack => 2,
            Kind::Hello => 3,
            Kind::HelloAck => 4,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::Data,
            2 => Kind::Ack,
            3 => Kind::Hello,
            4 => Kind::HelloAck,
            _ => return None,
        })
    }
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Bytes of payload after the header (links may pad short frames).
    pub payload_bytes: u16,
    /// Identifier of the receiving end.
    pub dst: u32,
    /// Sequence number of a data frame (0 otherwise).
    pub seq: u32,
    /// Cumulative acknowledgement: the next data frame the sender expects.
    pub ack: u32,
}

impl Header {
    /// The header as bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0] = VERSION;
        b[1] = self.kind.code();
        b[2..4].copy_from_slice(&self.payload_bytes.to_be_bytes());
        b[4..8].copy_from_slice(&self.dst.to_be_bytes());
        b[8..12].copy_from_slice(&self.seq.to_be_bytes());
        b[12..16].copy_from_slice(&self.ack.to_be_bytes());
        b
    }

    /// The header of `frame` and its payload, or None for a frame that is
    /// not a well-formed wulf frame of this version (ignored, not an error:
    /// anything may arrive on a shared link).
    pub fn decode(frame: &[u8]) -> Option<(Header, &[u8])> {
        if frame.len() < HEADER_BYTES || frame[0] != VERSION {
            return None;
        }
        let word =
            |i: usize| u32::from_be_bytes([frame[i], frame[i + 1], frame[i + 2], frame[i + 3]]);
        let h = Header {
            kind: Kind::from_code(frame[1])?,
            payload_bytes: u16::from_be_bytes([frame[2], frame[3]]),
            dst: word(4),
            seq: word(8),
            ack: word(12),
        };
        let end = HEADER_BYTES + usize::from(h.payload_bytes);
        let payload = frame.get(HEADER_BYTES..end)?;
        Some((h, payload))
    }
}

/// Whether sequence number `a` comes after `b` (serial number arithmetic,
/// RFC 1982: correct across the wrap at 2^32).
pub fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let h = Header {
            kind: Kind::Data,
            payload_bytes: 3,
            dst: 0xdead_beef,
            seq: u32::MAX,
            ack: 7,
        };
        let mut f = h.encode().to_vec();
        f.extend_from_slice(b"abcpad");
        let (d, p) = Header::decode(&f).unwrap();
        assert_eq!(d, h);
        assert_eq!(p, b"abc");
        // Too short for its payload, wrong version, unknown kind.
        assert!(Header::decode(&f[..HEADER_BYTES + 2]).is_none());
        f[0] = 9;
        assert!(Header::decode(&f).is_none());
        f[0] = VERSION;
        f[1] = 77;
        assert!(Header::decode(&f).is_none());
        assert!(after(0, u32::MAX));
        assert!(!after(5, 5));
    }
}
