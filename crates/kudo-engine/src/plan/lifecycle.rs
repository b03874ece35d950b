//! Starting and finishing plan executions: status reset, what is consumed,
//! history, events, last successful configuration, automatic suppression.

use jiff::Timestamp;
use kudo_api::maintenance::MAINTENANCE_PLAN;
use kudo_api::names::{CLEANUP_PLAN, DEPLOY_PLAN, RECOVERY_PLAN, UPDATE_PLAN, UPGRADE_PLAN};
use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, ExecutionStatus as S, Instance, InstanceStatus,
    OperatorVersion, PlanRun, Suppression,
};

use crate::model::facts::{event, recovery_beside, running_plan};
use crate::model::{EngineConfig, EventType};
use crate::plan::holds::{PlanWindow, StartHolds, start_hold, wake};
use crate::plan::operations;
use crate::plan::select::{self, Consumes, PlanRequest, Trigger};
use crate::plan::tree::reset_plan;
use crate::plan::walk::WalkOutput;

/// What starting a plan the engine asks for itself (recovery, maintenance)
/// reads: the Instance, its OperatorVersion and the holds of this pass.
pub(crate) struct AutoPlan<'a> {
    pub instance: &'a Instance,
    pub ov: &'a OperatorVersion,
    pub config: &'a EngineConfig,
    pub manual_suppression: Option<&'a Suppression>,
    /// The namespace-wide suppression, when the namespace holds.
    pub namespace_hold: Option<crate::plan::namespace_hold::Hold>,
    pub windows: &'a crate::plan::windows::Windows,
    pub now: Timestamp,
}

impl AutoPlan<'_> {
    /// The window plan `plan` waits for: a downtime window when its
    /// definition declares `downtime: true`, otherwise a no-downtime one.
    /// The holds of this pass besides windows.
    pub(crate) fn holds(&self) -> StartHolds<'_> {
        StartHolds {
            manual: self.manual_suppression,
            namespace: self.namespace_hold.as_ref(),
        }
    }

    pub(crate) fn window(&self, plan: &str) -> PlanWindow<'_> {
        let downtime = self.ov.spec.plan(plan).and_then(|p| p.downtime) == Some(true);
        self.windows.for_plan(downtime)
    }

    /// Whether a suppression or a closed window holds `req` back; the
    /// blocker says which.
    pub(crate) fn held(
        &self,
        req: &PlanRequest,
        st: &InstanceStatus,
        out: &mut WalkOutput,
    ) -> bool {
        let hold = start_hold(
            req,
            self.instance,
            st,
            self.holds(),
            self.window(&req.plan),
            self.now,
            out,
        );
        let held = hold.is_some();
        if let Some(b) = hold {
            out.push_blocker(b);
        }
        held
    }

    /// Starts `req` (see [`start`]).
    pub(crate) fn start(&self, st: &mut InstanceStatus, req: &PlanRequest, out: &mut WalkOutput) {
        start(self.instance, st, req, self.config, self.now, out);
    }
}

/// What the plan statuses were when a call began: whether a plan reached
/// its end in this call, and whether its status or message changed.
pub(crate) struct Before {
    plans: Vec<PlanBefore>,
}

/// One plan status as it was when the call began.
pub(crate) struct PlanBefore {
    name: String,
    pub status: Option<S>,
    pub message: String,
    pub uid: Option<String>,
}

impl Before {
    /// Notes the plan statuses of `st` (a few short strings per plan; the
    /// phases and steps are not copied).
    pub fn of(st: &InstanceStatus) -> Self {
        let plans = st
            .plan_status
            .iter()
            .map(|(name, ps)| PlanBefore {
                name: name.clone(),
                status: ps.status,
                message: ps.message.clone(),
                uid: ps.uid.clone(),
            })
            .collect();
        Self { plans }
    }

    /// The plan called `name`, as it was.
    pub fn plan(&self, name: &str) -> Option<&PlanBefore> {
        self.plans.iter().find(|p| p.name == name)
    }
}

