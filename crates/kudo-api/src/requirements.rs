//! Dependency constraints between Instances: an operator version says
//! which other operators it needs and which of their versions
//! (`dependencies` in `operator.yaml`, `spec.dependencies` of the
//! OperatorVersion). Nothing is installed for them: KudoOperator tasks
//! install children; these only hold upgrades that would leave a
//! requirement unmet.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most requirements one operator version may declare.
pub const MAX_REQUIREMENTS: usize = 32;

/// One operator another operator version needs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    /// The operator's name (`zookeeper`).
    #[serde(default)]
    pub operator: String,
    /// Its operator versions that work, Helm's ranges (`>=3.5 <4`); unset:
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
}

impl Requirement {
    /// The range, `*` when unset or empty.
    pub fn range(&self) -> &str {
        self.versions
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .unwrap_or("*")
    }
}
