//! The `OperatorVersion` custom resource: one version of a package, with its
//! templates, tasks, parameters and plans.

use std::collections::BTreeMap;
use std::fmt;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ObjectReference;

/// Most parameters a package (an OperatorVersion) may declare: the largest
/// real ones declare a few hundred, and every parameter check walks them.
pub const MAX_PARAMETERS: usize = 1000;
/// Most tasks, and most steps of all plans together, a package may have.
pub const MAX_TASKS: usize = 1000;

/// Spec of an [`OperatorVersion`] (KUDO `OperatorVersionSpec`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "OperatorVersion",
    namespaced,
    shortname = "ov",
    category = "kudo",
    status = "OperatorVersionStatus",
    printcolumn = r#"{"name":"Operator","type":"string","jsonPath":".spec.operator.name"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version"}"#,
    printcolumn = r#"{"name":"App Version","type":"string","jsonPath":".spec.appVersion"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorVersionSpec {
    /// The Operator this is a version of (`{name, kind: Operator}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<ObjectReference>,
    /// Operator (package) version, semver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Version of the application the package deploys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// Template file name (relative to `templates/`) → raw template text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub templates: BTreeMap<String, String>,
    /// Tasks that steps refer to by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// Parameter definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// Plans by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("nullable" = true))]
    pub plans: BTreeMap<String, Plan>,
    /// Unused by KUDO; kept for compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_string: Option<String>,
    /// Unused by KUDO; kept for compatibility.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upgradable_from: Vec<ObjectReference>,
    /// Other operators this version needs in the Instance's namespace,
    /// and which of their versions (a kudo-rs addition: upgrades that
    /// would leave one unmet are held).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::requirements::Requirement>,
}

impl OperatorVersionSpec {
    /// The plan with this name.
    pub fn plan(&self, name: &str) -> Option<&Plan> {
        self.plans.get(name)
    }

    /// The task with this name.
    pub fn task(&self, name: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.name == name)
    }

    /// The parameter definition with this name.
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }
}

/// Status of an [`OperatorVersion`]: empty, as in KUDO.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperatorVersionStatus {}

/// A plan: phases run by a strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Strategy over phases: `serial` or `parallel` (missing = parallel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Phases in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("nullable" = true))]
    pub phases: Vec<Phase>,
    /// kudo-rs: the plan takes the service down, so it starts and starts
    /// steps only inside the Instance's downtime windows (KUDO's package
    /// reader does not read this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downtime: Option<bool>,
}

/// A phase: steps run by a strategy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Phase {
    /// Phase name, unique in its plan.
    pub name: String,
    /// Strategy over steps: `serial`, `parallel` (missing = parallel),
    /// `serial-canary` (alias `canary`) or `parallel-canary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Steps in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
}

/// A step: tasks run in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// Step name, unique in its phase.
    pub name: String,
    /// Names of the tasks to run, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
}

/// A strategy parsed from the raw `strategy` string of a plan or phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One child after the other.
    Serial,
    /// All children at once (also what a missing or empty strategy means).
    Parallel,
    /// DC/OS canary over serial: the first step waits for one `continue`, the
    /// second `continue` releases the rest one by one.
    SerialCanary,
    /// DC/OS canary over parallel: as [`Strategy::SerialCanary`], but the
    /// second `continue` releases the rest at once.
    ParallelCanary,
}

/// The strategy string is not one kudo-rs knows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown strategy {0:?}; expected serial, parallel, serial-canary, canary or parallel-canary"
)]
pub struct UnknownStrategy(pub String);

impl Strategy {
    /// Parses a raw strategy; `None` and `""` mean parallel, as in KUDO.
    pub fn parse(raw: Option<&str>) -> Result<Self, UnknownStrategy> {
        match raw.map(str::trim).unwrap_or("") {
            "" | "parallel" => Ok(Self::Parallel),
            "serial" => Ok(Self::Serial),
            "serial-canary" | "canary" => Ok(Self::SerialCanary),
            "parallel-canary" => Ok(Self::ParallelCanary),
            other => Err(UnknownStrategy(other.to_string())),
        }
    }

    /// Whether the first steps wait for `continue` requests.
    pub fn is_canary(self) -> bool {
        matches!(self, Self::SerialCanary | Self::ParallelCanary)
    }

    /// Whether children run one after the other (after the canary gate).
    pub fn is_serial(self) -> bool {
        matches!(self, Self::Serial | Self::SerialCanary)
    }

    /// Canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Serial => "serial",
            Self::Parallel => "parallel",
            Self::SerialCanary => "serial-canary",
            Self::ParallelCanary => "parallel-canary",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task: what a step does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// Task name, referenced by steps.
    pub name: String,
    /// Task kind: `Apply`, `Delete`, `Toggle`, `Dummy`, `Pipe` or `KudoOperator`.
    pub kind: String,
    /// Kind-specific fields (one flat object, as in KUDO).
    #[serde(default)]
    pub spec: TaskSpec,
}

