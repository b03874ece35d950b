//! The stages of one decide pass, in the order `decide_in_place` runs
//! them. Each returns whether it changed the working status (where it can).

use kudo_api::names::{CLEANUP_FINALIZER, CLEANUP_PLAN, DEPLOY_PLAN, RECOVERY_PLAN};
use kudo_api::{Blocker, ExecutionStatus as S, Instance, InstanceStatus, OperatorVersion};

use crate::automatic::{maintenance, recovery, recovery_pods};
use crate::model::facts::{event, other, recovery_beside, release, running_plan};
use crate::model::subject::Identity;
use crate::model::{Action, Effects, EventType, Input, Observed};
use crate::plan::definition::plan_of;
use crate::plan::holds::{start_hold, step_hold};
use crate::plan::lifecycle::{AutoPlan, start};
use crate::plan::select::{self, Selection, Trigger};
use crate::plan::tree::{sync_plan, sync_plan_in_place};
use crate::plan::walk::{Walk, WalkOutput};
use crate::plan::{operations, tenancy};

mod closing;

/// The OperatorVersion this pass may read: the one spec names, if it
/// exists, is of this namespace or shared with it, and is usable. When not,
/// a blocker says why and `None` is returned.
pub(super) fn usable_operator_version<'a>(
    input: &Input<'a>,
    out: &mut WalkOutput,
) -> Option<&'a OperatorVersion> {
    let inst = input.instance;
    let namespace = namespace_of(inst);
    // Another namespace's OperatorVersion, not shared with this one, is
    // treated as missing: nothing of it is read.
    let refused = tenancy::check_ov_reference(
        namespace,
        &inst.spec.operator_version,
        input.operator_version,
    )
    .err()
    .or_else(|| input.observed.operator_version_problem.clone());
    if refused.is_none() && input.operator_version.is_some() {
        return input.operator_version;
    }
    let name = select::spec_ov_name(&inst.spec);
    out.push_blocker(other(refused.unwrap_or_else(|| {
        format!(
            "OperatorVersion {name:?} not found in namespace {namespace}; install it or fix spec.operatorVersion"
        )
    })));
    None
}

/// Without a usable OperatorVersion nothing runs; an Instance being
/// deleted lets go of its finalizer without cleanup (saying so), unless
/// the OperatorVersion is only waiting for its verification.
pub(super) fn without_operator_version(
    input: &Input<'_>,
    st: &mut InstanceStatus,
    mut out: WalkOutput,
) -> Effects {
    let inst = input.instance;
    if inst.metadata.deletion_timestamp.is_some()
        && has_finalizer(inst)
        && !input.observed.operator_version_pending
    {
        let name = select::spec_ov_name(&inst.spec);
        out.actions.push(event(
            EventType::Warning,
            "CleanupSkipped",
            format!(
                "OperatorVersion {name} is not available; removing the finalizer without cleanup"
            ),
        ));
        release(st, &mut out.actions);
    }
    let changed = replace(&mut st.blockers, out.take_blockers());
    Effects {
        actions: out.actions,
        requeue_after: None,
        changed,
    }
}

/// What one pass reads besides the working status.
pub(super) struct Pass<'a> {
    cx: AutoPlan<'a>,
    observed: &'a Observed,
    deleting: bool,
    has_finalizer: bool,
    has_cleanup: bool,
}

/// What [`Pass::pick_plan`] found.
pub(super) struct Picked {
    /// Spec asks for a plan (started, queued, held or invalid).
    asked: bool,
    /// The plan asked for waits behind a running one.
    queued: bool,
    /// The working status changed.
    pub(super) changed: bool,
}

impl<'a> Pass<'a> {
    pub(super) fn new(input: &Input<'a>, cx: AutoPlan<'a>) -> Self {
        let inst = input.instance;
        Self {
            observed: input.observed,
            deleting: inst.metadata.deletion_timestamp.is_some(),
            has_finalizer: has_finalizer(inst),
            has_cleanup: cx.ov.spec.plan(CLEANUP_PLAN).is_some(),
            cx,
        }
    }

    /// Gives the status the OperatorVersion's shape (every plan, phase and
    /// step, by name) and takes over a status KUDO wrote.
    pub(super) fn reshape(&self, st: &mut InstanceStatus) -> bool {
        sync_plans(self.cx.ov, st) | adopt_kudo_status(self.cx.instance, st)
    }

