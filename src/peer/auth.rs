//! Shared-secret authentication for every wulf connection: `wulf serve`
//! and its clients, and the cluster's coordinator and agents.
//!
//! Each side proves it knows the secret without sending it: both send a
//! fresh random nonce, and each answers with an HMAC-SHA-256 (RustCrypto's
//! `hmac` and `sha2`) keyed by the secret over a role label and both nonces,
//! compared in constant time ([`Mac::verify_slice`]). The role label keeps
//! a proof from being reflected back (the server's proof is not a valid
//! client proof), the nonces keep one overheard on the wire from being
//! replayed in another session. The secret comes from a file
//! (`--secret-file`) or the environment ([`SECRET_ENV`]), never the command
//! line, where every user of the machine could read it in `ps`.

use crate::sys::random::{from_hex_at_most, hex};
use std::fmt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Environment variable with the shared secret of `wulf serve` and its
/// clients (`--secret-file` takes precedence).
pub const SECRET_ENV: &str = "WULF_SECRET";

/// Bytes of randomness in a nonce and in a generated secret.
const RANDOM_BYTES: usize = 32;

/// Longest secret file read, in bytes: a secret is a line, not a document.
const MAX_SECRET_FILE_BYTES: u64 = 4096;

/// A shared secret. Never printed: `Debug` shows a placeholder.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

impl Secret {
    /// A secret from its text (surrounding whitespace removed).
    pub fn new(text: &str) -> Result<Secret> {
        let text = text.trim();
        if text.is_empty() {
            bail!("the secret is empty");
        }
        Ok(Secret(text.to_string()))
    }

    /// A secret wulf made itself (a run's one-time secret), taken as is.
    pub(crate) fn trusted(text: &str) -> Secret {
        Secret(text.to_string())
    }

    /// A fresh random secret (one run of a cluster command).
    pub fn random() -> std::io::Result<Secret> {
        Ok(Secret(random_hex()?))
    }

    /// The secret's text, to hand to a process wulf starts (through its
    /// environment or stdin, never its command line).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The secret to use: from `file` when given, else from [`SECRET_ENV`],
    /// else none. A file others may read gives a warning on stderr.
    pub fn from_file_or_env(file: Option<&Path>) -> Result<Option<Secret>> {
        if let Some(path) = file {
            return read_secret_file(path).map(Some);
        }
        match std::env::var(SECRET_ENV) {
            Ok(text) => Secret::new(&text)
                .map(Some)
                .with_context(|| format!("{SECRET_ENV} is set but empty")),
            Err(_) => Ok(None),
        }
    }

    /// The proof that the side playing `role` knows this secret, for the
    /// nonce pair (`own` sent by the prover, `other` by the verifier).
    pub fn prove(&self, role: &str, own_nonce: &str, other_nonce: &str) -> String {
        hex(&self
            .mac(&[role, own_nonce, other_nonce])
            .finalize()
            .into_bytes())
    }

    /// Whether `proof` is [`Secret::prove`] of the same inputs, compared in
    /// constant time. Malformed proofs are simply wrong.
    pub fn verify(&self, role: &str, own_nonce: &str, other_nonce: &str, proof: &str) -> bool {
        let Some(bytes) = from_hex_at_most(proof, 128) else {
            return false;
        };
        self.mac(&[role, own_nonce, other_nonce])
            .verify_slice(&bytes)
            .is_ok()
    }

    /// HMAC-SHA-256 keyed by the secret over `parts`, each followed by a
    /// zero byte so that no two different part lists give the same input.
    fn mac(&self, parts: &[&str]) -> Hmac<Sha256> {
        let mut m = Hmac::<Sha256>::new_from_slice(self.0.as_bytes()).expect("HMAC takes any key");
        for part in parts {
            m.update(part.as_bytes());
            m.update(&[0]);
        }
        m
    }
}

fn read_secret_file(path: &Path) -> Result<Secret> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the secret file {}", path.display()))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        bail!("the secret file {} is not a regular file", path.display());
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "wulf: warning: the secret file {} can be read by other users (chmod 600 it)",
            path.display()
        );
    }
    let mut text = String::new();
    file.take(MAX_SECRET_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("the secret file {} is not text", path.display()))?;
    if text.len() as u64 > MAX_SECRET_FILE_BYTES {
        bail!(
            "the secret file {} is longer than {MAX_SECRET_FILE_BYTES} bytes",
            path.display()
        );
    }
    Secret::new(&text).with_context(|| format!("the secret file {} is empty", path.display()))
}

/// A fresh random value from the kernel, hex (nonces and secrets).
pub fn random_hex() -> std::io::Result<String> {
    Ok(hex(&crate::sys::random::random_bytes::<RANDOM_BYTES>()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_bind_secret_role_and_both_nonces() {
        let s = Secret::new("s3cret\n").unwrap();
        let p = s.prove("client", "n1", "n2");
        assert!(s.verify("client", "n1", "n2", &p));
        assert!(!Secret::new("other")
            .unwrap()
            .verify("client", "n1", "n2", &p));
        assert!(!s.verify("server", "n1", "n2", &p), "reflected");
        assert!(!s.verify("client", "n2", "n1", &p), "nonces swapped");
        assert!(!s.verify("client", "n1", "n3", &p));
        assert!(!s.verify("client", "n1", "n2", "zz"));
        assert!(!s.verify("client", "n1", "n2", ""));
        assert!(!s.verify("client", "n1", "n2", &"0".repeat(10_000)));
        // Part boundaries count: ("ab", "c") is not ("a", "bc").
        assert_ne!(s.prove("x", "ab", "c"), s.prove("x", "a", "bc"));
    }

    #[test]
    fn secrets_are_never_shown_and_never_empty() {
        let s = Secret::new(" hunter2 ").unwrap();
        assert_eq!(s.expose(), "hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(Secret::new(" \n").is_err());
        let a = Secret::random().unwrap();
        let b = Secret::random().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 2 * RANDOM_BYTES);
    }

    #[test]
    fn secret_files_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("s");
        std::fs::write(&good, "abc\n").unwrap();
        assert_eq!(
            Secret::from_file_or_env(Some(&good))
                .unwrap()
                .unwrap()
                .expose(),
            "abc"
        );
        let empty = dir.path().join("e");
        std::fs::write(&empty, "\n").unwrap();
        let e = Secret::from_file_or_env(Some(&empty)).unwrap_err();
        assert!(format!("{e:#}").contains("empty"), "{e:#}");
        let big = dir.path().join("b");
        std::fs::write(&big, vec![b'a'; 10_000]).unwrap();
        assert!(Secret::from_file_or_env(Some(&big)).is_err());
        let missing = dir.path().join("none");
        let e = Secret::from_file_or_env(Some(&missing)).unwrap_err();
        assert!(format!("{e:#}").contains("none"), "{e:#}");
        assert!(Secret::from_file_or_env(Some(dir.path())).is_err());
    }
}
