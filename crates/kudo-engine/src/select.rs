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
use kudo_api::{Instance, InstanceStatus, OperatorVersion, Time};

use crate::params;
use crate::view::{InstanceView, StatusView};

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
}

impl Trigger {
    /// Whether the controller started it on its own (suppressions hold these).
    pub fn is_automatic(&self) -> bool {
        matches!(
            self,
            Self::Parameters(_) | Self::Upgrade | Self::Recovery(_)
        )
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Create => f.write_str("create"),
            Self::Parameters(names) => write!(f, "parameter {}", names.join(",")),
            Self::Upgrade => f.write_str("upgrade"),
            Self::Manual => f.write_str("manual"),
            Self::Rollback => f.write_str("rollback"),
            Self::Cleanup => f.write_str("cleanup"),
            Self::Recovery(cause) => f.write_str(cause),
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

/// The OperatorVersion name spec asks for.
pub fn spec_ov_name(instance: &Instance) -> String {
    spec_ov_name_ref(instance).to_string()
}

/// Spec parameters (empty when unset).
pub fn spec_params(instance: &Instance) -> BTreeMap<String, String> {
    spec_params_ref(instance).clone()
}

/// [`spec_ov_name`], borrowed.
pub fn spec_ov_name_ref(instance: &Instance) -> &str {
    instance
        .spec
        .operator_version
        .name
        .as_deref()
        .unwrap_or_default()
}

/// [`spec_params`], borrowed.
pub fn spec_params_ref(instance: &Instance) -> &BTreeMap<String, String> {
    instance.spec.parameters.as_ref().unwrap_or(&NO_PARAMS)
}

static NO_PARAMS: BTreeMap<String, String> = BTreeMap::new();

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

/// What spec asks for that `status` has not consumed.
pub fn select(instance: &Instance, ov: &OperatorVersion, status: &InstanceStatus) -> Selection {
    select_view(
        &InstanceView::without_status(instance),
        ov,
        &StatusView::without_steps(status),
    )
}

/// [`select`] on views (the webhook's decode). Reads the plans' uids, no
/// phase or step (see [`StatusView::without_steps`]).
pub fn select_view(
    instance: &InstanceView<'_>,
    ov: &OperatorVersion,
    status: &StatusView<'_>,
) -> Selection {
    let spec = &ov.spec;
    let generation = instance.generation.unwrap_or(0);
    let identity = (instance.uid.as_deref(), instance.name.as_deref());
    let auto_uid = |plan: &str| derived_uid_for(identity, plan, &format!("g{generation}"));
    let start = |plan: String, trigger: Trigger, consumes: Consumes| {
        let uid = auto_uid(&plan);
        Selection::Start(PlanRequest {
            plan,
            uid,
            trigger,
            break_glass: false,
            consumes,
        })
    };

    if instance.deletion_timestamp.is_some() {
        if spec.plan(CLEANUP_PLAN).is_none() {
            return Selection::Nothing;
        }
        let uid = cleanup_uid_for(identity, instance.deletion_timestamp.as_ref());
        let ran = status
            .plan(CLEANUP_PLAN)
            .is_some_and(|p| p.uid.as_deref() == Some(uid.as_str()));
        if ran {
            return Selection::Nothing;
        }
        return Selection::Start(PlanRequest {
            plan: CLEANUP_PLAN.to_string(),
            uid,
            trigger: Trigger::Cleanup,
            break_glass: true,
            consumes: Consumes::Nothing,
        });
    }

    // Borrowed: the webhook asks this on every update that starts a plan.
    let ov_name = instance.ov_name();
    let wanted_params = instance.params();
    let applied_params = &status.applied_parameters;
    let is_rollback = status
        .last_successful
        .as_ref()
        .is_some_and(|ls| ls.operator_version == ov_name && ls.parameters == *wanted_params);

    let Some(applied_ov) = status.applied_operator_version.as_deref() else {
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

    if let Some(pe) = instance.spec.plan_execution.as_deref()
        && let Some(uid) = pe.uid.as_deref().filter(|u| !u.is_empty())
        && status.last_plan_execution_uid.as_deref() != Some(uid)
    {
        let plan = pe.plan_name.clone().unwrap_or_default();
        if plan == CLEANUP_PLAN {
            return Selection::Invalid(
                "spec.planExecution asks for cleanup, which runs only when the Instance is deleted"
                    .to_string(),
            );
        }
        if spec.plan(&plan).is_none() {
            return Selection::Invalid(format!(
                "spec.planExecution asks for plan {plan:?}, which OperatorVersion {ov_name} does not define"
            ));
        }
        return Selection::Start(PlanRequest {
            plan,
            uid: uid.to_string(),
            trigger: Trigger::Manual,
            break_glass: pe.break_glass.unwrap_or(false),
            consumes: Consumes::ExecutionUid,
        });
    }
    Selection::Nothing
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
        assert_eq!(Trigger::Rollback.to_string(), "rollback");
        assert!(Trigger::Upgrade.is_automatic() && !Trigger::Manual.is_automatic());
    }

    #[test]
    fn derived_uids_are_stable_and_differ_per_generation_and_deletion() {
        let mut i = Instance::new("zk", Default::default());
        i.metadata.uid = Some("u".into());
        assert_eq!(derived_uid(&i, "deploy", "g1"), "u-deploy-g1");
        let before = cleanup_uid(&i);
        i.metadata.deletion_timestamp = Some(crate::time(
            jiff::Timestamp::from_second(60).unwrap_or_default(),
        ));
        assert_ne!(cleanup_uid(&i), before);
        assert_eq!(cleanup_uid(&i), cleanup_uid(&i.clone()));
    }
}