    /// Applies the operations that clear a suppression, first of all, so
    /// that a plan waiting behind the suppression can start in this pass.
    pub(super) fn clear_suppressions(
        &self,
        st: &mut InstanceStatus,
        applied: &mut operations::Applied,
    ) -> bool {
        let (inst, ov, now) = (self.cx.instance, self.cx.ov, self.cx.now);
        let mut changed = operations::adopt_mark(inst, st);
        changed |= operations::apply_new(inst, ov, st, now, clears, applied);
        changed
    }

    /// Asks for the cleanup finalizer while the OperatorVersion has a
    /// cleanup plan and the Instance lacks it.
    pub(super) fn ask_for_finalizer(&self, out: &mut WalkOutput) {
        if !self.deleting && self.has_cleanup && !self.has_finalizer {
            out.actions.push(Action::AddFinalizer);
        }
    }

    /// Which plan spec asks for, and whether it starts now: it waits
    /// behind a running plan other than itself, recovery or cleanup
    /// (queued), is held by a suppression or a closed window (unless a
    /// manual run behind it is not), or starts.
    pub(super) fn pick_plan(&self, st: &mut InstanceStatus, out: &mut WalkOutput) -> Picked {
        let cx = &self.cx;
        let (inst, ov) = (cx.instance, cx.ov);
        let mut picked = Picked {
            asked: true,
            queued: false,
            changed: false,
        };
        let identity = Identity::from(&inst.metadata);
        let req = match select::select(&identity, &inst.spec, ov, select::Consumed::from(&*st)) {
            Selection::Nothing => {
                picked.asked = false;
                return picked;
            }
            Selection::ConsumeOnly => {
                picked.asked = false;
                picked.changed = replace(
                    &mut st.applied_parameters,
                    Some(select::spec_params(&inst.spec).clone()),
                );
                return picked;
            }
            Selection::Invalid(message) => {
                out.push_blocker(other(message));
                return picked;
            }
            Selection::Start(req) => req,
        };
        match running_plan(st) {
            // Recovery yields to any plan asked for.
            Some(name)
                if name != req.plan && name != RECOVERY_PLAN && req.trigger != Trigger::Cleanup =>
            {
                picked.queued = true;
                out.push_blocker(Blocker {
                    plan: Some(req.plan.clone()),
                    ..other(format!(
                        "plan {:?} ({}) waits until plan {name:?} is COMPLETE or FATAL_ERROR",
                        req.plan, req.trigger
                    ))
                });
                return picked;
            }
            _ => {}
        }
        let hold = start_hold(
            &req,
            inst,
            st,
            cx.holds(),
            cx.window(&req.plan),
            cx.now,
            out,
        );
        // A manual run asked for behind the held change goes ahead when
        // nothing holds it (a break-glass run past a window).
        let manual = hold.as_ref().and_then(|_| {
            let consumed = select::Consumed::from(&*st);
            select::manual_behind(&inst.spec, ov, consumed, &req).filter(|m| {
                let mut scratch = WalkOutput::default();
                start_hold(
                    m,
                    inst,
                    st,
                    cx.holds(),
                    cx.window(&m.plan),
                    cx.now,
                    &mut scratch,
                )
                .is_none()
            })
        });
        match (hold, manual) {
            (_, Some(manual)) => {
                start(inst, st, &manual, cx.config, cx.now, out);
                picked.changed = true;
            }
            (Some(b), None) => out.push_blocker(b),
            (None, None) => {
                start(inst, st, &req, cx.config, cx.now, out);
                picked.changed = true;
            }
        }
        picked
    }

    /// Starts the plans the engine asks for itself: recovery of drifted
    /// objects (all of them when nothing runs and nothing is asked for;
    /// beside a running plan those it does not touch), and the
    /// maintenance plan for a maintenance notice.
    pub(super) fn automatic_plans(
        &self,
        picked: &Picked,
        st: &mut InstanceStatus,
        out: &mut WalkOutput,
    ) -> bool {
        let mut changed = false;
        changed |=
            recovery::consider_in_pass(&self.cx, &self.observed.drift, picked.asked, st, out);
        changed |= maintenance::consider(&self.cx, self.observed.maintenance.as_ref(), st, out);
        changed
    }

