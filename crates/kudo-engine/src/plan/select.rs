//! Plan selection: which plan the spec asks for that status has not
//! consumed yet.
//!
//! Status records what was consumed: `appliedOperatorVersion`,
//! `appliedParameters` and `lastPlanExecutionUid`. Comparing spec with them
//! gives, first match wins:
//!
//! 1. deletion with a `cleanup` plan that has not run for this deletion → `cleanup`;
//! 2. nothing consumed yet (create) → `deploy`;
//! 3. `spec.operatorVersion` differs → first of `upgrade`, `update`, `deploy`;
//! 4. parameters differ → the trigger of the changed parameters (fallback
//!    `update`, then `deploy`);
//! 5. a new `spec.planExecution.uid` → `spec.planExecution.planName`.
//!
//! A change back to `status.lastSuccessful` (OperatorVersion + parameters)
//! is a rollback.

use std::collections::BTreeMap;
use std::fmt;

use kudo_api::names::{CLEANUP_PLAN, DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN};
use kudo_api::{AppliedConfig, Instance, InstanceSpec, InstanceStatus, OperatorVersion, Time};

use crate::model::subject::NO_PARAMS;
use crate::model::subject::{Identity, StatusFacts};
pub use crate::model::subject::{spec_ov_name, spec_params};
use crate::plan::params;

/// What started a plan (history and `activePlan.trigger`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// The Instance was created.
    Create,
    /// These parameters changed.
    Parameters(Vec<String>),
    /// The OperatorVersion changed.
    Upgrade,
    /// `spec.planExecution`.
    Manual,
    /// Spec went back to `status.lastSuccessful`.
    Rollback,
    /// The Instance is being deleted.
    Cleanup,
    /// Objects drifted; the text says which and how.
    Recovery(String),
    /// Nodes its pods run on are scheduled for maintenance; the text says
    /// which and when.
    Maintenance(String),
}

impl Trigger {
    /// Whether the controller started it on its own (suppressions hold these).
    pub fn is_automatic(&self) -> bool {
        matches!(
            self,
            Self::Parameters(_) | Self::Upgrade | Self::Recovery(_) | Self::Maintenance(_)
        )
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Create => f.write_str("create"),
            // Stored in the status: a change of thousands of names names
            // the first few.
            Self::Parameters(names) => write!(
                f,
                "parameter {}",
                kudo_api::message::listed(names).separated_by(",")
            ),
            Self::Upgrade => f.write_str("upgrade"),
            Self::Manual => f.write_str("manual"),
            Self::Rollback => f.write_str("rollback"),
            Self::Cleanup => f.write_str("cleanup"),
            Self::Recovery(cause) | Self::Maintenance(cause) => f.write_str(cause),
        }
    }
}

/// What of spec a started plan consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumes {
    /// OperatorVersion, parameters and planExecution uid (create).
    Everything,
    /// OperatorVersion and parameters.
    Config,
    /// The planExecution uid only.
    ExecutionUid,
    /// Nothing (cleanup).
    Nothing,
}

/// A plan the spec asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    /// Plan name.
    pub plan: String,
    /// Execution uid.
    pub uid: String,
    /// Why.
    pub trigger: Trigger,
    /// Ignore maintenance windows.
    pub break_glass: bool,
    /// What to record as consumed when it starts.
    pub consumes: Consumes,
    /// Parameter values for this execution only (`spec.planExecution.parameters`).
    pub parameters: BTreeMap<String, String>,
}

/// Result of plan selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Nothing new asked for.
    Nothing,
    /// Changed parameters that no plan handles: record them as applied.
    ConsumeOnly,
    /// Start (or queue) this plan.
    Start(PlanRequest),
    /// Spec asks for something that cannot start; the message says why.
    Invalid(String),
}

/// Deterministic uid of an execution the controller starts by itself.
pub fn derived_uid(instance: &Instance, plan: &str, salt: &str) -> String {
    let meta = &instance.metadata;
    derived_uid_for((meta.uid.as_deref(), meta.name.as_deref()), plan, salt)
}

/// [`derived_uid`] from the Instance's `(uid, name)`.
fn derived_uid_for((uid, name): (Option<&str>, Option<&str>), plan: &str, salt: &str) -> String {
    let base = uid.or(name).unwrap_or("instance");
    format!("{base}-{plan}-{salt}")
}

/// Uid of the cleanup execution for the current deletion.
pub fn cleanup_uid(instance: &Instance) -> String {
    let meta = &instance.metadata;
    cleanup_uid_for(
        (meta.uid.as_deref(), meta.name.as_deref()),
        meta.deletion_timestamp.as_ref(),
    )
}

