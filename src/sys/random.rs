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
    }
}
