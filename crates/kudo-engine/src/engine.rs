//! `decide`: one pure step of the reconcile loop.

use std::time::Duration;

use jiff::Timestamp;
use kudo_api::names::{CLEANUP_FINALIZER, CLEANUP_PLAN, DEPLOY_PLAN};
use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, Blocker, BlockerKind, ExecutionStatus as S,
    Instance, InstanceStatus, PlanRun,
};

use crate::decision::{Action, Decision, EngineConfig, EventType, Input};
use crate::select::{self, Consumes, PlanRequest, Selection, Trigger};
use crate::tree::{reset_plan, sync_plan};
use crate::walk::{Walk, WalkOutput};
use crate::{operations, ready, suppression, windows};

/// See [`crate::decide`].
pub fn decide(input: Input<'_>) -> Decision {
    let inst = input.instance;
    let now = input.now;
    let empty = InstanceStatus::default();
    let stored = inst.status.as_ref().unwrap_or(&empty);
    let mut st = without_plans(stored);
    let mut out = WalkOutput::default();
    let deleting = inst.metadata.deletion_timestamp.is_some();
    let has_finalizer = inst
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == CLEANUP_FINALIZER);

    let Some(ov) = input.operator_version else {
        let name = select::spec_ov_name(inst);
        out.blockers.push(other(format!(
            "OperatorVersion {name:?} not found in namespace {}; install it or fix spec.operatorVersion",
            inst.metadata.namespace.as_deref().unwrap_or("default")
        )));
        if deleting && has_finalizer {
            out.actions.push(event(
                EventType::Warning,
                "CleanupSkipped",
                format!("OperatorVersion {name} not found; removing the finalizer without cleanup"),
            ));
            out.actions.push(Action::RemoveFinalizer);
        }
        st.plan_status = stored.plan_status.clone();
        st.blockers = out.blockers;
        return Decision {
            status: st,
            actions: out.actions,
            requeue_after: None,
        };
    };

    st.plan_status = ov
        .spec
        .plans
        .iter()
        .map(|(name, plan)| {
            (
                name.clone(),
                sync_plan(name, plan, stored.plan_status.get(name)),
            )
        })
        .collect();
    adopt_kudo_status(inst, &mut st);

    // Clearing a suppression comes first so that a waiting plan can start
    // in this pass; the other operations act on the plan as started.
    let mut applied_ops = operations::Applied::default();
    let clears = |o: &kudo_api::PlanOperation| o.action == kudo_api::PlanAction::ClearSuppression;
    operations::apply_new(inst, ov, &mut st, now, clears, &mut applied_ops);

    let has_cleanup = ov.spec.plan(CLEANUP_PLAN).is_some();
    if !deleting && has_cleanup && !has_finalizer {
        out.actions.push(Action::AddFinalizer);
    }

    let manual_suppression = suppression::active_manual(&inst.spec, now);
    let window = windows::state(
        &inst.spec.maintenance_windows,
        &input.config.default_maintenance_windows,
        now,
    );

    let mut queued = false;
    match select::select(inst, ov, &st) {
        Selection::Nothing => {}
        Selection::ConsumeOnly => st.applied_parameters = Some(select::spec_params(inst)),
        Selection::Invalid(message) => out.blockers.push(other(message)),
        Selection::Start(req) => {
            let running = running_plan(&st);
            let may_start = match running.as_deref() {
                None => true,
                Some(name) if name == req.plan || req.trigger == Trigger::Cleanup => true,
                Some(name) => {
                    queued = true;
                    out.blockers.push(Blocker {
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
                let hold = start_hold(&req, inst, &st, manual_suppression, &window, now, &mut out);
                match hold {
                    Some(b) => out.blockers.push(b),
                    None => start(inst, &mut st, &req, input.config, now, &mut out),
                }
            }
        }
    }

    operations::apply_new(inst, ov, &mut st, now, |o| !clears(o), &mut applied_ops);

    if let Some(active) = st.active_plan.clone()
        && let (Some(plan), Some(ps)) = (
            ov.spec.plan(&active.name),
            st.plan_status.get_mut(&active.name),
        )
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
            plan_name: &active.name,
            uid: &uid,
            observed: input.observed,
            now,
            config: input.config,
            hold: hold.as_ref(),
        }
        .run(ps, plan, &mut out);
        if let Some(h) = hold
            && ps.status() == S::Waiting
            && !out.blockers.contains(&h)
        {
            out.blockers.push(h);
        }
    }

    finish_active(stored, &mut st, &applied_ops, input.config, now, &mut out);
    if queued && running_plan(&st).is_none() {
        // The plan in the way just ended: look again at once for the queued one.
        wake(&mut out, now);
    }

    for (name, ps) in &mut st.plan_status {
        let before = stored.plan_status.get(name);
        if before.is_none_or(|b| b.status != ps.status || b.message != ps.message) {
            ps.last_updated_timestamp = Some(crate::time(now));
        }
    }

    if let Some(active) = &st.active_plan
        && let Some(ps) = st.plan_status.get(&active.name)
        && let Some(conds) =
            ready::ready_condition(&st.conditions, &active.name, ps.status(), &ps.message, now)
    {
        st.conditions = conds;
    }

    if deleting && has_finalizer {
        let cleanup_uid = select::cleanup_uid(inst);
        let cleanup = st
            .plan_status
            .get(CLEANUP_PLAN)
            .filter(|p| p.uid.as_deref() == Some(cleanup_uid.as_str()));
        match cleanup.map(|p| p.status()) {
            _ if !has_cleanup => out.actions.push(Action::RemoveFinalizer),
            Some(S::Complete) => out.actions.push(Action::RemoveFinalizer),
            Some(S::FatalError) => {
                out.actions.push(event(
                    EventType::Warning,
                    "CleanupFailed",
                    "Plan cleanup ended in FATAL_ERROR; the Instance is deleted anyway and \
                     objects cleanup should have removed may remain"
                        .to_string(),
                ));
                out.actions.push(Action::RemoveFinalizer);
            }
            _ => {}
        }
    }

    if let Some(active) = &mut st.active_plan
        && let Some(ps) = st.plan_status.get(&active.name)
    {
        active.status = ps.status();
    }
    st.blockers = out.blockers;
    st.observed_generation = inst.metadata.generation.or(st.observed_generation);
    let requeue_after = out
        .wake_at
        .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO));
    Decision {
        status: st,
        actions: out.actions,
        requeue_after,
    }
}