    /// Applies the remaining new plan operations to the plan as started:
    /// pause, resume, continue, force-complete, restart, cancel, then the
    /// pod operations (which may start or extend the recovery plan).
    pub(super) fn apply_operations(
        &self,
        st: &mut InstanceStatus,
        applied: &mut operations::Applied,
        out: &mut WalkOutput,
    ) -> bool {
        let (inst, ov, now) = (self.cx.instance, self.cx.ov, self.cx.now);
        let others = |o: &kudo_api::PlanOperation| !clears(o) && !o.action.is_pod();
        let mut changed = operations::apply_new(inst, ov, st, now, others, applied);
        changed |= recovery_pods::apply_new(inst, ov, st, self.cx.config, now, out);
        changed
    }

    /// Walks the running plans: the active one and a recovery beside it;
    /// which tasks run, which steps finish, retry or fail, under the holds
    /// of this pass (cleanup is held by none). What changed is in
    /// `out.changed`.
    pub(super) fn walk(&self, st: &mut InstanceStatus, out: &mut WalkOutput) {
        let Some(active) = st.active_plan.as_ref() else {
            return;
        };
        let (name, break_glass) = (active.name.clone(), active.break_glass == Some(true));
        self.walk_plan(&name, break_glass, st, out);
        if recovery_beside(st) {
            self.walk_plan(RECOVERY_PLAN, false, st, out);
        }
    }

    fn walk_plan(
        &self,
        name: &str,
        break_glass: bool,
        st: &mut InstanceStatus,
        out: &mut WalkOutput,
    ) {
        let cx = &self.cx;
        let inst = cx.instance;
        let def = plan_of(cx.ov, st, name);
        let (Some(plan), Some(ps)) = (def, st.plan_status.get_mut(name)) else {
            return;
        };
        if !ps.status().is_running() {
            return;
        }
        let hold = if name == CLEANUP_PLAN {
            None
        } else {
            step_hold(
                cx.manual_suppression,
                cx.window(name),
                break_glass,
                cx.now,
                out,
            )
        }
        // Named, so that how long this plan is held is told apart.
        .map(|h| Blocker {
            plan: Some(name.to_string()),
            ..h
        });
        let uid = ps.uid.clone().unwrap_or_default();
        Walk {
            instance: (
                namespace_of(inst),
                inst.metadata.name.as_deref().unwrap_or_default(),
            ),
            plan_name: name,
            uid: &uid,
            observed: self.observed,
            now: cx.now,
            config: cx.config,
            hold: hold.as_ref(),
        }
        .run(ps, &plan, out);
        if let Some(h) = hold
            && ps.status() == S::Waiting
            && !out.has_blocker(&h)
        {
            out.push_blocker(h);
        }
    }
}

/// Operations that clear a suppression.
fn clears(o: &kudo_api::PlanOperation) -> bool {
    o.action == kudo_api::PlanAction::ClearSuppression
}

fn namespace_of(inst: &Instance) -> &str {
    inst.metadata.namespace.as_deref().unwrap_or("default")
}

fn has_finalizer(inst: &Instance) -> bool {
    inst.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == CLEANUP_FINALIZER)
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
/// taken over as it is: the current spec counts as applied, and, when its
/// deploy completed and no plan failed, as the configuration a plan last
/// completed with (the rollback target; dependency holds count it as
/// settled).
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
        let settled = st
            .plan_status
            .get(DEPLOY_PLAN)
            .is_some_and(|p| p.status() == S::Complete)
            && !st.plan_status.values().any(|p| p.status() == S::FatalError);
        if settled && st.last_successful.is_none() {
            let deploy = st.plan_status.get(DEPLOY_PLAN);
            st.last_successful = Some(kudo_api::AppliedConfig {
                operator_version: select::spec_ov_name(&inst.spec).to_string(),
                parameters: select::spec_params(&inst.spec).clone(),
                plan: Some(DEPLOY_PLAN.to_string()),
                completed_at: deploy.and_then(|p| p.last_updated_timestamp.clone()),
            });
        }
    }
    adopt
}
