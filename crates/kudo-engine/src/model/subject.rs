//! The admission model: what the rules read of an Instance, owned, and
//! decoded by the webhook straight from the AdmissionReview with serde.
//!
//! The spec is kudo-api's [`InstanceSpec`], whole, so two specs compare
//! equal exactly when the Instances' do, whatever fields it gains. Of the
//! metadata and the status only what the rules read is kept; everything
//! else in the request is skipped unread. The conversions from kudo-api's
//! types name every field of the status types, so a field added there does
//! not compile until this model decides whether the rules read it.

use std::collections::BTreeMap;

use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kudo_api::upgrades::UpgradeStatus;
use kudo_api::{
    ActivePlan, AppliedConfig, AppliedObject, AutoSuppression, ExecutionStatus, Instance,
    InstanceSpec, InstanceStatus, PhaseStatus, PlanStatus, StepStatus, TaskStatus, Time,
};
use serde::Deserialize;

/// An Instance as the admission rules read it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Subject {
    /// The metadata the rules read.
    #[serde(default)]
    pub metadata: Identity,
    /// `spec`, all of it.
    pub spec: InstanceSpec,
    /// What the rules read of `status` (only the old object's is read).
    #[serde(default)]
    pub status: Option<StatusFacts>,
}

/// `metadata`: names for messages, uid and generation for derived plan
/// uids, and whether the Instance is being deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// `metadata.name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `metadata.namespace`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `metadata.uid`.
    #[serde(default)]
    pub uid: Option<String>,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
    /// `metadata.deletionTimestamp`.
    #[serde(default)]
    pub deletion_timestamp: Option<Time>,
}

/// The parts of `status` the rules read: which plan is active, the plans'
/// statuses, uids and phase/step names (what is in the way, and where),
/// the consumed configuration, the automatic suppression and the
/// operations mark.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusFacts {
    /// `planStatus`, by plan name.
    #[serde(default)]
    pub plan_status: BTreeMap<String, PlanFacts>,
    /// `activePlan`.
    #[serde(default)]
    pub active_plan: Option<ActivePlan>,
    /// `appliedParameters`.
    #[serde(default)]
    pub applied_parameters: Option<BTreeMap<String, String>>,
    /// `appliedOperatorVersion`.
    #[serde(default)]
    pub applied_operator_version: Option<String>,
    /// `lastPlanExecutionUid`.
    #[serde(default)]
    pub last_plan_execution_uid: Option<String>,
    /// `lastSuccessful`.
    #[serde(default)]
    pub last_successful: Option<AppliedConfig>,
    /// `autoSuppression`.
    #[serde(default)]
    pub auto_suppression: Option<AutoSuppression>,
    /// `operationsMark`.
    #[serde(default)]
    pub operations_mark: Option<String>,
    /// `upgrades`: which OperatorVersion an Instance that tracks a channel
    /// runs in place of `spec.operatorVersion`.
    #[serde(default)]
    pub upgrades: Option<UpgradeStatus>,
}

/// One `planStatus` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PlanFacts {
    /// `status` (NEVER_RUN when absent).
    #[serde(default)]
    pub status: Option<ExecutionStatus>,
    /// `uid`.
    #[serde(default)]
    pub uid: Option<String>,
    /// `phases`.
    #[serde(default)]
    pub phases: Vec<PhaseFacts>,
    /// `paused`: the plan's next run starts paused too.
    #[serde(default)]
    pub paused: Option<bool>,
}

/// One phase of a plan status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct PhaseFacts {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `steps`.
    #[serde(default)]
    pub steps: Vec<StepFacts>,
}

/// One step of a phase status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct StepFacts {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `status` (NEVER_RUN when absent).
    #[serde(default)]
    pub status: Option<ExecutionStatus>,
    /// `tasks`: what each task applied (the objects a running plan works on).
    #[serde(default)]
    pub tasks: Vec<TaskFacts>,
}

/// One task of a step status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct TaskFacts {
    /// `name`.
    #[serde(default)]
    pub name: String,
    /// `objects`.
    #[serde(default)]
    pub objects: Vec<AppliedObject>,
}

impl Subject {
    /// The OperatorVersion name spec asks for ("" when unset).
    pub fn ov_name(&self) -> &str {
        self.spec.operator_version.name.as_deref().unwrap_or("")
    }

    /// Spec parameters (empty when unset).
    pub fn params(&self) -> &BTreeMap<String, String> {
        spec_params(&self.spec)
    }
}

impl PlanFacts {
    /// Status, NEVER_RUN when unset.
    pub fn status(&self) -> ExecutionStatus {
        self.status.unwrap_or_default()
    }
}

impl StepFacts {
    /// Status, NEVER_RUN when unset.
    pub fn status(&self) -> ExecutionStatus {
        self.status.unwrap_or_default()
    }
}

impl From<&Instance> for Subject {
    fn from(instance: &Instance) -> Self {
        let Instance {
            metadata,
            spec,
            status,
        } = instance;
        Self {
            metadata: Identity::from(metadata),
            spec: spec.clone(),
            status: status.as_ref().map(StatusFacts::from),
        }
    }
}

