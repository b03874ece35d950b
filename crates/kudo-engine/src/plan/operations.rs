//! Plan operations (DC/OS verbs as spec requests with ids): each entry of
//! `spec.planOperations` is applied at most once, however long spec keeps
//! it. `status.operationsMark` names the newest entry up to which all were
//! applied, and `status.operations` records the last ones with their
//! results; an entry is skipped when the mark has passed it or a record
//! names it. Spec only grows at its end and loses entries at its front
//! (the webhook refuses anything else), so the mark stays sound across
//! manager restarts, re-applied specs and records that have gone.
//!
//! | action           | target               | effect                                                        |
//! |------------------|----------------------|---------------------------------------------------------------|
//! | pause / resume   | plan or phase        | paused flag; started steps finish, no new step starts         |
//! | continue         | canary phase         | one more canary approval (two release the whole phase)        |
//! | forceComplete    | step or phase        | COMPLETE with `forced: true`, without running                 |
//! | restart          | step, phase or plan  | back to PENDING, backoff cleared, runs again                   |
//! | cancel           | running plan         | FATAL_ERROR "cancelled by WHO: WHY"; no new step starts       |
//! | clearSuppression | instance             | removes the automatic suppression                             |
//! | restartPod       | pod                  | a phase of the recovery plan deletes it once, waits for it back |
//! | replacePod       | pod                  | as restartPod, deleting its StatefulSet volume claims too      |
//!
//! A target that does not exist is recorded as a no-op with a message (the
//! webhook refuses such operations first).

use kudo_api::names::CLEANUP_PLAN;
use kudo_api::{
    ActivePlan, ExecutionStatus as S, Instance, InstanceStatus, OperationRecord, OperatorVersion,
    PlanAction, PlanOperation, PlanRun, Strategy,
};

use crate::plan::tree::{reset_phase, reset_step};

/// Operations kept in `status.operations`.
pub const KEPT_OPERATIONS: usize = 50;

/// What applying operations changed that the rest of `decide` must know.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Plans cancelled in this pass (no automatic suppression for them).
    pub cancelled: Vec<String>,
}

/// Applies the operations of `instance.spec` not yet recorded in `status`
/// for which `wanted` holds; whether any was applied (each one applied is
/// recorded, so the status changed).
pub fn apply_new(
    instance: &Instance,
    ov: &OperatorVersion,
    status: &mut InstanceStatus,
    now: jiff::Timestamp,
    wanted: impl Fn(&PlanOperation) -> bool,
    applied: &mut Applied,
) -> bool {
    apply_each(instance, status, now, wanted, |op, st| {
        apply_one(op, ov, st, now, applied)
    })
}

/// The bookkeeping of every kind of operation: each entry of spec for
/// which `wanted` holds, that is past `status.operationsMark` and not
/// recorded yet, is handed to `apply` once and recorded with its result.
/// The mark then moves over the entries recorded in a row after it, and
/// the oldest records beyond [`KEPT_OPERATIONS`] go (never one of an entry
/// the mark has not passed). Whether the status changed.
pub(crate) fn apply_each(
    instance: &Instance,
    status: &mut InstanceStatus,
    now: jiff::Timestamp,
    wanted: impl Fn(&PlanOperation) -> bool,
    mut apply: impl FnMut(&PlanOperation, &mut InstanceStatus) -> String,
) -> bool {
    let ops = &instance.spec.plan_operations;
    let mut any = false;
    let pending = ops.get(covered(ops, status)..).unwrap_or_default();
    for op in pending.iter().filter(|o| wanted(o)) {
        if recorded(status, &op.id) {
            continue;
        }
        let result = apply(op, status);
        status.operations.push(OperationRecord {
            id: op.id.clone(),
            action: op.action,
            applied_at: crate::model::time(now),
            result,
        });
        any = true;
    }
    any |= advance_mark(ops, status);
    any | trim(ops, status)
}

/// How many entries of spec, from the front, the mark covers: all up to
/// the mark's entry; none when the mark is not in spec (writers only drop
/// entries from the front, so every entry left is newer than it).
fn covered(ops: &[PlanOperation], status: &InstanceStatus) -> usize {
    status
        .operations_mark
        .as_deref()
        .and_then(|mark| ops.iter().position(|o| o.id == mark))
        .map_or(0, |i| i + 1)
}

fn recorded(status: &InstanceStatus, id: &str) -> bool {
    status.operations.iter().any(|r| r.id == id)
}

/// Moves the mark over the entries after it that are recorded, in a row
/// (one pass applies clears before plan operations, so a later entry can be
/// recorded before an earlier one); whether it moved.
fn advance_mark(ops: &[PlanOperation], status: &mut InstanceStatus) -> bool {
    let after = ops.get(covered(ops, status)..).unwrap_or_default();
    let newest = after
        .iter()
        .take_while(|o| recorded(status, &o.id))
        .last()
        .map(|o| o.id.clone());
    match newest {
        Some(id) => {
            status.operations_mark = Some(id);
            true
        }
        None => false,
    }
}

