//! The definition of the plan that runs: the OperatorVersion's, or for
//! the recovery plan (which is in no package) one built from its status.

use std::borrow::Cow;

use kudo_api::names::RECOVERY_PLAN;
use kudo_api::{InstanceStatus, OperatorVersion, Plan, PlanStatus};

/// The definition of plan `name`: the OperatorVersion's, or the recovery
/// plan built from its status.
pub(crate) fn plan_of<'a>(
    ov: &'a OperatorVersion,
    status: &InstanceStatus,
    name: &str,
) -> Option<Cow<'a, Plan>> {
    if let Some(plan) = ov.spec.plan(name) {
        return Some(Cow::Borrowed(plan));
    }
    (name == RECOVERY_PLAN)
        .then(|| status.plan_status.get(RECOVERY_PLAN))
        .flatten()
        .map(|ps| Cow::Owned(plan_definition(ps)))
}

/// The plan the walk runs for a recovery status: its phases in parallel,
/// each one step of one task.
pub fn plan_definition(status: &PlanStatus) -> Plan {
    Plan {
        strategy: Some("parallel".to_string()),
        phases: status
            .phases
            .iter()
            .map(|ph| kudo_api::Phase {
                name: ph.name.clone(),
                strategy: Some("serial".to_string()),
                steps: ph
                    .steps
                    .iter()
                    .map(|s| kudo_api::Step {
                        name: s.name.clone(),
                        tasks: s.tasks.iter().map(|t| t.name.clone()).collect(),
                    })
                    .collect(),
            })
            .collect(),
        downtime: None,
    }
}
