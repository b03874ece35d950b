//! # kudo-repo
//!
//! Package repositories without network IO: KUDO's repository index
//! (`index.yaml`), version ranges in Helm's dialect, resolving a name and
//! range to one index entry the way KUDO orders versions, sha256 digests,
//! the limits a hostile repository is held to, URL rules, the client's
//! repository configuration (`$KUDO_HOME/repository/repositories.yaml`),
//! the cached form of an index and package archives (`package create`).
//! Fetching lives in `kudo-repo-client`.

pub mod cache;
pub mod channels;
pub mod config;
pub mod digest;
mod error;
pub mod index;
mod index_bounded;
pub mod limits;
pub mod packages;
pub mod range;
pub mod requirements;
pub mod resolve;
pub mod upgrade;
pub mod urls;
pub mod version;

pub use digest::Digest;
pub use error::RepoError;
pub use index::{IndexFile, Maintainer, PackageVersion};
pub use limits::Limits;
pub use range::Range;
pub use resolve::{NotFound, Query};
pub use version::Version;