/// A copy of `st` without the plan statuses (they are rebuilt from the
/// OperatorVersion, cloning each only once).
fn without_plans(st: &InstanceStatus) -> InstanceStatus {
    InstanceStatus {
        plan_status: Default::default(),
        conditions: st.conditions.clone(),
        active_plan: st.active_plan.clone(),
        applied_parameters: st.applied_parameters.clone(),
        applied_operator_version: st.applied_operator_version.clone(),
        last_plan_execution_uid: st.last_plan_execution_uid.clone(),
        last_successful: st.last_successful.clone(),
        auto_suppression: st.auto_suppression.clone(),
        blockers: st.blockers.clone(),
        history: st.history.clone(),
        operations: st.operations.clone(),
        observed_generation: st.observed_generation,
    }
}

/// A status written by KUDO (plans ran, nothing recorded as applied) is
/// taken over as it is: the current spec counts as applied.
fn adopt_kudo_status(inst: &Instance, st: &mut InstanceStatus) {
    if st.applied_operator_version.is_none()
        && st.active_plan.is_none()
        && st
            .plan_status
            .get(DEPLOY_PLAN)
            .is_some_and(|p| p.status().is_terminal())
    {
        st.applied_operator_version = Some(select::spec_ov_name(inst));
        st.applied_parameters = Some(select::spec_params(inst));
        st.last_plan_execution_uid = inst
            .spec
            .plan_execution
            .as_ref()
            .and_then(|p| p.uid.clone());
    }
}

fn running_plan(st: &InstanceStatus) -> Option<String> {
    let active = st.active_plan.as_ref()?;
    st.plan_status
        .get(&active.name)
        .filter(|p| p.status().is_running())
        .map(|_| active.name.clone())
}

