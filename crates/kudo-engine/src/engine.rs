//! `decide_in_place`: one pure step of the reconcile loop, updating the
//! status where it is; `decide` is the same on a copy.

use std::time::Duration;

use kudo_api::names::{CLEANUP_FINALIZER, CLEANUP_PLAN, DEPLOY_PLAN, RECOVERY_PLAN};
use kudo_api::{Blocker, ExecutionStatus as S, Instance, InstanceStatus, OperatorVersion};

use crate::decision::{Action, Decision, Effects, EventType, Input};
use crate::facts::{cluster_scoped_objects, event, other, release, running_plan};
use crate::holds::{start_hold, step_hold, wake};
use crate::lifecycle::{AutoPlan, Before, finish_active, start};
use crate::select::{self, Selection, Trigger};
use crate::tree::{sync_plan, sync_plan_in_place};
use crate::walk::{Walk, WalkOutput};
use crate::{maintenance, operations, ready, recovery, recovery_pods, suppression, windows};

/// See [`crate::decide`].
pub fn decide(input: Input<'_>) -> Decision {
    let mut status = input.instance.status.clone().unwrap_or_default();
    let effects = decide_in_place(input, &mut status);
    Decision {
        status,
        actions: effects.actions,
        requeue_after: effects.requeue_after,
    }
}

