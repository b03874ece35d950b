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
use std::fmt;

use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, ExecutionStatus, InstanceStatus, PhaseStatus,
    PlanStatus, StepStatus,
};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// `status` of the old object; the fields and defaults of `InstanceStatus`
/// that the rules read. Plan statuses are decoded straight into kudo-api's
/// types (through the `Slim*` wrappers below), so nothing is copied or
/// collected a second time.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireStatus {
    #[serde(default, deserialize_with = "plan_statuses")]
    plan_status: BTreeMap<String, PlanStatus>,
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

impl From<WireStatus> for InstanceStatus {
    fn from(wire: WireStatus) -> Self {
        InstanceStatus {
            plan_status: wire.plan_status,
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

/// `planStatus` as a map of slim plan statuses (a repeated key: the last
/// one wins, as for the derived map).
fn plan_statuses<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, PlanStatus>, D::Error> {
    struct Plans;
    impl<'de> Visitor<'de> for Plans {
        type Value = BTreeMap<String, PlanStatus>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a map of plan statuses")
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            let mut plans = BTreeMap::new();
            while let Some((name, SlimPlan(plan))) = map.next_entry::<String, SlimPlan>()? {
                plans.insert(name, plan);
            }
            Ok(plans)
        }
    }
    deserializer.deserialize_map(Plans)
}

/// Unwraps a decoded list; the wrappers are `repr(transparent)`, so the
/// vector's memory is reused.
fn unwrap_all<W, T>(list: Vec<W>, unwrap: fn(W) -> T) -> Vec<T> {
    list.into_iter().map(unwrap).collect()
}

/// A plan status with its name, status, uid and phases decoded.
#[derive(Deserialize)]
#[serde(from = "PlanFields")]
#[repr(transparent)]
struct SlimPlan(PlanStatus);

#[derive(Deserialize)]
struct PlanFields {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    phases: Vec<SlimPhase>,
    #[serde(default)]
    uid: Option<String>,
}

impl From<PlanFields> for SlimPlan {
    fn from(read: PlanFields) -> Self {
        Self(PlanStatus {
            name: read.name,
            status: read.status,
            phases: unwrap_all(read.phases, |p: SlimPhase| p.0),
            uid: read.uid,
            ..PlanStatus::default()
        })
    }
}

/// A phase status with its name, status and steps decoded.
#[derive(Deserialize)]
#[serde(from = "PhaseFields")]
#[repr(transparent)]
struct SlimPhase(PhaseStatus);

#[derive(Deserialize)]
struct PhaseFields {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    steps: Vec<SlimStep>,
}

impl From<PhaseFields> for SlimPhase {
    fn from(read: PhaseFields) -> Self {
        Self(PhaseStatus {
            name: read.name,
            status: read.status,
            steps: unwrap_all(read.steps, |s: SlimStep| s.0),
            ..PhaseStatus::default()
        })
    }
}

/// A step status with its name and status decoded.
#[derive(Deserialize)]
#[serde(from = "StepFields")]
#[repr(transparent)]
struct SlimStep(StepStatus);

#[derive(Deserialize)]
struct StepFields {
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: Option<ExecutionStatus>,
}

impl From<StepFields> for SlimStep {
    fn from(read: StepFields) -> Self {
        Self(StepStatus {
            name: read.name,
            status: read.status,
            ..StepStatus::default()
        })
    }
}

#[cfg(test)]
#[path = "wire_status_tests.rs"]
pub(crate) mod tests;
