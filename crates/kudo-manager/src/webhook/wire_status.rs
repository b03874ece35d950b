//! The old object's status, reduced to what the admission rules read.
//!
//! Most of a live Instance's status is record: the run history, the
//! conditions, applied operations, blockers, and for every step its
//! messages, timestamps, retry counters and tasks with each object they
//! applied. `kudo_engine::admission` reads none of that. It reads which plan
//! is active, the plan, phase and step names with their statuses (what is
//! in the way, and where), the plan uids (was cleanup already run), the
//! applied configuration (is a request still pending, is this a rollback)
//! and the automatic suppression (warnings). Only those are decoded; the
//! rest is skipped (still checked to be JSON, not for its types).
//!
//! Kept in step with the engine by `slim_and_full_statuses_get_the_same_verdicts`
//! below: every admission fixture, as sent and with a status full of
//! records, must be judged alike from this status and from the full one.

use std::collections::BTreeMap;

use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, ExecutionStatus, InstanceStatus, PhaseStatus,
    PlanStatus, StepStatus,
};
use serde::Deserialize;

/// `status` of the old object; the fields and defaults of `InstanceStatus`
/// that the rules read.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireStatus {
    #[serde(default)]
    plan_status: BTreeMap<String, WirePlanStatus>,
    #[serde(default)]
    active_plan: Option<ActivePlan>,
    #[serde(default)]
    applied_parameters: Option<BTreeMap<String, String>>,
    #[serde(default)]
    applied_operator_version: Option<String>,
    #[serde(default)]
    last_plan_execution_uid: Option<String>,
    #[serde(default)]
    last_successful: Option<AppliedConfig>,
    #[serde(default)]
    auto_suppression: Option<AutoSuppression>,
}

#[derive(Debug, Deserialize)]
struct WirePlanStatus {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    phases: Vec<WirePhaseStatus>,
    #[serde(default)]
    uid: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WirePhaseStatus {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    steps: Vec<WireStepStatus>,
}

#[derive(Debug, Deserialize)]
struct WireStepStatus {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
}

impl From<WireStatus> for InstanceStatus {
    fn from(wire: WireStatus) -> Self {
        InstanceStatus {
            plan_status: wire
                .plan_status
                .into_iter()
                .map(|(name, plan)| (name, plan.into()))
                .collect(),
            active_plan: wire.active_plan,
            applied_parameters: wire.applied_parameters,
            applied_operator_version: wire.applied_operator_version,
            last_plan_execution_uid: wire.last_plan_execution_uid,
            last_successful: wire.last_successful,
            auto_suppression: wire.auto_suppression,
            ..InstanceStatus::default()
        }
    }
}

impl From<WirePlanStatus> for PlanStatus {
    fn from(wire: WirePlanStatus) -> Self {
        PlanStatus {
            name: wire.name,
            status: wire.status,
            phases: wire.phases.into_iter().map(Into::into).collect(),
            uid: wire.uid,
            ..PlanStatus::default()
        }
    }
}

impl From<WirePhaseStatus> for PhaseStatus {
    fn from(wire: WirePhaseStatus) -> Self {
        PhaseStatus {
            name: wire.name,
            status: wire.status,
            steps: wire
                .steps
                .into_iter()
                .map(|step| StepStatus {
                    name: step.name,
                    status: step.status,
                    ..StepStatus::default()
                })
                .collect(),
            ..PhaseStatus::default()
        }
    }
}

#[cfg(test)]
#[path = "wire_status_tests.rs"]
mod tests;
