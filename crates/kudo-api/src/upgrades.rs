//! An Instance that tracks a release channel of an OperatorRepository:
//! the intent in `spec.upgrades` (written by people and GitOps tools), what
//! was resolved and installed in `status.upgrades` (written by the
//! manager, which never writes spec).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a resolved version is installed by itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Approval {
    /// As soon as every hold allows.
    #[default]
    Automatic,
    /// Only the version named in `approved` (`kubectl kudo upgrade approve`).
    Manual,
}

/// `spec.upgrades`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradePolicy {
    /// The OperatorRepository (cluster-scoped) whose index is followed.
    #[serde(default)]
    pub repository: String,
    /// The channel (default `stable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Operator versions allowed (Helm's ranges: `>=1.2 <2`, `^1`); unset:
    /// any of the installed major version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
    /// `Automatic` (default) or `Manual`.
    #[serde(default)]
    pub approval: Approval,
    /// Whether a recalled version may be left for an older one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_downgrade: bool,
    /// With `Manual`: the operator version a person approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<String>,
    /// Operator name → the Instance of this namespace that satisfies
    /// this Instance's requirement on it; unset: the one Instance of that
    /// operator in the namespace.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dependencies: std::collections::BTreeMap<String, String>,
    /// The version a person rolled back from (`kubectl kudo rollback`
    /// writes it): while the manager runs it, `spec.operatorVersion` wins
    /// again, and it is not moved to again by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back_from: Option<String>,
}

impl UpgradePolicy {
    /// The channel, `stable` when unset.
    pub fn channel(&self) -> &str {
        self.channel
            .as_deref()
            .filter(|c| !c.is_empty())
            .unwrap_or("stable")
    }
}

/// `status.upgrades`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStatus {
    /// The operator version the Instance runs or is moving to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    /// The newest version the channel and range offer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available: Option<String>,
    /// The OperatorVersion the manager runs the Instance with (it takes the
    /// place of `spec.operatorVersion` once set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version: Option<String>,
    /// `sha256:` and hex of the spec the release's package makes, recorded
    /// with `operatorVersion`: an OperatorVersion of that name whose spec
    /// digests otherwise was changed since, and is not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version_digest: Option<String>,
    /// Why no upgrade runs now (`channel stable: 1.3.0 → 1.4.0: waiting
    /// for approval`); unset when nothing waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last move the manager started (`channel stable: 1.3.0 → 1.4.0`,
    /// `recall of 1.3.0: CVE-... (→ 1.3.1)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<String>,
    /// `spec.operatorVersion` when `operatorVersion` was set: when a person
    /// changes it (`rollback`, `upgrade`), spec wins again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_operator_version: Option<String>,
    /// A version left by hand (rolled back from): not moved to again
    /// until a newer one is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl UpgradeStatus {
    /// The OperatorVersion a channel move installed, while the Instance's
    /// spec (`spec`) still is what it was when the move started: a person
    /// who changes `spec.operatorVersion` or rolls back from the moved-to
    /// version (`spec.upgrades.rolledBackFrom`) takes over again. Removing
    /// `spec.upgrades` alone does not, so that it never moves the Instance
    /// back to an older version.
    pub fn in_force(&self, spec: &crate::InstanceSpec) -> Option<&str> {
        let rolled_back_from = spec
            .upgrades
            .as_ref()
            .and_then(|u| u.rolled_back_from.as_deref());
        let spec_changed =
            self.spec_operator_version.as_deref() != spec.operator_version.name.as_deref();
        let left = rolled_back_from.is_some() && rolled_back_from == self.installed.as_deref();
        if spec_changed || left {
            None
        } else {
            self.operator_version.as_deref()
        }
    }
}
