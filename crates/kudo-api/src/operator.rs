//! The `Operator` custom resource: package metadata shared by all its versions.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Spec of an [`Operator`] (KUDO `OperatorSpec`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "Operator",
    namespaced,
    category = "kudo",
    status = "OperatorStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSpec {
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum KUDO version the package was written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kudo_version: Option<String>,
    /// Minimum Kubernetes version (`major.minor[.patch]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Package maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Project URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Template used by `install --create-namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_manifest: Option<String>,
}

/// A package maintainer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Maintainer {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// E-mail address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Status of an [`Operator`]: empty, as in KUDO (kept so KUDO objects with
/// `status: {}` round-trip).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperatorStatus {}
