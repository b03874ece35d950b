//! Operator package file types: `operator.yaml` and `params.yaml`.
//!
//! These are the author-facing forms; kudo-package converts them to
//! [`OperatorVersion`](crate::OperatorVersion) objects. Unknown fields are
//! ignored, as KUDO does; missing required fields are reported by the
//! package verifier with a message naming the file, not by serde.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::operator::Maintainer;
use crate::operator_version::{ParameterType, Plan, Task};

/// `operator.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorFile {
    /// Optional; must be `kudo.dev/v1beta1` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Operator name.
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Package version (semver).
    #[serde(default)]
    pub operator_version: String,
    /// Application version (semver when set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// Minimum KUDO version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kudo_version: Option<String>,
    /// Minimum Kubernetes version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Project URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tasks.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// Plans by name.
    #[serde(default)]
    pub plans: BTreeMap<String, Plan>,
    /// Template holding the Namespace for `install --create-namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_manifest: Option<String>,
    /// Release channels this version is published to (`stable`, `beta`);
    /// a kudo-rs addition that `repo index` copies into the index. KUDO's
    /// loader ignores it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// Other operators this version needs running beside it, and which of
    /// their versions (a kudo-rs addition, copied into the index and the
    /// OperatorVersion; KUDO's loader ignores it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::requirements::Requirement>,
}

/// Longest release channel name.
pub const MAX_CHANNEL_LEN: usize = 63;

/// A release channel name: 1 to 63 lowercase letters, digits, `-` and `.`,
/// starting and ending with a letter or digit (a DNS label, so it fits in
/// labels, annotations and messages without quoting).
pub fn check_channel(name: &str) -> Result<(), String> {
    let ok_end = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if name.is_empty() || name.len() > MAX_CHANNEL_LEN {
        return Err(format!(
            "channel {name:?} must have 1 to {MAX_CHANNEL_LEN} characters"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        || !ok_end(name.chars().next())
        || !ok_end(name.chars().last())
    {
        return Err(format!(
            "channel {name:?} is not a channel name (lowercase letters, digits, '-' and '.', \
             starting and ending with a letter or digit)"
        ));
    }
    Ok(())
}

/// `params.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamsFile {
    /// Optional; must be `kudo.dev/v1beta1` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// UI groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ParameterGroup>,
    /// Parameters.
    #[serde(default)]
    pub parameters: Vec<PackageParameter>,
}

/// A UI group of parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterGroup {
    /// Group name.
    #[serde(default)]
    pub name: String,
    /// UI name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Sort priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<i64>,
}

fn default_true() -> bool {
    true
}

/// A parameter as written in `params.yaml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageParameter {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// UI name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a value is required: **defaults to true** in packages.
    #[serde(default = "default_true")]
    pub required: bool,
    /// Default of any YAML type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// Plan triggered by a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Value type (package key `type`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub value_type: Option<ParameterType>,
    /// Value cannot change after creation.
    #[serde(default)]
    pub immutable: bool,
    /// Allowed values of any YAML type.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<serde_json::Value>>,
    /// UI group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// UI: advanced parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced: Option<bool>,
    /// UI hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Default for PackageParameter {
    fn default() -> Self {
        Self {
            name: String::new(),
            display_name: None,
            description: None,
            required: true,
            default: None,
            trigger: None,
            value_type: None,
            immutable: false,
            enum_values: None,
            group: None,
            advanced: None,
            hint: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_are_dns_labels() {
        for good in ["stable", "beta", "1.x", "lts-2026"] {
            assert!(check_channel(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Stable",
            "-beta",
            "beta-",
            "a b",
            "a,b",
            &"x".repeat(64),
        ] {
            let err = check_channel(bad).unwrap_err();
            assert!(err.contains("channel"), "{bad}: {err}");
        }
    }
}
