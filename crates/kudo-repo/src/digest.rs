//! sha256 digests of package archives: as an index writes them (64 hex
//! characters, KUDO's and Helm's form, or `sha256:` and hex, OCI's form),
//! computed over bytes, compared.

use std::fmt;

use sha2::{Digest as _, Sha256};

use crate::error::RepoError;

/// A sha256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Parses `hex` or `sha256:hex` (upper or lower case).
    pub fn parse(text: &str) -> Result<Self, String> {
        let hex_part = text.strip_prefix("sha256:").unwrap_or(text);
        if hex_part.len() != 64 {
            return Err(format!(
                "digest {:?} is not a sha256 digest (64 hex characters, optionally after sha256:)",
                shorten(text)
            ));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut bytes)
            .map_err(|_| format!("digest {:?} is not hexadecimal", shorten(text)))?;
        Ok(Self(bytes))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// From a finished hasher.
    pub fn from_hasher(hasher: Sha256) -> Self {
        Self(hasher.finalize().into())
    }

    /// `sha256:<hex>`, OCI's spelling.
    pub fn oci(&self) -> String {
        format!("sha256:{self}")
    }

    /// Checks `bytes` from `url` against this digest.
    pub fn verify(&self, bytes: &[u8], url: &str) -> Result<(), RepoError> {
        self.verify_digest(&Self::of(bytes), url)
    }

    /// Compares a computed digest with this expected one.
    pub fn verify_digest(&self, actual: &Digest, url: &str) -> Result<(), RepoError> {
        if actual == self {
            return Ok(());
        }
        Err(RepoError::DigestMismatch {
            url: url.to_string(),
            expected: self.to_string(),
            actual: actual.to_string(),
        })
    }
}

/// Incremental hashing for downloads that arrive in pieces.
pub use sha2::Sha256 as Hasher;

fn shorten(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn hex_and_oci_spellings_are_the_same_digest() {
        let plain = Digest::parse(EMPTY).unwrap();
        let oci = Digest::parse(&format!("sha256:{}", EMPTY.to_uppercase())).unwrap();
        assert_eq!(plain, oci);
        assert_eq!(plain, Digest::of(b""));
        assert_eq!(plain.oci(), format!("sha256:{EMPTY}"));
    }

    #[test]
    fn malformed_digests_are_refused() {
        assert!(Digest::parse("abc").unwrap_err().contains("64 hex"));
        assert!(
            Digest::parse(&"z".repeat(64))
                .unwrap_err()
                .contains("not hexadecimal")
        );
        assert!(Digest::parse("md5:abc").is_err());
        let long = Digest::parse(&"a".repeat(10_000)).unwrap_err();
        assert!(long.len() < 200, "{long}");
    }

    #[test]
    fn a_mismatch_names_both_digests_and_the_url() {
        let expected = Digest::of(b"package");
        let err = expected
            .verify(b"tampered", "http://r/p.tgz")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("http://r/p.tgz: sha256 digest "), "{err}");
        assert!(err.contains(&expected.to_string()), "{err}");
        assert!(err.contains(&Digest::of(b"tampered").to_string()), "{err}");
        assert!(expected.verify(b"package", "u").is_ok());
    }
}
