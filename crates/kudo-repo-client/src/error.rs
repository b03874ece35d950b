//! The one error type of this crate; [`ClientError::is_transient`] tells a
//! caller whether trying again later can help (a network failure, a
//! server error, a timeout) or not (a digest mismatch, a refused URL, a
//! size limit, a 404).

use kudo_repo::RepoError;

/// What went wrong fetching from a repository or registry.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// A rule of kudo-repo refused something (index, range, digest, URL,
    /// configuration).
    #[error(transparent)]
    Repo(#[from] RepoError),
    /// The server could not be reached or the connection broke.
    #[error("{url}: {detail}")]
    Network {
        /// What was fetched.
        url: String,
        /// What happened.
        detail: String,
    },
    /// The server answered with an error status.
    #[error("{url}: the server answered {status}{hint}")]
    Status {
        /// What was fetched.
        url: String,
        /// e.g. `404 Not Found`.
        status: String,
        /// Whether 5xx (try later).
        server_error: bool,
        /// What to do about it.
        hint: String,
    },
    /// More bytes than the limit.
    #[error(
        "{url}: the {what} is larger than {limit}, the size limit of a {what}; the download was stopped"
    )]
    TooLarge {
        /// What was fetched.
        url: String,
        /// `index`, `package`, `manifest`.
        what: &'static str,
        /// e.g. `16 MiB`.
        limit: String,
    },
    /// The request took too long (a silent or trickling server).
    #[error("{url}: {detail}")]
    Timeout {
        /// What was fetched.
        url: String,
        /// Which time limit.
        detail: String,
    },
    /// A redirect the rules refuse (too many, https → http, another scheme).
    #[error("{url}: redirect refused: {detail}")]
    Redirect {
        /// What was fetched.
        url: String,
        /// Which rule.
        detail: String,
    },
    /// TLS settings that cannot be used (an unreadable CA file).
    #[error("{0}")]
    Tls(String),
    /// A local file (configuration, cache) could not be read or written.
    #[error("{path}: {detail}")]
    File {
        /// The path.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// An OCI registry refused or broke an operation.
    #[error("{reference}: {detail}")]
    Oci {
        /// The artifact.
        reference: String,
        /// What happened.
        detail: String,
        /// Whether trying again may help.
        transient: bool,
    },
}

impl ClientError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Network { .. } | Self::Timeout { .. } => true,
            Self::Status { server_error, .. } => *server_error,
            Self::Oci { transient, .. } => *transient,
            Self::Repo(e) => e.is_transient(),
            Self::TooLarge { .. } | Self::Redirect { .. } | Self::Tls(_) | Self::File { .. } => {
                false
            }
        }
    }

    pub(crate) fn file(path: &std::path::Path, detail: impl std::fmt::Display) -> Self {
        Self::File {
            path: path.display().to_string(),
            detail: detail.to_string(),
        }
    }
}

impl From<kudo_package::PackageError> for ClientError {
    fn from(value: kudo_package::PackageError) -> Self {
        Self::Repo(RepoError::Package(value))
    }
}

/// Result alias of this crate.
pub type Result<T, E = ClientError> = std::result::Result<T, E>;