impl From<&ObjectMeta> for Identity {
    fn from(meta: &ObjectMeta) -> Self {
        Self {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            generation: meta.generation,
            deletion_timestamp: meta.deletion_timestamp.clone(),
        }
    }
}

impl From<&InstanceStatus> for StatusFacts {
    fn from(status: &InstanceStatus) -> Self {
        let InstanceStatus {
            plan_status,
            conditions: _,
            active_plan,
            applied_parameters,
            applied_operator_version,
            last_plan_execution_uid,
            last_successful,
            auto_suppression,
            blockers: _,
            history: _,
            operations: _,
            operations_mark,
            recoveries: _,
            observed_generation: _,
            maintenance: _,
            upgrades,
        } = status;
        Self {
            plan_status: plan_status
                .iter()
                .map(|(name, plan)| (name.clone(), PlanFacts::from(plan)))
                .collect(),
            active_plan: active_plan.clone(),
            applied_parameters: applied_parameters.clone(),
            applied_operator_version: applied_operator_version.clone(),
            last_plan_execution_uid: last_plan_execution_uid.clone(),
            last_successful: last_successful.clone(),
            auto_suppression: auto_suppression.clone(),
            operations_mark: operations_mark.clone(),
            upgrades: upgrades.clone(),
        }
    }
}

impl From<&PlanStatus> for PlanFacts {
    fn from(plan: &PlanStatus) -> Self {
        let PlanStatus {
            name: _,
            status,
            message: _,
            last_updated_timestamp: _,
            phases,
            uid,
            paused,
            started_at: _,
            finished_at: _,
            parameters: _,
        } = plan;
        Self {
            status: *status,
            uid: uid.clone(),
            phases: phases.iter().map(PhaseFacts::from).collect(),
            paused: *paused,
        }
    }
}

impl From<&PhaseStatus> for PhaseFacts {
    fn from(phase: &PhaseStatus) -> Self {
        let PhaseStatus {
            name,
            status: _,
            message: _,
            steps,
            paused: _,
            canary_approvals: _,
        } = phase;
        Self {
            name: name.clone(),
            steps: steps.iter().map(StepFacts::from).collect(),
        }
    }
}

impl From<&StepStatus> for StepFacts {
    fn from(step: &StepStatus) -> Self {
        let StepStatus {
            name,
            message: _,
            status,
            started_at: _,
            finished_at: _,
            attempts: _,
            next_retry_at: _,
            forced: _,
            tasks,
        } = step;
        Self {
            name: name.clone(),
            status: *status,
            tasks: tasks.iter().map(TaskFacts::from).collect(),
        }
    }
}

impl From<&TaskStatus> for TaskFacts {
    fn from(task: &TaskStatus) -> Self {
        let TaskStatus {
            name,
            status: _,
            message: _,
            objects,
        } = task;
        Self {
            name: name.clone(),
            objects: objects.clone(),
        }
    }
}

/// The OperatorVersion name spec asks for ("" when unset).
pub fn spec_ov_name(spec: &InstanceSpec) -> &str {
    spec.operator_version.name.as_deref().unwrap_or_default()
}

/// Spec parameters (empty when unset).
pub fn spec_params(spec: &InstanceSpec) -> &BTreeMap<String, String> {
    spec.parameters.as_ref().unwrap_or(&NO_PARAMS)
}

pub(crate) static NO_PARAMS: BTreeMap<String, String> = BTreeMap::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_an_instance_reads_what_the_conversion_keeps() {
        let json = serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {
                "name": "zk", "namespace": "ns", "uid": "u-7", "generation": 4,
                "deletionTimestamp": "2026-01-02T03:04:05Z",
                "labels": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"operatorVersion": {"name": "zk-1"}, "parameters": {"A": "1"}},
            "status": {
                "appliedOperatorVersion": "zk-1",
                "activePlan": {"name": "deploy", "status": "IN_PROGRESS"},
                "planStatus": {"deploy": {"name": "deploy", "status": "IN_PROGRESS", "uid": "x",
                    "message": "m", "phases": [{"name": "p", "status": "IN_PROGRESS",
                    "steps": [{"name": "s", "status": "COMPLETE", "attempts": 2,
                        "tasks": [{"name": "t"}]}]}]}},
                "history": [{"plan": "deploy", "uid": "x", "trigger": "create",
                    "started": "2026-01-02T03:04:05Z"}],
                "conditions": []
            }
        });
        let decoded: Subject = serde_json::from_value(json.clone()).unwrap();
        let full: Instance = serde_json::from_value(json).unwrap();
        assert_eq!(decoded, Subject::from(&full));
        assert_eq!(decoded.ov_name(), "zk-1");
        assert_eq!(decoded.metadata.generation, Some(4));
    }

    #[test]
    fn a_missing_spec_is_an_error_as_for_the_full_instance() {
        let object = serde_json::json!({"metadata": {"name": "zk"}});
        assert!(serde_json::from_value::<Subject>(object.clone()).is_err());
        assert!(serde_json::from_value::<Instance>(object).is_err());
    }
}