fn cleanup_uid_for(identity: (Option<&str>, Option<&str>), deletion: Option<&Time>) -> String {
    let salt = deletion.map_or(0, |t| t.0.as_second());
    derived_uid_for(identity, CLEANUP_PLAN, &format!("d{salt}"))
}

/// What status records as consumed: all plan selection reads of it. Made
/// from the controller's [`InstanceStatus`] or the webhook's
/// [`StatusFacts`], borrowing either.
#[derive(Clone, Copy, Debug, Default)]
pub struct Consumed<'a> {
    /// `appliedOperatorVersion`.
    pub operator_version: Option<&'a str>,
    /// `appliedParameters` (empty when absent).
    pub parameters: Option<&'a BTreeMap<String, String>>,
    /// `lastPlanExecutionUid`.
    pub plan_execution_uid: Option<&'a str>,
    /// `lastSuccessful`.
    pub last_successful: Option<&'a AppliedConfig>,
    /// The uid of `planStatus.cleanup` (did cleanup run for this deletion).
    pub cleanup_uid: Option<&'a str>,
}

impl<'a> From<&'a InstanceStatus> for Consumed<'a> {
    fn from(status: &'a InstanceStatus) -> Self {
        Self {
            operator_version: status.applied_operator_version.as_deref(),
            parameters: status.applied_parameters.as_ref(),
            plan_execution_uid: status.last_plan_execution_uid.as_deref(),
            last_successful: status.last_successful.as_ref(),
            cleanup_uid: status
                .plan_status
                .get(CLEANUP_PLAN)
                .and_then(|p| p.uid.as_deref()),
        }
    }
}

impl<'a> From<&'a StatusFacts> for Consumed<'a> {
    fn from(status: &'a StatusFacts) -> Self {
        Self {
            operator_version: status.applied_operator_version.as_deref(),
            parameters: status.applied_parameters.as_ref(),
            plan_execution_uid: status.last_plan_execution_uid.as_deref(),
            last_successful: status.last_successful.as_ref(),
            cleanup_uid: status
                .plan_status
                .get(CLEANUP_PLAN)
                .and_then(|p| p.uid.as_deref()),
        }
    }
}

/// What `wanted` (the Instance's spec) asks for that status has not
/// consumed; `identity` is the Instance's metadata (derived uids, deletion).
pub fn select(
    identity: &Identity,
    wanted: &InstanceSpec,
    ov: &OperatorVersion,
    consumed: Consumed<'_>,
) -> Selection {
    let spec = &ov.spec;
    let generation = identity.generation.unwrap_or(0);
    let deletion = identity.deletion_timestamp.as_ref();
    let identity = (identity.uid.as_deref(), identity.name.as_deref());
    let auto_uid = |plan: &str| derived_uid_for(identity, plan, &format!("g{generation}"));
    let start = |plan: String, trigger: Trigger, consumes: Consumes| {
        let uid = auto_uid(&plan);
        Selection::Start(PlanRequest {
            plan,
            uid,
            trigger,
            break_glass: false,
            consumes,
            parameters: BTreeMap::new(),
        })
    };

    if deletion.is_some() {
        if spec.plan(CLEANUP_PLAN).is_none() {
            return Selection::Nothing;
        }
        let uid = cleanup_uid_for(identity, deletion);
        let ran = consumed.cleanup_uid == Some(uid.as_str());
        if ran {
            return Selection::Nothing;
        }
        return Selection::Start(PlanRequest {
            plan: CLEANUP_PLAN.to_string(),
            uid,
            trigger: Trigger::Cleanup,
            break_glass: true,
            consumes: Consumes::Nothing,
            parameters: BTreeMap::new(),
        });
    }

    let ov_name = spec_ov_name(wanted);
    let wanted_params = spec_params(wanted);
    let applied_params = consumed.parameters.unwrap_or(&NO_PARAMS);
    let is_rollback = consumed
        .last_successful
        .as_ref()
        .is_some_and(|ls| ls.operator_version == ov_name && ls.parameters == *wanted_params);

    let Some(applied_ov) = consumed.operator_version else {
        if spec.plan(DEPLOY_PLAN).is_none() {
            return Selection::Invalid(format!(
                "OperatorVersion {ov_name} has no deploy plan, so the Instance cannot be deployed; \
                 fix the package"
            ));
        }
        return start(
            DEPLOY_PLAN.to_string(),
            Trigger::Create,
            Consumes::Everything,
        );
    };

    if applied_ov != ov_name {
        return match params::first_existing(spec, &[UPGRADE_PLAN, UPDATE_PLAN, DEPLOY_PLAN]) {
            Ok(plan) => {
                let trigger = if is_rollback {
                    Trigger::Rollback
                } else {
                    Trigger::Upgrade
                };
                start(plan, trigger, Consumes::Config)
            }
            Err(e) => Selection::Invalid(format!("cannot upgrade to {ov_name}: {e}")),
        };
    }

    let changed = params::changed_names(applied_params, wanted_params);
    if !changed.is_empty() {
        return match params::triggered_plan(spec, &changed) {
            Ok(Some(plan)) => {
                let trigger = if is_rollback {
                    Trigger::Rollback
                } else {
                    Trigger::Parameters(changed.iter().map(|n| n.to_string()).collect())
                };
                start(plan, trigger, Consumes::Config)
            }
            Ok(None) => Selection::ConsumeOnly,
            Err(e) => Selection::Invalid(format!("the parameter change cannot start: {e}")),
        };
    }

    manual(wanted, ov, consumed)
}

