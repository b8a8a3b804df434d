//! The integrity pattern of a message: every byte depends on its
//! position, the operation number and the direction, so a shifted, stale,
//! truncated or crossed message is caught. The timing loops' integrity
//! blocks and the in-process baselines fill and check messages with it.

use std::io;

/// The integrity pattern: every byte depends on its position, the
/// operation number and the direction, so a shifted, stale, truncated or
/// crossed message is caught.
#[inline]
pub fn pattern_byte(pos: usize, op: u64, dir: u64) -> u8 {
    let x = (pos as u64).wrapping_mul(0x9e37_79b9) ^ op.wrapping_mul(0x85eb_ca6b) ^ (dir << 7);
    (x ^ (x >> 13) ^ (x >> 24)) as u8
}

/// Fill `buf` with the pattern of operation `op` in direction `dir`.
pub fn fill(buf: &mut [u8], op: u64, dir: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(i, op, dir);
    }
}

/// Check `buf` against the pattern; the error names size and offset.
pub fn check(buf: &[u8], op: u64, dir: u64, side: &str) -> Option<io::Error> {
    let bad = buf
        .iter()
        .enumerate()
        .find(|(i, b)| **b != pattern_byte(*i, op, dir))?;
    Some(io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "integrity check failed on the {side}: {}-byte message {op}, byte offset {}: expected 0x{:02x}, received 0x{:02x}",
            buf.len(),
            bad.0,
            pattern_byte(bad.0, op, dir),
            bad.1
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trip_and_detection() {
        let mut b = vec![0u8; 4099];
        fill(&mut b, 7, 0);
        assert!(check(&b, 7, 0, "t").is_none());
        assert!(check(&b, 8, 0, "t").is_some(), "stale message");
        assert!(check(&b, 7, 1, "t").is_some(), "crossed direction");
        b[4000] ^= 1;
        let e = check(&b, 7, 0, "t").unwrap().to_string();
        assert!(e.contains("4099-byte") && e.contains("offset 4000"), "{e}");
        let mut shifted = vec![0u8; 64];
        fill(&mut shifted[1..], 3, 0);
        shifted[0] = pattern_byte(0, 3, 0);
        assert!(check(&shifted, 3, 0, "t").is_some(), "shifted by one");
    }
}
