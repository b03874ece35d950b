//! The `Instance` custom resource: one deployment of an operator, its
//! parameters, the plan requests people make, and everything the manager
//! observed and did (status).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::operations::{MaintenanceWindow, PlanAction, PlanOperation, Suppression};
use crate::{Condition, ExecutionStatus, ObjectReference, Time};

/// Spec of an [`Instance`] (KUDO `InstanceSpec` plus kudo-rs additions).
///
/// Spec is what people and GitOps tools ask for; the manager never writes it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "Instance",
    namespaced,
    shortname = "inst",
    category = "kudo",
    status = "InstanceStatus",
    printcolumn = r#"{"name":"Operator Version","type":"string","jsonPath":".spec.operatorVersion.name"}"#,
    printcolumn = r#"{"name":"Plan","type":"string","jsonPath":".status.activePlan.name"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.activePlan.status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSpec {
    /// The OperatorVersion to run (usually only `name`; namespace defaults
    /// to the Instance's).
    #[serde(default)]
    pub operator_version: ObjectReference,
    /// User-provided parameter values (defaults are not copied in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<BTreeMap<String, String>>,
    /// A request to run a plan: a new `uid` runs `planName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_execution: Option<PlanExecution>,
    /// Plan operations (pause, continue, force-complete, ...), each applied once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan_operations: Vec<PlanOperation>,
    /// Weekly windows in which steps may start (none = always).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintenance_windows: Vec<MaintenanceWindow>,
    /// Manual suppression windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suppressions: Vec<Suppression>,
    /// ServiceAccount of the Instance's namespace that the manager
    /// impersonates to apply and delete its objects, so the Instance can
    /// create only what that account may. Unset: `kudo-instance` (made by
    /// the manager), the manager's `--default-service-account`, or the
    /// manager itself with `--manager-writes-as-itself`. Whoever writes the
    /// Instance's spec must be allowed to impersonate this account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Whether the manager re-applies objects deleted or changed behind its
    /// back (the `recovery` plan). Unset: enabled, unless the manager runs
    /// with `--recovery=false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryPolicy>,
    /// Track a release channel of an OperatorRepository: the manager
    /// installs the newest version it offers within `versions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrades: Option<crate::upgrades::UpgradePolicy>,
}

/// `spec.recovery`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RecoveryPolicy {
    /// Drift starts the `recovery` plan (the default).
    #[default]
    Enabled,
    /// Drift is left alone.
    Disabled,
}

impl InstanceSpec {
    /// Parameter value given by the user, if any.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.parameters.as_ref()?.get(name).map(String::as_str)
    }
}

/// A request to run a plan (KUDO `PlanExecution`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanExecution {
    /// Plan to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_name: Option<String>,
    /// Unique id of this request; a new uid is a new run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Mirror of the plan status. KUDO's controller wrote it; kudo-rs never
    /// writes spec and ignores it, but keeps it so KUDO objects round-trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
    /// Run this execution outside maintenance windows (kudo-rs addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_glass: Option<bool>,
    /// Parameter values for this execution only, encoded as in
    /// `spec.parameters`: the plan's templates see them in `.Params` over
    /// the Instance's own; they never become the Instance's (kudo-rs
    /// addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<BTreeMap<String, String>>,
}

/// Status of an [`Instance`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceStatus {
    /// Status of every plan of the OperatorVersion, by plan name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plan_status: BTreeMap<String, PlanStatus>,
    /// Exactly one condition, `Ready`, as KUDO computes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    // ----- kudo-rs additions -----
    /// The running plan, or the last one that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_plan: Option<ActivePlan>,
    /// Parameters the last started plan ran with (trigger detection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_parameters: Option<BTreeMap<String, String>>,
    /// OperatorVersion name the last started plan ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_operator_version: Option<String>,
    /// Last `spec.planExecution.uid` the manager consumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_plan_execution_uid: Option<String>,
    /// OperatorVersion + parameters with which a plan last completed (rollback target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful: Option<AppliedConfig>,
    /// Automatic suppression set when a plan ended in FATAL_ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_suppression: Option<AutoSuppression>,
    /// Why no step can start now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<Blocker>,
    /// The last executions, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PlanRun>,
    /// Plan operations already applied (by id), newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<OperationRecord>,
    /// Id of the newest `spec.planOperations` entry up to which every entry
    /// was applied: none of them is applied again, whether or not its
    /// record is still in `operations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations_mark: Option<String>,
    /// Objects the `recovery` plan re-applied in the last hour (backoff
    /// against another controller that keeps changing them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recoveries: Vec<RecoveryRecord>,
    /// `metadata.generation` last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Node maintenance this Instance was told of, and its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<crate::InstanceMaintenance>,
    /// What `spec.upgrades` resolved to and why no upgrade runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrades: Option<crate::upgrades::UpgradeStatus>,
}

/// The running plan or the last one that ran (printer columns read it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivePlan {
    /// Plan name.
    pub name: String,
    /// Execution uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Plan status.
    pub status: ExecutionStatus,
    /// What started it (see [`PlanRun::trigger`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// Windows are ignored for this execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_glass: Option<bool>,
}