/// See [`crate::decide_in_place`].
pub fn decide_in_place(input: Input<'_>, st: &mut InstanceStatus) -> Effects {
    let inst = input.instance;
    let now = input.now;
    let before = Before::of(st);
    let mut out = WalkOutput::default();
    let mut changed = false;
    let deleting = inst.metadata.deletion_timestamp.is_some();
    let has_finalizer = inst
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == CLEANUP_FINALIZER);

    let namespace = inst.metadata.namespace.as_deref().unwrap_or("default");
    // Another namespace's OperatorVersion, not shared with this one, is
    // treated as missing: nothing of it is read.
    let refused = crate::tenancy::check_ov_reference(
        namespace,
        &inst.spec.operator_version,
        input.operator_version,
    )
    .err()
    .or_else(|| input.observed.operator_version_problem.clone());
    let usable = input.operator_version.filter(|_| refused.is_none());
    let Some(ov) = usable else {
        let name = select::spec_ov_name(&inst.spec).to_string();
        out.push_blocker(other(refused.unwrap_or_else(|| {
            format!(
                "OperatorVersion {name:?} not found in namespace {namespace}; install it or fix spec.operatorVersion"
            )
        })));
        if deleting && has_finalizer {
            out.actions.push(event(
                EventType::Warning,
                "CleanupSkipped",
                format!(
                    "OperatorVersion {name} is not available; removing the finalizer without cleanup"
                ),
            ));
            release(st, &mut out.actions);
        }
        changed |= replace(&mut st.blockers, out.take_blockers());
        return Effects {
            actions: out.actions,
            requeue_after: None,
            changed,
        };
    };

    changed |= sync_plans(ov, st);
    changed |= adopt_kudo_status(inst, st);

    // Clearing a suppression comes first so that a waiting plan can start
    // in this pass; the other operations act on the plan as started.
    let mut applied_ops = operations::Applied::default();
    changed |= operations::adopt_mark(inst, st);
    let clears = |o: &kudo_api::PlanOperation| o.action == kudo_api::PlanAction::ClearSuppression;
    changed |= operations::apply_new(inst, ov, st, now, clears, &mut applied_ops);

    let has_cleanup = ov.spec.plan(CLEANUP_PLAN).is_some();
    if !deleting && has_cleanup && !has_finalizer {
        out.actions.push(Action::AddFinalizer);
    }

    let manual_suppression = suppression::active_manual(&inst.spec.suppressions, now);
    let window = windows::state(
        &inst.spec.maintenance_windows,
        &input.config.default_maintenance_windows,
        now,
    );

    let mut queued = false;
    let mut asked = true;
    let identity = crate::admission::Identity::from(&inst.metadata);
    match select::select(&identity, &inst.spec, ov, select::Consumed::from(&*st)) {
        Selection::Nothing => asked = false,
        Selection::ConsumeOnly => {
            asked = false;
            changed |= replace(
                &mut st.applied_parameters,
                Some(select::spec_params(&inst.spec).clone()),
            );
        }
        Selection::Invalid(message) => out.push_blocker(other(message)),
        Selection::Start(req) => {
            let running = running_plan(st);
            let may_start = match running.as_deref() {
                None => true,
                // Recovery yields to any plan asked for.
                Some(name)
                    if name == req.plan
                        || name == RECOVERY_PLAN
                        || req.trigger == Trigger::Cleanup =>
                {
                    true
                }
                Some(name) => {
                    queued = true;
                    out.push_blocker(Blocker {
                        plan: Some(req.plan.clone()),
                        ..other(format!(
                            "plan {:?} ({}) waits until plan {name:?} is COMPLETE or FATAL_ERROR",
                            req.plan, req.trigger
                        ))
                    });
                    false
                }
            };
            if may_start {
                let hold = start_hold(&req, inst, st, manual_suppression, &window, now, &mut out);
                // A manual run asked for behind the held change goes ahead
                // when nothing holds it (a break-glass run past a window).
                let manual = hold.as_ref().and_then(|_| {
                    let consumed = select::Consumed::from(&*st);
                    select::manual_behind(&inst.spec, ov, consumed, &req).filter(|m| {
                        let mut scratch = WalkOutput::default();
                        start_hold(m, inst, st, manual_suppression, &window, now, &mut scratch)
                            .is_none()
                    })
                });
                match (hold, manual) {
                    (_, Some(manual)) => {
                        start(inst, st, &manual, input.config, now, &mut out);
                        changed = true;
                    }
                    (Some(b), None) => out.push_blocker(b),
                    (None, None) => {
                        start(inst, st, &req, input.config, now, &mut out);
                        changed = true;
                    }
                }
            }
        }
    }

    let auto = AutoPlan {
        instance: inst,
        ov,
        config: input.config,
        manual_suppression,
        window: &window,
        now,
    };
    if !asked && running_plan(st).is_none() {
        changed |= recovery::consider(&auto, &input.observed.drift, st, &mut out);
    }
    changed |= maintenance::consider(&auto, input.observed.maintenance.as_ref(), st, &mut out);

    changed |= operations::apply_new(
        inst,
        ov,
        st,
        now,
        |o| !clears(o) && !o.action.is_pod(),
        &mut applied_ops,
    );
    changed |= recovery_pods::apply_new(inst, st, input.config, now, &mut out);

    let active_def = st
        .active_plan
        .as_ref()
        .and_then(|a| recovery::plan_of(ov, st, &a.name));
    if let Some(active) = &st.active_plan
        && let (Some(plan), Some(ps)) = (active_def, st.plan_status.get_mut(&active.name))
        && ps.status().is_running()
    {
        let exempt = active.name == CLEANUP_PLAN;
        let hold = if exempt {
            None
        } else {
            step_hold(
                manual_suppression,
                &window,
                active.break_glass == Some(true),
                now,
                &mut out,
            )
        };
        let uid = ps.uid.clone().unwrap_or_default();
        Walk {
            instance: (namespace, inst.metadata.name.as_deref().unwrap_or_default()),
            plan_name: &active.name,
            uid: &uid,
            observed: input.observed,
            now,
            config: input.config,
            hold: hold.as_ref(),
        }
        .run(ps, &plan, &mut out);
        if let Some(h) = hold
            && ps.status() == S::Waiting
            && !out.has_blocker(&h)
        {
            out.push_blocker(h);
        }
    }
    changed |= out.changed;

    changed |= finish_active(&before, st, &applied_ops, input.config, now, &mut out);
    changed |= maintenance::after_walk(st, now, &mut out);
    if queued && running_plan(st).is_none() {
        // The plan in the way just ended: look again at once for the queued one.
        wake(&mut out, now);
    }

    for (name, ps) in &mut st.plan_status {
        let was = before.plan(name);
        if was.is_none_or(|b| b.status != ps.status || b.message != ps.message) {
            ps.last_updated_timestamp = Some(crate::time(now));
            changed = true;
        }
    }

    if let Some(active) = &st.active_plan
        && let Some(ps) = st.plan_status.get(&active.name)
        && let Some(conds) =
            ready::ready_condition(&st.conditions, &active.name, ps.status(), &ps.message, now)
    {
        changed |= replace(&mut st.conditions, conds);
    }

    if deleting && has_finalizer {
        let cleanup_uid = select::cleanup_uid(inst);
        let cleanup = st
            .plan_status
            .get(CLEANUP_PLAN)
            .filter(|p| p.uid.as_deref() == Some(cleanup_uid.as_str()));
        match cleanup.map(|p| p.status()) {
            _ if !has_cleanup => release(st, &mut out.actions),
            Some(S::Complete) => release(st, &mut out.actions),
            Some(S::FatalError) => {
                out.actions.push(event(
                    EventType::Warning,
                    "CleanupFailed",
                    "Plan cleanup ended in FATAL_ERROR; the Instance is deleted anyway and \
                     objects cleanup should have removed may remain"
                        .to_string(),
                ));
                release(st, &mut out.actions);
            }
            _ => {}
        }
    }

    // Cluster-scoped objects are deleted behind the finalizer too (the
    // garbage collector cannot reach them through an owner reference);
    // judged after this pass recorded what its tasks applied.
    if !deleting && !has_finalizer && !has_cleanup && !cluster_scoped_objects(st).is_empty() {
        out.actions.push(Action::AddFinalizer);
    }

    if let Some(active) = &mut st.active_plan
        && let Some(ps) = st.plan_status.get(&active.name)
    {
        changed |= replace(&mut active.status, ps.status());
    }
    changed |= replace(&mut st.blockers, out.take_blockers());
    let generation = inst.metadata.generation.or(st.observed_generation);
    changed |= replace(&mut st.observed_generation, generation);
    let requeue_after = out
        .wake_at
        .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO));
    Effects {
        actions: out.actions,
        requeue_after,
        changed,
    }
}