/// Drops the oldest records beyond [`KEPT_OPERATIONS`], keeping those of
/// entries the mark has not passed (they alone say the entry was applied);
/// whether any went.
fn trim(ops: &[PlanOperation], status: &mut InstanceStatus) -> bool {
    let mut excess = status.operations.len().saturating_sub(KEPT_OPERATIONS);
    if excess == 0 {
        return false;
    }
    let uncovered: Vec<&str> = ops
        .get(covered(ops, status)..)
        .unwrap_or_default()
        .iter()
        .map(|o| o.id.as_str())
        .collect();
    let before = status.operations.len();
    status.operations.retain(|r| {
        let drop = excess > 0 && !uncovered.contains(&r.id.as_str());
        excess -= usize::from(drop);
        !drop
    });
    status.operations.len() != before
}

/// A status written before the mark existed: the newest entry of spec with
/// a record becomes the mark (each pass applied every entry of spec, so
/// the ones before it were applied too, whatever records have gone since).
/// Called once before a pass applies anything; whether the status changed.
pub(crate) fn adopt_mark(instance: &Instance, status: &mut InstanceStatus) -> bool {
    if status.operations_mark.is_some() {
        return false;
    }
    let newest = instance
        .spec
        .plan_operations
        .iter()
        .rev()
        .find(|o| recorded(status, &o.id))
        .map(|o| o.id.clone());
    let adopted = newest.is_some();
    status.operations_mark = newest;
    adopted
}

fn who(op: &PlanOperation) -> String {
    format!(
        "{}: {}",
        op.requested_by.as_deref().unwrap_or("unknown"),
        op.reason.as_deref().unwrap_or("no reason given")
    )
}

/// Sets or clears a pause flag; the result says what it holds. A pause
/// outlasts the run: one given while the plan is not running holds its
/// next run, which starts and waits until resumed.
fn pause_or_resume(
    action: PlanAction,
    flag: &mut Option<bool>,
    what: &str,
    running: bool,
) -> String {
    let was = *flag == Some(true);
    if action == PlanAction::Pause {
        *flag = Some(true);
        return match (was, running) {
            (true, _) => format!("no-op: {what} is already paused"),
            (false, true) => format!("{what} paused: steps running now finish, no new step starts"),
            (false, false) => {
                format!("{what} paused: it is not running; its next run starts paused")
            }
        };
    }
    *flag = None;
    if was {
        format!("{what} resumed")
    } else {
        format!("no-op: {what} is not paused")
    }
}

