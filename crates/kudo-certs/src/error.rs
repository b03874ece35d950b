//! The one error type of this crate.

use thiserror::Error;

/// Why a certificate could not be made or read. None of these go away on
/// retry: they need other input (a real PEM file, at least one name).
#[derive(Debug, Error)]
pub enum CertError {
    /// PEM text held nothing usable.
    #[error("{what}: {problem}")]
    Pem {
        /// What was read, e.g. `CA private key`.
        what: &'static str,
        /// What is wrong, e.g. "no CERTIFICATE block found".
        problem: String,
    },
    /// rcgen could not generate a key or sign a certificate.
    #[error("generating {what}: {source}")]
    Generate {
        /// `CA certificate`, `serving certificate`, ...
        what: &'static str,
        /// The rcgen error.
        #[source]
        source: rcgen::Error,
    },
    /// The names asked for cannot go into a certificate.
    #[error("invalid certificate names: {0}")]
    Names(String),
}
