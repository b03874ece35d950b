//! Checks of the spec parts that do not start plans by themselves: plan
//! operations, maintenance windows and suppressions.

use std::collections::BTreeMap;

use kudo_api::{OperatorVersion, PlanAction, PlanOperation, Strategy};

use super::InstanceName;
use super::{StatusFacts, Subject};
use crate::plan::windows;

pub(super) fn check_windows_and_suppressions(new: &Subject) -> Result<(), String> {
    let name = InstanceName::of(new);
    windows::validate(&new.spec.maintenance_windows)
        .map_err(|e| format!("Instance {name}: spec.maintenanceWindows: {e}"))?;
    for (i, s) in new.spec.suppressions.iter().enumerate() {
        if s.reason.trim().is_empty() {
            return Err(format!(
                "Instance {name}: spec.suppressions[{i}] needs a reason, shown to everyone who wonders why nothing happens"
            ));
        }
        if let (Some(f), Some(u)) = (&s.from, &s.until)
            && u.0 <= f.0
        {
            return Err(format!(
                "Instance {name}: spec.suppressions[{i}] ends ({}) before it starts ({})",
                u.0, f.0
            ));
        }
    }
    Ok(())
}

pub(super) fn check_operations(
    old: &Subject,
    new: &Subject,
    ov: &OperatorVersion,
    status: &StatusFacts,
) -> Result<(), String> {
    let name = InstanceName::of(new);
    let old_ops: BTreeMap<&str, &PlanOperation> = old
        .spec
        .plan_operations
        .iter()
        .map(|o| (o.id.as_str(), o))
        .collect();
    let mut seen = BTreeMap::new();
    for op in new.spec.plan_operations.iter() {
        if op.id.trim().is_empty() {
            return Err(format!("Instance {name}: a plan operation has an empty id"));
        }
        if seen.insert(op.id.as_str(), ()).is_some() {
            return Err(format!(
                "Instance {name}: plan operation id {:?} is used twice; every operation needs its own id",
                op.id
            ));
        }
        match old_ops.get(op.id.as_str()) {
            Some(prev) if *prev == op => continue,
            Some(_) => {
                return Err(format!(
                    "Instance {name}: plan operation {:?} was changed; operation ids are single-use, add a new one instead",
                    op.id
                ));
            }
            None if status.operations_mark.as_deref() == Some(op.id.as_str()) => {
                return Err(format!(
                    "Instance {name}: plan operation id {:?} was used before; every operation needs its own id",
                    op.id
                ));
            }
            None => {}
        }
        let namespace = new
            .metadata
            .namespace
            .as_deref()
            .or(old.metadata.namespace.as_deref());
        check_operation(op, ov, namespace, status).map_err(|e| {
            format!(
                "Instance {name}: plan operation {:?} ({}): {e}",
                op.id, op.action
            )
        })?;
    }
    check_order(&old.spec.plan_operations, &new.spec.plan_operations)
        .map_err(|e| format!("Instance {name}: {e}"))
}

/// Operations are only added at the end and dropped from the front: the
/// manager's mark of what it carried out relies on that order (ids are
/// unique on both sides, checked before).
fn check_order(old: &[PlanOperation], new: &[PlanOperation]) -> Result<(), String> {
    let new_ids: Vec<&str> = new.iter().map(|o| o.id.as_str()).collect();
    let new_set: std::collections::HashSet<&str> = new_ids.iter().copied().collect();
    let Some(first_kept) = old.iter().position(|o| new_set.contains(o.id.as_str())) else {
        return Ok(());
    };
    for (i, kept) in old.iter().skip(first_kept).enumerate() {
        if new_ids.get(i) != Some(&kept.id.as_str()) {
            return Err(format!(
                "plan operation {:?} must keep its place: spec.planOperations only grows at its \
                 end and loses only its oldest entries, so that each operation is carried out once",
                kept.id
            ));
        }
    }
    Ok(())
}

