//! What a write is planned as before it is committed.

use std::sync::Arc;

use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::status::ApiError;
use crate::store::Owners;

/// The admission operation of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A change to an existing object.
    Update,
    /// A delete request.
    Delete,
}

impl Operation {
    /// The AdmissionReview operation name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Owner goes first, dependents are collected afterwards.
    #[default]
    Background,
    /// Dependents go first; the owner waits with the foregroundDeletion finalizer.
    Foreground,
    /// Dependents lose their owner reference and stay.
    Orphan,
}

impl Propagation {
    /// Parses `propagationPolicy`.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(ApiError::bad_request(format!(
                "invalid propagationPolicy {other:?}: must be Background, Foreground or Orphan"
            ))),
        }
    }
}

/// Preconditions and policy of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Dependent handling.
    pub propagation: Propagation,
    /// Required uid.
    pub uid: Option<String>,
    /// Required resourceVersion.
    pub resource_version: Option<String>,
    /// `gracePeriodSeconds` (pods the simulated kubelet runs).
    pub grace_period: Option<i64>,
}

/// A write computed against the current state, waiting for admission and commit.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Admission operation.
    pub op: Operation,
    /// Resource written.
    pub res: ResourceInfo,
    /// Version the client used.
    pub version: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// Subresource written, if any.
    pub subresource: Option<String>,
    /// The object when planned (None for creates).
    pub old: Option<Arc<Value>>,
    /// The object to store; None removes it now.
    pub new: Option<Value>,
    /// Field ownership to store.
    pub owners: Owners,
    /// Delete policy.
    pub propagation: Propagation,
}

/// Why a commit did not happen.
#[derive(Debug)]
pub enum CommitError {
    /// The object changed since planning; plan again.
    Stale,
    /// The write is refused.
    Api(ApiError),
}

impl From<ApiError> for CommitError {
    fn from(e: ApiError) -> Self {
        CommitError::Api(e)
    }
}