fn apply_one(
    op: &PlanOperation,
    ov: &OperatorVersion,
    status: &mut InstanceStatus,
    now: jiff::Timestamp,
    applied: &mut Applied,
) -> String {
    if op.action == PlanAction::ClearSuppression {
        return match status.auto_suppression.take() {
            Some(_) => "automatic suppression cleared".to_string(),
            None => "no automatic suppression to clear".to_string(),
        };
    }
    let active = status.active_plan.as_ref().map(|a| a.name.clone());
    let Some(plan_name) = op.plan.clone().or(active.clone()) else {
        return "no-op: no plan has run yet; name the plan".to_string();
    };
    let Some(plan_def) = crate::plan::definition::plan_of(ov, status, &plan_name) else {
        return format!("no-op: plan {plan_name:?} does not exist");
    };
    let is_active = active.as_deref() == Some(plan_name.as_str());
    let active_running = status
        .active_plan
        .as_ref()
        .and_then(|a| status.plan_status.get(&a.name))
        .is_some_and(|p| p.status().is_running());
    let Some(ps) = status.plan_status.get_mut(&plan_name) else {
        return format!("no-op: plan {plan_name:?} has no status yet");
    };
    let phase_index = match op.phase.as_deref() {
        Some(phase) => match ps.phases.iter().position(|p| p.name == phase) {
            Some(i) => Some(i),
            None => return format!("no-op: plan {plan_name:?} has no phase {phase:?}"),
        },
        None => None,
    };
    let step_index = match (op.step.as_deref(), phase_index) {
        (Some(step), Some(pi)) => match ps.phases[pi].steps.iter().position(|s| s.name == step) {
            Some(i) => Some(i),
            None => {
                return format!(
                    "no-op: phase {:?} of plan {plan_name:?} has no step {step:?}",
                    ps.phases[pi].name
                );
            }
        },
        (Some(step), None) => {
            return format!("no-op: step {step:?} given without its phase");
        }
        (None, _) => None,
    };
    let mut revive = false;
    let running = is_active && ps.status().is_running();
    let result = match (op.action, phase_index, step_index) {
        (PlanAction::Pause | PlanAction::Resume, Some(pi), _) => {
            let phase = &mut ps.phases[pi];
            let what = format!("phase {:?} of plan {plan_name:?}", phase.name);
            pause_or_resume(op.action, &mut phase.paused, &what, running)
        }
        (PlanAction::Pause | PlanAction::Resume, None, _) => {
            let what = format!("plan {plan_name:?}");
            pause_or_resume(op.action, &mut ps.paused, &what, running)
        }
        (PlanAction::Continue, None, _) => {
            "no-op: continue needs a phase (canary approvals are per phase)".to_string()
        }
        (PlanAction::Continue, Some(pi), _) => {
            let canary = plan_def
                .phases
                .get(pi)
                .and_then(|p| Strategy::parse(p.strategy.as_deref()).ok())
                .is_some_and(Strategy::is_canary);
            let phase = &mut ps.phases[pi];
            let given = phase.canary_approvals.unwrap_or(0);
            if !canary {
                format!("no-op: phase {:?} is not a canary phase", phase.name)
            } else if given >= 2 {
                format!(
                    "no-op: phase {:?} already has both canary approvals",
                    phase.name
                )
            } else {
                phase.canary_approvals = Some(given + 1);
                format!(
                    "canary approval {} of 2 for phase {:?}",
                    given + 1,
                    phase.name
                )
            }
        }
        (PlanAction::ForceComplete, Some(pi), step) => {
            let phase = &mut ps.phases[pi];
            let mut forced = Vec::new();
            for (i, s) in phase.steps.iter_mut().enumerate() {
                if step.is_some_and(|want| want != i) || s.status() == S::Complete {
                    continue;
                }
                s.status = Some(S::Complete);
                s.forced = Some(true);
                s.message = format!("forced to COMPLETE by {}", who(op));
                s.next_retry_at = None;
                s.finished_at = Some(crate::model::time(now));
                forced.push(s.name.clone());
            }
            revive = true;
            if forced.is_empty() {
                "no-op: already COMPLETE".to_string()
            } else {
                format!(
                    "forced to COMPLETE in phase {:?}: {}",
                    phase.name,
                    forced.join(", ")
                )
            }
        }
        (PlanAction::ForceComplete, None, _) => {
            "no-op: force-complete needs a phase (and optionally a step)".to_string()
        }
        (PlanAction::Restart, Some(pi), Some(si)) => {
            reset_step(&mut ps.phases[pi].steps[si]);
            revive = true;
            format!(
                "step {:?} of phase {:?} restarted",
                ps.phases[pi].steps[si].name, ps.phases[pi].name
            )
        }
        (PlanAction::Restart, Some(pi), None) => {
            reset_phase(&mut ps.phases[pi]);
            revive = true;
            format!("phase {:?} restarted", ps.phases[pi].name)
        }
        (PlanAction::Restart, None, _) => {
            if !is_active && active_running {
                return format!(
                    "no-op: plan {:?} is running; restart {plan_name:?} after it ends",
                    active.unwrap_or_default()
                );
            }
            if ps.uid.is_none() {
                return format!("no-op: plan {plan_name:?} never ran; trigger it instead");
            }
            for phase in &mut ps.phases {
                reset_phase(phase);
            }
            ps.status = Some(S::Pending);
            ps.started_at = Some(crate::model::time(now));
            ps.finished_at = None;
            if !is_active && plan_name != CLEANUP_PLAN {
                let uid = ps.uid.clone().unwrap_or_default();
                status.active_plan = Some(ActivePlan {
                    name: plan_name.clone(),
                    uid: Some(uid.clone()),
                    status: S::Pending,
                    trigger: Some("manual".to_string()),
                    break_glass: None,
                });
                status.history.push(PlanRun {
                    plan: plan_name.clone(),
                    uid,
                    trigger: "manual".to_string(),
                    started: crate::model::time(now),
                    finished: None,
                    result: None,
                    message: format!("restarted by {}", who(op)),
                    // The same execution again, with its own values.
                    parameters: crate::plan::execution::for_history(&ps.parameters),
                    reason: None,
                });
            }
            return format!("plan {plan_name:?} restarted");
        }
        (PlanAction::Cancel, _, _) => {
            if !ps.status().is_running() {
                return format!("no-op: plan {plan_name:?} is {}, not running", ps.status());
            }
            ps.status = Some(S::FatalError);
            ps.message = format!("cancelled by {}", who(op));
            applied.cancelled.push(plan_name.clone());
            return format!("plan {plan_name:?} cancelled");
        }
        // Applied by `recovery_pods` (they start the recovery plan).
        (PlanAction::ClearSuppression | PlanAction::RestartPod | PlanAction::ReplacePod, _, _) => {
            String::new()
        }
    };
    if revive && is_active && ps.status().is_terminal() {
        // An explicit force-complete or restart is a way out of a stopped
        // plan: the walk re-aggregates it.
        ps.status = Some(S::InProgress);
        ps.finished_at = None;
    }
    result
}