/// A pod operation names its pod (and that pod's uid, so it acts once), no
/// plan, phase or step, and waits only for a running plan that works on
/// the pod's workload. Whether the pod belongs to the Instance is checked
/// where pods can be read.
fn check_pod_operation(
    op: &PlanOperation,
    ov: &OperatorVersion,
    namespace: Option<&str>,
    status: &StatusFacts,
) -> Result<(), String> {
    let Some(pod) = op.pod.as_deref().filter(|p| !p.is_empty()) else {
        return Err("name the pod (spec.planOperations[].pod)".to_string());
    };
    if op.pod_uid.as_deref().is_none_or(str::is_empty) {
        return Err(format!(
            "give the uid of pod {pod:?} (podUid), so that only that pod is deleted"
        ));
    }
    if op.plan.is_some() || op.phase.is_some() || op.step.is_some() {
        return Err(format!(
            "{} acts on a pod: give no plan, phase or step",
            op.action
        ));
    }
    if let Some(active) = status.active_plan.as_ref().map(|a| a.name.as_str())
        && active != kudo_api::names::RECOVERY_PLAN
        && status
            .plan_status
            .get(active)
            .is_some_and(|p| p.status().is_running())
        && let Some(claim) =
            crate::plan::assets::Dirtied::of_facts(ov, active, status).claim_pod(namespace, pod)
    {
        return Err(format!(
            "plan {active:?} is working on the workload of pod {pod:?} ({claim}); {} the pod \
             after the plan ends",
            crate::automatic::recovery_pods::step_name(op.action)
        ));
    }
    Ok(())
}

/// The recovery plan as its status shows it (it is in no OperatorVersion).
fn recovery_definition(status: &StatusFacts) -> kudo_api::Plan {
    let phases = status
        .plan_status
        .get(kudo_api::names::RECOVERY_PLAN)
        .map(|ps| ps.phases.as_slice())
        .unwrap_or_default();
    kudo_api::Plan {
        strategy: Some("parallel".to_string()),
        phases: phases
            .iter()
            .map(|ph| kudo_api::Phase {
                name: ph.name.clone(),
                strategy: Some("serial".to_string()),
                steps: ph
                    .steps
                    .iter()
                    .map(|s| kudo_api::Step {
                        name: s.name.clone(),
                        tasks: Vec::new(),
                    })
                    .collect(),
            })
            .collect(),
        downtime: None,
    }
}

fn check_operation(
    op: &PlanOperation,
    ov: &OperatorVersion,
    namespace: Option<&str>,
    status: &StatusFacts,
) -> Result<(), String> {
    if op.action == PlanAction::ClearSuppression {
        return Ok(());
    }
    if op.action.is_pod() {
        return check_pod_operation(op, ov, namespace, status);
    }
    let plans: Vec<&str> = ov.spec.plans.keys().map(String::as_str).collect();
    let Some(plan_name) = op
        .plan
        .clone()
        .or_else(|| status.active_plan.as_ref().map(|a| a.name.clone()))
    else {
        return Err("no plan named and no plan has run yet; name the plan".to_string());
    };
    let recovery;
    let plan = match ov.spec.plan(&plan_name) {
        Some(plan) => plan,
        None if plan_name == kudo_api::names::RECOVERY_PLAN
            && status.plan_status.contains_key(&plan_name) =>
        {
            recovery = recovery_definition(status);
            &recovery
        }
        None => {
            return Err(format!(
                "plan {plan_name:?} does not exist; the OperatorVersion has {}",
                plans.join(", ")
            ));
        }
    };
    let phase = match op.phase.as_deref() {
        Some(p) => Some(plan.phases.iter().find(|ph| ph.name == p).ok_or_else(|| {
            let names: Vec<&str> = plan.phases.iter().map(|ph| ph.name.as_str()).collect();
            format!(
                "plan {plan_name:?} has no phase {p:?}; its phases are {}",
                names.join(", ")
            )
        })?),
        None => None,
    };
    if let Some(step) = op.step.as_deref() {
        let Some(phase) = phase else {
            return Err(format!("step {step:?} needs its phase"));
        };
        if !phase.steps.iter().any(|s| s.name == step) {
            let names: Vec<&str> = phase.steps.iter().map(|s| s.name.as_str()).collect();
            return Err(format!(
                "phase {:?} of plan {plan_name:?} has no step {step:?}; its steps are {}",
                phase.name,
                names.join(", ")
            ));
        }
    }
    match op.action {
        PlanAction::Continue => {
            let Some(phase) = phase else {
                return Err(
                    "continue needs a phase: canary approvals are given per phase".to_string(),
                );
            };
            let strategy = Strategy::parse(phase.strategy.as_deref()).map_err(|e| e.to_string())?;
            if !strategy.is_canary() {
                return Err(format!(
                    "phase {:?} of plan {plan_name:?} is {strategy}, not a canary phase; nothing to continue",
                    phase.name
                ));
            }
        }
        PlanAction::ForceComplete if phase.is_none() => {
            return Err("force-complete needs a phase (and optionally a step)".to_string());
        }
        _ => {}
    }
    Ok(())
}
