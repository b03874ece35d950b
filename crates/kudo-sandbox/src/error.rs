//! Errors of starting and running the sandbox.

use std::path::PathBuf;

/// Errors the sandbox reports to its embedder. All are fatal for the
/// sandbox instance that reports them.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The listening socket could not be opened.
    #[error(
        "could not listen on {addr}: {source} (is the port already in use? pick another with --port or port(0))"
    )]
    Bind {
        /// Address tried.
        addr: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The kubeconfig could not be written.
    #[error("could not write the kubeconfig {path}: {source}")]
    WriteKubeconfig {
        /// Target file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The persisted store could not be read.
    #[error("could not read the persisted store {path}: {source}")]
    PersistRead {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The persisted store could not be written.
    #[error("could not write the persisted store {path}: {source}")]
    PersistWrite {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The persisted store is not a sandbox snapshot.
    #[error("the persisted store {path} is not valid ({message}); delete it to start empty")]
    PersistFormat {
        /// File.
        path: PathBuf,
        /// Parser message.
        message: String,
    },
    /// A kube client for the sandbox could not be built.
    #[error("could not build a kube client for the sandbox: {0}")]
    Client(String),
}