/// The run `spec.planExecution` asks for that status has not consumed,
/// whatever else spec asks for.
fn manual(wanted: &InstanceSpec, ov: &OperatorVersion, consumed: Consumed<'_>) -> Selection {
    let Some(pe) = wanted.plan_execution.as_ref() else {
        return Selection::Nothing;
    };
    let Some(uid) = pe.uid.as_deref().filter(|u| !u.is_empty()) else {
        return Selection::Nothing;
    };
    if consumed.plan_execution_uid == Some(uid) {
        return Selection::Nothing;
    }
    let plan = pe.plan_name.clone().unwrap_or_default();
    if plan == CLEANUP_PLAN {
        return Selection::Invalid(
            "spec.planExecution asks for cleanup, which runs only when the Instance is deleted"
                .to_string(),
        );
    }
    if ov.spec.plan(&plan).is_none() {
        return Selection::Invalid(format!(
            "spec.planExecution asks for plan {plan:?}, which OperatorVersion {} does not define",
            spec_ov_name(wanted)
        ));
    }
    Selection::Start(PlanRequest {
        plan,
        uid: uid.to_string(),
        trigger: Trigger::Manual,
        break_glass: pe.break_glass.unwrap_or(false),
        consumes: Consumes::ExecutionUid,
        parameters: pe.parameters.clone().unwrap_or_default(),
    })
}

/// A manual run asked for together with `held`, an upgrade or parameter
/// change that may not start now: a person asked for it, so it may go
/// ahead when nothing holds it. Running the same plan as `held` it takes
/// the change with it (the plan renders spec as it is).
pub fn manual_behind(
    wanted: &InstanceSpec,
    ov: &OperatorVersion,
    consumed: Consumed<'_>,
    held: &PlanRequest,
) -> Option<PlanRequest> {
    if !held.trigger.is_automatic() && held.trigger != Trigger::Rollback {
        return None;
    }
    let Selection::Start(mut req) = manual(wanted, ov, consumed) else {
        return None;
    };
    if req.plan == held.plan {
        req.consumes = Consumes::Everything;
    }
    Some(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_strings_match_the_history_format() {
        assert_eq!(Trigger::Create.to_string(), "create");
        assert_eq!(
            Trigger::Parameters(vec!["A".into(), "B".into()]).to_string(),
            "parameter A,B"
        );
        let many: Vec<String> = (0..30).map(|i| format!("P{i}")).collect();
        let shown = Trigger::Parameters(many).to_string();
        assert!(shown.ends_with(",P19 and 10 more"), "{shown}");
        assert_eq!(Trigger::Rollback.to_string(), "rollback");
        assert!(Trigger::Upgrade.is_automatic() && !Trigger::Manual.is_automatic());
    }

    #[test]
    fn derived_uids_are_stable_and_differ_per_generation_and_deletion() {
        let mut i = Instance::new("zk", Default::default());
        i.metadata.uid = Some("u".into());
        assert_eq!(derived_uid(&i, "deploy", "g1"), "u-deploy-g1");
        let before = cleanup_uid(&i);
        i.metadata.deletion_timestamp = Some(crate::model::time(
            jiff::Timestamp::from_second(60).unwrap_or_default(),
        ));
        assert_ne!(cleanup_uid(&i), before);
        assert_eq!(cleanup_uid(&i), cleanup_uid(&i.clone()));
    }
}
