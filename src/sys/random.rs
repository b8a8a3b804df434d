//! Random values from the kernel and their hex spelling: nonces, secrets
//! and the per-test tokens of data connections.

use std::io::Read;

/// `N` fresh random bytes from the kernel.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `N` bytes `text` spells in hex, if it spells exactly that many.
pub fn from_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut bytes = [0u8; N];
    for (k, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * k..2 * k + 2)?, 16).ok()?;
    }
    Some(bytes)
}

/// The bytes `text` spells in hex, if it is hex of at most `most` bytes.
pub fn from_hex_at_most(text: &str, most: usize) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * most {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let b: [u8; 16] = random_bytes().unwrap();
        assert_eq!(from_hex::<16>(&hex(&b)), Some(b));
        assert_eq!(from_hex::<2>("0aff"), Some([0x0a, 0xff]));
        assert_eq!(from_hex::<2>("0af"), None);
        assert_eq!(from_hex::<2>("zzzz"), None);
        assert_eq!(from_hex_at_most("0aff", 2), Some(vec![0x0a, 0xff]));
        assert_eq!(from_hex_at_most("0aff00", 2), None, "too long");
        assert_eq!(from_hex_at_most("0af", 2), None, "odd length");
        assert_eq!(from_hex_at_most("zz", 2), None, "not hex");
        assert_eq!(from_hex_at_most("é0", 2), None, "not ASCII");
    }
}