fn other(message: String) -> Blocker {
    Blocker {
        kind: BlockerKind::Other,
        message,
        ..Default::default()
    }
}

fn event(event_type: EventType, reason: &str, message: String) -> Action {
    Action::Event {
        event_type,
        reason: reason.to_string(),
        message,
    }
}

fn wake(out: &mut WalkOutput, at: Timestamp) {
    out.wake_at = Some(out.wake_at.map_or(at, |w| w.min(at)));
}

fn suppressed_blocker(s: &kudo_api::Suppression) -> Blocker {
    Blocker {
        kind: BlockerKind::Suppressed,
        message: suppression::describe_manual(s),
        until: s.until.clone(),
        ..Default::default()
    }
}

fn window_blocker(
    window: &Result<windows::WindowState, crate::EngineError>,
    out: &mut WalkOutput,
) -> Option<Blocker> {
    match window {
        Ok(windows::WindowState::Open { .. }) => None,
        Ok(windows::WindowState::Closed { opens_at }) => {
            if let Some(at) = opens_at {
                wake(out, *at);
            }
            Some(Blocker {
                kind: BlockerKind::MaintenanceWindow,
                message: match opens_at {
                    Some(at) => format!("maintenance window closed until {at}"),
                    None => "maintenance window closed: the Instance's windows and the manager's \
                             default windows do not overlap in the next two weeks"
                        .to_string(),
                },
                until: opens_at.map(crate::time),
                ..Default::default()
            })
        }
        Err(e) => Some(other(format!(
            "{e}; no step starts until spec.maintenanceWindows is fixed"
        ))),
    }
}

/// Why new steps of the running plan may not start now.
fn step_hold(
    manual: Option<&kudo_api::Suppression>,
    window: &Result<windows::WindowState, crate::EngineError>,
    break_glass: bool,
    now: Timestamp,
    out: &mut WalkOutput,
) -> Option<Blocker> {
    if let Some(s) = manual {
        if let Some(u) = &s.until
            && u.0 > now
        {
            wake(out, u.0);
        }
        return Some(suppressed_blocker(s));
    }
    if break_glass {
        return None;
    }
    window_blocker(window, out)
}

/// Why the requested plan may not start now.
fn start_hold(
    req: &PlanRequest,
    inst: &Instance,
    st: &InstanceStatus,
    manual: Option<&kudo_api::Suppression>,
    window: &Result<windows::WindowState, crate::EngineError>,
    now: Timestamp,
    out: &mut WalkOutput,
) -> Option<Blocker> {
    if req.trigger == Trigger::Cleanup {
        return None;
    }
    let with_plan = |b: Blocker| Blocker {
        plan: Some(req.plan.clone()),
        message: format!("plan {:?} ({}) waits: {}", req.plan, req.trigger, b.message),
        ..b
    };
    if let Some(s) = manual {
        if let Some(u) = &s.until {
            wake(out, u.0);
        }
        return Some(with_plan(suppressed_blocker(s)));
    }
    if req.trigger.is_automatic()
        && let Some(a) = suppression::active_auto(st, now)
    {
        if let Some(u) = &a.until {
            wake(out, u.0);
        }
        return Some(with_plan(Blocker {
            kind: BlockerKind::Suppressed,
            message: suppression::describe_auto(a),
            until: a.until.clone(),
            ..Default::default()
        }));
    }
    let _ = inst;
    if req.break_glass {
        return None;
    }
    window_blocker(window, out).map(with_plan)
}

