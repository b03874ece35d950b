//! The one error type of the manager.

use thiserror::Error;

/// Everything that can go wrong in the manager outside a task (task
/// failures become [`kudo_engine::TaskOutcome`]s, not errors).
#[derive(Debug, Error)]
pub enum Error {
    /// A call to the API server failed.
    #[error("{context}: {source}")]
    Kube {
        /// What the manager was doing, naming the object.
        context: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// The kudo.dev CRDs are not installed in the cluster.
    #[error(
        "the CustomResourceDefinition {0} is not installed; install the CRDs first \
         (`kubectl apply -f crds/` or `kubectl kudo init`)"
    )]
    CrdMissing(String),
    /// An object could not be (de)serialised.
    #[error("{context}: {source}")]
    Serde {
        /// What was being converted.
        context: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The namespace of the leader-election Lease does not exist.
    #[error(
        "the leader-election namespace {0} does not exist, so no replica can ever lead; \
         create it (`kubectl create namespace {0}`; `kubectl kudo init` creates kudo-system), \
         or name an existing one with --leader-election-namespace \
         (--no-leader-election for a single replica)"
    )]
    LeaderNamespaceMissing(String),
    /// Configuration is invalid (kubeconfig, flags).
    #[error("configuration: {0}")]
    Config(String),
    /// The admin, webhook or sandbox server failed.
    #[error("server: {0}")]
    Server(String),
    /// An I/O error (writing the kubeconfig, binding a port).
    #[error("{context}: {source}")]
    Io {
        /// What the manager was doing.
        context: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Wrap a kube error with what the manager was doing.
    pub fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        Self::Kube {
            context: context.into(),
            source,
        }
    }

    /// Whether a retry may succeed (API hiccups, conflicts, timeouts) as
    /// opposed to a problem that needs a person (missing CRDs, bad flags).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Kube { source, .. } => crate::classify::is_transient_kube_error(source),
            Self::Io { .. } | Self::Server(_) => true,
            Self::CrdMissing(_)
            | Self::Serde { .. }
            | Self::Config(_)
            | Self::LeaderNamespaceMissing(_) => false,
        }
    }

    /// A short label for metrics (`errors_total{kind=...}`).
    pub fn metric_kind(&self) -> &'static str {
        match self {
            Self::Kube { .. } => "kube",
            Self::CrdMissing(_) => "crd_missing",
            Self::Serde { .. } => "serde",
            Self::Config(_) | Self::LeaderNamespaceMissing(_) => "config",
            Self::Server(_) => "server",
            Self::Io { .. } => "io",
        }
    }
}

/// Result alias of the manager.
pub type Result<T, E = Error> = std::result::Result<T, E>;