/// Status of one plan (KUDO `PlanStatus` plus kudo-rs additions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    /// Plan name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Aggregated status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
    /// Explanation, e.g. the error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Last status change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_timestamp: Option<Time>,
    /// Phases in OperatorVersion order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseStatus>,
    /// Execution uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Paused by a plan operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// When this execution started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When this execution reached COMPLETE or FATAL_ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// Parameter values given for this execution (`spec.planExecution.parameters`
    /// when it started): its renders read them over the Instance's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
}

impl PlanStatus {
    /// Status, NEVER_RUN when unset.
    pub fn status(&self) -> ExecutionStatus {
        self.status.unwrap_or_default()
    }

    /// The phase with this name.
    pub fn phase(&self, name: &str) -> Option<&PhaseStatus> {
        self.phases.iter().find(|p| p.name == name)
    }
}

/// Status of one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseStatus {
    /// Phase name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Aggregated status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
    /// Explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Steps in OperatorVersion order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepStatus>,
    /// Paused by a plan operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Canary `continue` approvals consumed in this execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_approvals: Option<u32>,
}

impl PhaseStatus {
    /// Status, NEVER_RUN when unset.
    pub fn status(&self) -> ExecutionStatus {
        self.status.unwrap_or_default()
    }

    /// The step with this name.
    pub fn step(&self, name: &str) -> Option<&StepStatus> {
        self.steps.iter().find(|s| s.name == name)
    }
}

/// Status of one step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepStatus {
    /// Step name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Explanation, e.g. the error or what it waits for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
    /// When the step started in this execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the step reached COMPLETE or FATAL_ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// Failed attempts so far (ERROR retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Earliest time of the next retry after an ERROR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<Time>,
    /// Completed by a force-complete operation, not by running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<bool>,
    /// Per-task status, in task order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskStatus>,
}

impl StepStatus {
    /// Status, NEVER_RUN when unset.
    pub fn status(&self) -> ExecutionStatus {
        self.status.unwrap_or_default()
    }
}

/// Status of one task of a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// Task name.
    pub name: String,
    /// Status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
    /// Explanation, e.g. which object is not healthy yet.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Objects the task applied in this execution (pruning input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<AppliedObject>,
}

/// Identity of an object a task applied.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct AppliedObject {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (unset for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// An OperatorVersion and parameters (rollback target).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedConfig {
    /// OperatorVersion name.
    pub operator_version: String,
    /// User-provided parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Plan that completed with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
}

/// A suppression the manager set itself after a FATAL_ERROR.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoSuppression {
    /// When it was set.
    pub since: Time,
    /// When it ends by itself (unset: until cleared or rolled back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Time>,
    /// Why, e.g. `plan "deploy" failed: ...`.
    pub reason: String,
    /// Plan that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Execution uid that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// Why no step can start now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Blocker {
    /// Kind of constraint.
    pub kind: BlockerKind,
    /// Human explanation, e.g. `maintenance window closed until 2026-11-23T22:00:00+01:00`.
    pub message: String,
    /// When the constraint lifts by itself, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Time>,
    /// Plan it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Phase it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Step it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// For a window or a suppression: since when the plan it concerns has
    /// been held by one without a break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
}

/// Kinds of [`Blocker`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum BlockerKind {
    /// Outside every maintenance window.
    MaintenanceWindow,
    /// A manual or automatic suppression is active.
    Suppressed,
    /// A canary step waits for `kubectl kudo plan continue`.
    CanaryApproval,
    /// The plan or phase is paused.
    Paused,
    /// A step waits for an object to become healthy.
    WaitingForResource,
    /// A step waits for its next retry after an ERROR.
    Backoff,
    /// Anything else.
    #[default]
    Other,
}

/// One plan execution in `status.history`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanRun {
    /// Plan name.
    pub plan: String,
    /// Execution uid.
    pub uid: String,
    /// What started it: `create`, `parameter NAME[,NAME...]`, `upgrade`,
    /// `manual`, `rollback` or `cleanup`.
    pub trigger: String,
    /// Start time.
    pub started: Time,
    /// End time (unset while running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<Time>,
    /// Final status: unset while running, and for a run a new request of
    /// the same plan superseded (then `finished` is set and the message
    /// says what replaced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ExecutionStatus>,
    /// Final message, e.g. the error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Parameter values given for this execution only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Why an upgrade or a rollback moved the Instance, e.g. `channel
    /// stable: 1.3.0 → 1.4.0`, `recall of 1.3.0: CVE-... (→ 1.3.1)` or
    /// `operatorVersion zk-0.3.0 → zk-0.3.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How often the `recovery` plan re-applied one object lately.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryRecord {
    /// The object.
    pub object: AppliedObject,
    /// When recoveries of it started within the last hour, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovered_at: Vec<Time>,
    /// What the last recovery repaired, e.g. `Deployment ns/web deleted`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cause: String,
}

/// A plan operation the manager applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationRecord {
    /// Request id.
    pub id: String,
    /// Action.
    pub action: PlanAction,
    /// When it was applied.
    pub applied_at: Time,
    /// What happened, e.g. `step "node-1" forced to COMPLETE` or why it was a no-op.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
}
