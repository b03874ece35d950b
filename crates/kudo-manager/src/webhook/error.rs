//! Errors of the webhook server, its registration and the certificate
//! helpers.

use std::path::PathBuf;

use thiserror::Error;

/// What can go wrong starting or running the webhook, registering it, or
/// generating and loading certificates.
///
/// Errors inside a single review never surface here: they become an
/// AdmissionReview answer (see [`crate::webhook::review`]).
#[derive(Debug, Error)]
pub enum WebhookError {
    /// A certificate or key file could not be read or written.
    #[error("{what} {path}: {source}")]
    File {
        /// What was being done, e.g. `reading certificate`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A PEM file held nothing usable.
    #[error("{path}: {problem}")]
    Pem {
        /// The file (or a description of the in-memory PEM).
        path: PathBuf,
        /// What is wrong, e.g. "no CERTIFICATE block found".
        problem: String,
    },
    /// rustls refused the certificate or key (mismatch, unsupported key type).
    #[error("TLS configuration from {cert} and {key}: {source}")]
    Tls {
        /// Certificate file.
        cert: PathBuf,
        /// Key file.
        key: PathBuf,
        /// The rustls error.
        #[source]
        source: rustls::Error,
    },
    /// Generating or reading a certificate failed.
    #[error(transparent)]
    Certs(#[from] kudo_certs::CertError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}; is another process using the port?")]
    Bind {
        /// Address asked for.
        addr: std::net::SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Accepting connections failed in a way that stops the server.
    #[error("webhook server stopped: {0}")]
    Serve(#[source] std::io::Error),
    /// The caller asked for something that cannot work (bad address, no names).
    #[error("invalid webhook setup: {0}")]
    Config(String),
    /// A call to the API server failed (registration).
    #[error("{context}: {source}")]
    Kube {
        /// What was being done, naming the object.
        context: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
}

impl WebhookError {
    /// Whether retrying the same call may succeed (API hiccups, a port
    /// still held by an exiting process), as opposed to a problem that needs
    /// a person (bad files, bad certificate).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Kube { source, .. } => match source {
                kube::Error::Api(status) => status.code >= 500 || status.code == 409,
                _ => true,
            },
            Self::Bind { .. } | Self::Serve(_) => true,
            Self::File { .. }
            | Self::Pem { .. }
            | Self::Tls { .. }
            | Self::Certs(_)
            | Self::Config(_) => false,
        }
    }
}
