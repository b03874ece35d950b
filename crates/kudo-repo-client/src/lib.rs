//! # kudo-repo-client
//!
//! The network side of package repositories: fetching indexes and
//! packages over http, https and `file://` within [`kudo_repo::Limits`]
//! (sizes, redirects, connect, read and total time), rustls with the
//! system's roots and a repository's own CA file, credentials sent only to
//! the repository's host, the index cache under the XDG cache folder,
//! every package checked against its index digest before it is loaded, and
//! OCI registries (push with oci-client, digest-addressed pulls).
//!
//! ```text
//! let repos = Repositories::open(Home::from_env()?, Limits::default())?;
//! let found = repos.resolve(None, &Query { name: "kafka", operator_version: Some("^1.2"), ..Default::default() }).await?;
//! let package = repos.download(&found).await?;   // digest checked, then loaded
//! ```

mod error;
pub mod home;
pub mod http;
pub mod oci;
pub mod repo;

pub use error::{ClientError, Result};
pub use home::Home;
pub use oci::{OciRef, Registry};
pub use repo::{Downloaded, Repositories, Resolution, SearchHit, SearchQuery};
#[cfg(feature = "test-support")]
pub mod test_support;