pub(crate) fn start(
    inst: &Instance,
    st: &mut InstanceStatus,
    req: &PlanRequest,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) {
    // A recovery beside the active plan yields to any plan started, as the
    // active recovery does (what still drifted is recovered again after).
    if req.plan != RECOVERY_PLAN && recovery_beside(st) {
        let message = format!("stopped: {} overrides it", req.plan);
        if let Some(ps) = st.plan_status.get_mut(RECOVERY_PLAN) {
            ps.status = Some(S::FatalError);
            ps.message.clone_from(&message);
            ps.finished_at = Some(crate::model::time(now));
            let uid = ps.uid.clone();
            close_history(st, uid.as_deref(), Some(S::FatalError), &message, now);
        }
    }
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
                ps.finished_at = Some(crate::model::time(now));
            }
            // A run the new request replaces ends without a result of its
            // own (history shows it superseded).
            let uid = ps.uid.clone();
            close_history(st, uid.as_deref(), status, &message, now);
        }
    }
    if begin(inst, st, req, config, now, out) {
        st.active_plan = Some(ActivePlan {
            name: req.plan.clone(),
            uid: Some(req.uid.clone()),
            status: S::Pending,
            trigger: Some(req.trigger.to_string()),
            break_glass: req.break_glass.then_some(true),
        });
    }
}

/// Starts the recovery plan beside the running active plan, which stays
/// active (it is what a user or a change asked for).
pub(crate) fn start_beside(
    inst: &Instance,
    st: &mut InstanceStatus,
    req: &PlanRequest,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) {
    begin(inst, st, req, config, now, out);
}

