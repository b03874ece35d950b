//! The one error type of this crate. Everything here is decided from data
//! already in hand, so nothing is transient: trying again gives the same
//! answer ([`RepoError::is_transient`] says so for callers that retry).

use crate::resolve::NotFound;

/// What went wrong with an index, a range, a digest or the configuration.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// An index larger than the limit.
    #[error("the index {source_name} is larger than {limit}, the size limit of an index")]
    IndexTooLarge {
        /// Where it came from (URL or path).
        source_name: String,
        /// The limit, e.g. `32 MiB`.
        limit: String,
    },
    /// An index that is not YAML of an index's shape.
    #[error("the index {source_name} cannot be read: {detail}")]
    IndexParse {
        /// Where it came from.
        source_name: String,
        /// The parser's message.
        detail: String,
    },
    /// An index that parses but breaks a rule (no apiVersion, an entry
    /// named differently from its key, a malformed digest, ...).
    #[error("the index {source_name} is invalid: {detail}")]
    IndexInvalid {
        /// Where it came from.
        source_name: String,
        /// Which entry and what is wrong.
        detail: String,
    },
    /// A version range that does not parse.
    #[error("{0}")]
    Range(String),
    /// No package or version fits what was asked.
    #[error("{0}")]
    NotFound(Box<NotFound>),
    /// A download whose sha256 differs from the index entry's.
    #[error(
        "{url}: sha256 digest {actual} does not match {expected}, the digest the index gives; \
         the package was refused"
    )]
    DigestMismatch {
        /// What was downloaded.
        url: String,
        /// The index entry's digest.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// An index entry without a digest cannot be verified.
    #[error(
        "{package} in repository {repository} has no digest in the index, so its download \
         cannot be verified and is refused; index the repository again with \
         `kubectl kudo repo index`"
    )]
    MissingDigest {
        /// `kafka 1.2.1`.
        package: String,
        /// Repository name.
        repository: String,
    },
    /// A URL the rules refuse (scheme, host, a file outside the repository).
    #[error("{url}: {reason}")]
    UrlRefused {
        /// The URL.
        url: String,
        /// Which rule.
        reason: String,
    },
    /// A downloaded package that is not what its index entry says.
    #[error("{url}: {detail}; the package was refused")]
    PackageMismatch {
        /// What was downloaded.
        url: String,
        /// What differs.
        detail: String,
    },
    /// A package that cannot be loaded, verified or archived.
    #[error(transparent)]
    Package(#[from] kudo_package::PackageError),
    /// The client configuration (`repositories.yaml`, credentials) is wrong
    /// or the change asked for is refused.
    #[error("{0}")]
    Config(String),
    /// Reading or writing a local file (a package folder, an archive).
    #[error("{path}: {detail}")]
    File {
        /// The path.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

impl RepoError {
    /// Always false: nothing this crate decides changes by retrying.
    pub fn is_transient(&self) -> bool {
        false
    }
}

impl From<NotFound> for RepoError {
    fn from(value: NotFound) -> Self {
        Self::NotFound(Box::new(value))
    }
}