/// Sets `slot` to `value` if they differ; whether it did.
fn replace<T: PartialEq>(slot: &mut T, value: T) -> bool {
    if *slot == value {
        return false;
    }
    *slot = value;
    true
}

/// Gives every OperatorVersion plan a status of its shape and drops the
/// statuses of plans it no longer has; whether anything changed.
fn sync_plans(ov: &OperatorVersion, st: &mut InstanceStatus) -> bool {
    let plans = &ov.spec.plans;
    let mut changed = false;
    let count = st.plan_status.len();
    st.plan_status
        .retain(|name, _| plans.contains_key(name) || name == RECOVERY_PLAN);
    changed |= st.plan_status.len() != count;
    for (name, plan) in plans {
        match st.plan_status.get_mut(name) {
            Some(ps) => changed |= sync_plan_in_place(name, plan, ps),
            None => {
                st.plan_status
                    .insert(name.clone(), sync_plan(name, plan, None));
                changed = true;
            }
        }
    }
    changed
}

/// A status written by KUDO (plans ran, nothing recorded as applied) is
/// taken over as it is: the current spec counts as applied.
fn adopt_kudo_status(inst: &Instance, st: &mut InstanceStatus) -> bool {
    let adopt = st.applied_operator_version.is_none()
        && st.active_plan.is_none()
        && st
            .plan_status
            .get(DEPLOY_PLAN)
            .is_some_and(|p| p.status().is_terminal());
    if adopt {
        st.applied_operator_version = Some(select::spec_ov_name(&inst.spec).to_string());
        st.applied_parameters = Some(select::spec_params(&inst.spec).clone());
        st.last_plan_execution_uid = inst
            .spec
            .plan_execution
            .as_ref()
            .and_then(|p| p.uid.clone());
    }
    adopt
}