/// Resets the plan for the new execution, consumes what it consumes and
/// records its start; false when there is no such plan.
fn begin(
    inst: &Instance,
    st: &mut InstanceStatus,
    req: &PlanRequest,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> bool {
    // Read before the new OperatorVersion is consumed below.
    let reason = move_reason(inst, st, req);
    let Some(ps) = st.plan_status.get_mut(&req.plan) else {
        return false;
    };
    reset_plan(ps, &req.uid, crate::model::time(now));
    // The run's own values, read by its renders from here on: a later change
    // of spec.planExecution without a new uid does not reach this run.
    ps.parameters.clone_from(&req.parameters);
    match req.consumes {
        Consumes::Everything => {
            st.applied_operator_version = Some(select::spec_ov_name(&inst.spec).to_string());
            st.applied_parameters = Some(select::spec_params(&inst.spec).clone());
            st.last_plan_execution_uid = inst
                .spec
                .plan_execution
                .as_ref()
                .and_then(|p| p.uid.clone());
        }
        Consumes::Config => {
            st.applied_operator_version = Some(select::spec_ov_name(&inst.spec).to_string());
            st.applied_parameters = Some(select::spec_params(&inst.spec).clone());
        }
        Consumes::ExecutionUid => st.last_plan_execution_uid = Some(req.uid.clone()),
        Consumes::Nothing => {}
    }
    st.history.push(PlanRun {
        plan: req.plan.clone(),
        uid: req.uid.clone(),
        trigger: req.trigger.to_string(),
        started: crate::model::time(now),
        finished: None,
        result: None,
        message: String::new(),
        parameters: crate::plan::execution::for_history(&req.parameters),
        reason,
    });
    let excess = st.history.len().saturating_sub(config.history_limit);
    st.history.drain(..excess);
    out.actions.push(event(
        EventType::Normal,
        "PlanStarted",
        format!("Execution of plan {} started", req.plan),
    ));
    true
}

/// Why an upgrade or rollback moves the Instance, for its history: the
/// channel move the manager recorded in `status.upgrades` when it is that
/// move, else the OperatorVersions left and reached.
fn move_reason(inst: &Instance, st: &InstanceStatus, req: &PlanRequest) -> Option<String> {
    if !matches!(req.trigger, Trigger::Upgrade | Trigger::Rollback) {
        return None;
    }
    let to = select::spec_ov_name(&inst.spec);
    if req.trigger == Trigger::Upgrade
        && inst.spec.upgrades.is_some()
        && let Some(moved) = &st.upgrades
        && moved.operator_version.as_deref() == Some(to)
        && moved.last_change.is_some()
    {
        return moved.last_change.clone();
    }
    let from = st.applied_operator_version.as_deref()?;
    (from != to).then(|| format!("operatorVersion {from} → {to}"))
}

pub(crate) fn close_history(
    st: &mut InstanceStatus,
    uid: Option<&str>,
    result: Option<S>,
    message: &str,
    now: Timestamp,
) {
    if let Some(run) = st
        .history
        .iter_mut()
        .rev()
        .find(|r| Some(r.uid.as_str()) == uid && r.finished.is_none())
    {
        run.finished = Some(crate::model::time(now));
        run.result = result;
        run.message = message.to_string();
    }
}

/// Bookkeeping when the active plan reached COMPLETE or FATAL_ERROR in this
/// pass; whether it changed the status.
pub(crate) fn finish_active(
    before: &Before,
    st: &mut InstanceStatus,
    applied: &operations::Applied,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> bool {
    let Some(active) = &st.active_plan else {
        return false;
    };
    let (name, trigger) = (active.name.clone(), active.trigger.clone());
    finish_plan(
        before,
        st,
        &name,
        trigger.as_deref(),
        applied,
        config,
        now,
        out,
    )
}

/// The same bookkeeping for a recovery that ran beside the active plan.
pub(crate) fn finish_beside(
    before: &Before,
    st: &mut InstanceStatus,
    applied: &operations::Applied,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> bool {
    if st
        .active_plan
        .as_ref()
        .is_none_or(|a| a.name == RECOVERY_PLAN)
    {
        return false;
    }
    // A recovery a new plan stopped was recorded then.
    let uid = st
        .plan_status
        .get(RECOVERY_PLAN)
        .and_then(|p| p.uid.as_deref());
    if st
        .history
        .iter()
        .any(|r| Some(r.uid.as_str()) == uid && r.finished.is_some())
    {
        return false;
    }
    finish_plan(before, st, RECOVERY_PLAN, None, applied, config, now, out)
}

/// Whether plan `name`, completed, makes the configuration it ran with the
/// one a rollback returns to (and dependency holds count as completed):
/// a plan started by a change of it (create, parameters, upgrade,
/// rollback), or a configuration plan run again by hand. Another plan run
/// by hand (a backup) after a failed change does not make that change good.
fn settles(name: &str, trigger: Option<&str>, st: &InstanceStatus) -> bool {
    let config_plan = [DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN].contains(&name);
    let unchanged = st.last_successful.as_ref().is_some_and(|l| {
        l.operator_version == st.applied_operator_version.as_deref().unwrap_or_default()
            && st
                .applied_parameters
                .as_ref()
                .map_or(l.parameters.is_empty(), |p| *p == l.parameters)
    });
    trigger != Some("manual") || config_plan || unchanged
}

#[allow(clippy::too_many_arguments)]
fn finish_plan(
    before: &Before,
    st: &mut InstanceStatus,
    name: &str,
    trigger: Option<&str>,
    applied: &operations::Applied,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> bool {
    let Some(ps) = st.plan_status.get(name) else {
        return false;
    };
    let result = ps.status();
    if !result.is_terminal() {
        return false;
    }
    let already = before
        .plan(name)
        .is_some_and(|p| p.uid == ps.uid && p.status.unwrap_or_default().is_terminal());
    if already {
        return false;
    }
    let Some(ps) = st.plan_status.get_mut(name) else {
        return false;
    };
    ps.finished_at = Some(crate::model::time(now));
    let (uid, message) = (ps.uid.clone(), ps.message.clone());
    close_history(st, uid.as_deref(), Some(result), &message, now);
    out.actions.push(event(
        EventType::Normal,
        "PlanFinished",
        format!("Execution of plan {} finished with status {result}", name),
    ));
    if name == CLEANUP_PLAN {
        return true;
    }
    if name == MAINTENANCE_PLAN || (result == S::Complete && name == RECOVERY_PLAN) {
        // Recovery restores the configuration and maintenance prepares for
        // node maintenance: neither changes it. A declined maintenance is an
        // answer, not a failed configuration, so it suppresses nothing.
    } else if result == S::Complete {
        if settles(name, trigger, st) {
            st.last_successful = Some(AppliedConfig {
                operator_version: st.applied_operator_version.clone().unwrap_or_default(),
                parameters: st.applied_parameters.clone().unwrap_or_default(),
                plan: Some(name.to_string()),
                completed_at: Some(crate::model::time(now)),
            });
        }
        if trigger == Some("rollback") {
            st.auto_suppression = None;
        }
    } else if config.auto_suppress_on_failure && !applied.cancelled.iter().any(|c| c == name) {
        let until = config.auto_suppression_duration.and_then(|d| {
            jiff::SignedDuration::try_from(d)
                .ok()
                .and_then(|sd| now.checked_add(sd).ok())
        });
        if let Some(u) = until {
            wake(out, u);
        }
        st.auto_suppression = Some(AutoSuppression {
            since: crate::model::time(now),
            until: until.map(crate::model::time),
            reason: format!("plan {name:?} failed: {message}"),
            plan: Some(name.to_string()),
            uid,
        });
    }
    true
}