impl Task {
    /// The parsed kind, or `None` when it is not one kudo-rs knows.
    pub fn task_kind(&self) -> Option<TaskKind> {
        TaskKind::parse(&self.kind)
    }
}

/// The kinds of task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// Render and apply resources; done when all are healthy.
    Apply,
    /// Render and delete resources; done when all are gone.
    Delete,
    /// Apply or Delete depending on a boolean parameter.
    Toggle,
    /// Do nothing (or fail on request).
    Dummy,
    /// Run a pod and copy files it writes into Secrets/ConfigMaps.
    Pipe,
    /// Create a child Instance of another operator.
    KudoOperator,
}

impl TaskKind {
    /// All kinds.
    pub const ALL: [Self; 6] = [
        Self::Apply,
        Self::Delete,
        Self::Toggle,
        Self::Dummy,
        Self::Pipe,
        Self::KudoOperator,
    ];

    /// Parses the exact KUDO kind name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == raw)
    }

    /// KUDO kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Delete => "Delete",
            Self::Toggle => "Toggle",
            Self::Dummy => "Dummy",
            Self::Pipe => "Pipe",
            Self::KudoOperator => "KudoOperator",
        }
    }
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Kind-specific task fields, flattened into one object as KUDO does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// Apply, Delete, Toggle: template names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Toggle: the boolean parameter deciding apply (true) or delete (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// Dummy: fail with "dummy error".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want_err: Option<bool>,
    /// Dummy: the error is fatal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fatal: Option<bool>,
    /// Dummy: report done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    /// Pipe: template name of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// Pipe: files to copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipe: Vec<PipeSpec>,
    /// KudoOperator: operator (package) name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// KudoOperator: child instance name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_name: Option<String>,
    /// KudoOperator: child app version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// KudoOperator: child operator version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_version: Option<String>,
    /// KudoOperator: template rendering the child's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_file: Option<String>,
}

/// One file a Pipe task copies out of its pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PipeSpec {
    /// Path of a file copied whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Path of a `KEY=value` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_file: Option<String>,
    /// `Secret` or `ConfigMap`.
    pub kind: String,
    /// Key under which templates find the artifact (`.Pipes.<key>`).
    pub key: String,
}

/// A parameter definition as stored in the OperatorVersion (KUDO's CRD form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Parameter {
    /// Parameter name.
    pub name: String,
    /// UI name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a value is required; `None` means not required (KUDO's CRD rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Default as a string; map and array defaults are YAML text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Plan triggered when this parameter changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Value type (note the CRD key is `value-type`).
    #[serde(
        rename = "value-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub value_type: Option<ParameterType>,
    /// The value cannot change after creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
    /// Allowed values (stringified).
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<String>>,
}

impl Parameter {
    /// The effective type (`string` when unset).
    pub fn kind(&self) -> ParameterType {
        self.value_type.unwrap_or_default()
    }

    /// Whether the definition is marked required.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(false)
    }

    /// Whether the definition is marked immutable.
    pub fn is_immutable(&self) -> bool {
        self.immutable.unwrap_or(false)
    }
}

/// Parameter value types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    /// Any string (the default).
    #[default]
    String,
    /// Base-10 integer.
    Integer,
    /// Floating point number.
    Number,
    /// Go `strconv.ParseBool` forms.
    Boolean,
    /// YAML list.
    Array,
    /// YAML map with string keys.
    Map,
}

impl ParameterType {
    /// Name as written in packages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Array => "array",
            Self::Map => "map",
        }
    }
}

impl fmt::Display for ParameterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_strategy_means_parallel() {
        assert_eq!(Strategy::parse(None), Ok(Strategy::Parallel));
        assert_eq!(Strategy::parse(Some("")), Ok(Strategy::Parallel));
    }

    #[test]
    fn canary_is_an_alias_of_serial_canary() {
        assert_eq!(Strategy::parse(Some("canary")), Ok(Strategy::SerialCanary));
        assert!(Strategy::SerialCanary.is_canary() && Strategy::SerialCanary.is_serial());
        assert!(Strategy::ParallelCanary.is_canary() && !Strategy::ParallelCanary.is_serial());
    }

    #[test]
    fn unknown_strategy_is_an_error_naming_it() {
        let err = Strategy::parse(Some("random")).unwrap_err();
        assert!(err.to_string().contains("\"random\""));
    }

    #[test]
    fn task_kinds_parse_exactly() {
        assert_eq!(
            TaskKind::parse("KudoOperator"),
            Some(TaskKind::KudoOperator)
        );
        assert_eq!(TaskKind::parse("apply"), None);
    }
}