fn start(
    inst: &Instance,
    st: &mut InstanceStatus,
    req: &PlanRequest,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) {
    if let Some(running) = running_plan(st) {
        let (status, message) = if running == req.plan {
            (
                None,
                format!("restarted by a new request ({})", req.trigger),
            )
        } else {
            (
                Some(S::FatalError),
                format!("stopped: {} overrides it", req.plan),
            )
        };
        if let Some(ps) = st.plan_status.get_mut(&running) {
            if let Some(s) = status {
                ps.status = Some(s);
                ps.message.clone_from(&message);
                ps.finished_at = Some(crate::time(now));
            }
            let (uid, result) = (ps.uid.clone(), ps.status());
            close_history(st, uid.as_deref(), result, &message, now);
        }
    }
    let Some(ps) = st.plan_status.get_mut(&req.plan) else {
        return;
    };
    reset_plan(ps, &req.uid, crate::time(now));
    match req.consumes {
        Consumes::Everything => {
            st.applied_operator_version = Some(select::spec_ov_name(inst));
            st.applied_parameters = Some(select::spec_params(inst));
            st.last_plan_execution_uid = inst
                .spec
                .plan_execution
                .as_ref()
                .and_then(|p| p.uid.clone());
        }
        Consumes::Config => {
            st.applied_operator_version = Some(select::spec_ov_name(inst));
            st.applied_parameters = Some(select::spec_params(inst));
        }
        Consumes::ExecutionUid => st.last_plan_execution_uid = Some(req.uid.clone()),
        Consumes::Nothing => {}
    }
    st.active_plan = Some(ActivePlan {
        name: req.plan.clone(),
        uid: Some(req.uid.clone()),
        status: S::Pending,
        trigger: Some(req.trigger.to_string()),
        break_glass: req.break_glass.then_some(true),
    });
    st.history.push(PlanRun {
        plan: req.plan.clone(),
        uid: req.uid.clone(),
        trigger: req.trigger.to_string(),
        started: crate::time(now),
        finished: None,
        result: None,
        message: String::new(),
    });
    let excess = st.history.len().saturating_sub(config.history_limit);
    st.history.drain(..excess);
    out.actions.push(event(
        EventType::Normal,
        "PlanStarted",
        format!("Execution of plan {} started", req.plan),
    ));
}

fn close_history(
    st: &mut InstanceStatus,
    uid: Option<&str>,
    result: S,
    message: &str,
    now: Timestamp,
) {
    if let Some(run) = st
        .history
        .iter_mut()
        .rev()
        .find(|r| Some(r.uid.as_str()) == uid && r.finished.is_none())
    {
        run.finished = Some(crate::time(now));
        run.result = Some(result);
        run.message = message.to_string();
    }
}

/// Bookkeeping when the active plan reached COMPLETE or FATAL_ERROR in this pass.
fn finish_active(
    stored: &InstanceStatus,
    st: &mut InstanceStatus,
    applied: &operations::Applied,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) {
    let Some(active) = st.active_plan.clone() else {
        return;
    };
    let Some(ps) = st.plan_status.get_mut(&active.name) else {
        return;
    };
    let result = ps.status();
    if !result.is_terminal() {
        return;
    }
    let already = stored
        .plan_status
        .get(&active.name)
        .is_some_and(|p| p.uid == ps.uid && p.status().is_terminal());
    if already {
        return;
    }
    ps.finished_at = Some(crate::time(now));
    let (uid, message) = (ps.uid.clone(), ps.message.clone());
    close_history(st, uid.as_deref(), result, &message, now);
    out.actions.push(event(
        EventType::Normal,
        "PlanFinished",
        format!(
            "Execution of plan {} finished with status {result}",
            active.name
        ),
    ));
    if active.name == CLEANUP_PLAN {
        return;
    }
    if result == S::Complete {
        st.last_successful = Some(AppliedConfig {
            operator_version: st.applied_operator_version.clone().unwrap_or_default(),
            parameters: st.applied_parameters.clone().unwrap_or_default(),
            plan: Some(active.name.clone()),
            completed_at: Some(crate::time(now)),
        });
        if active.trigger.as_deref() == Some("rollback") {
            st.auto_suppression = None;
        }
    } else if config.auto_suppress_on_failure && !applied.cancelled.contains(&active.name) {
        let until = config.auto_suppression_duration.and_then(|d| {
            jiff::SignedDuration::try_from(d)
                .ok()
                .and_then(|sd| now.checked_add(sd).ok())
        });
        if let Some(u) = until {
            wake(out, u);
        }
        st.auto_suppression = Some(AutoSuppression {
            since: crate::time(now),
            until: until.map(crate::time),
            reason: format!("plan {:?} failed: {message}", active.name),
            plan: Some(active.name.clone()),
            uid,
        });
    }
}
