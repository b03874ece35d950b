//! The closing stages of a pass: what the walk finished, readiness, the
//! finalizer on deletion, what the status records, when to look again.

use std::time::Duration;

use kudo_api::names::CLEANUP_PLAN;
use kudo_api::{ExecutionStatus as S, InstanceStatus};

use crate::automatic::maintenance;
use crate::model::facts::{cluster_scoped_objects, event, release, running_plan};
use crate::model::{Action, EventType};
use crate::plan::holds::wake;
use crate::plan::lifecycle::{Before, finish_active, finish_beside};
use crate::plan::select;
use crate::plan::walk::WalkOutput;
use crate::plan::{blocked, operations, ready};

use super::{Pass, Picked, replace};

impl Pass<'_> {
    /// Ends the active plan if the walk finished it (history, Events,
    /// what it leaves applied), records a maintenance answer, looks again
    /// at once for a plan queued behind one that just ended, and stamps
    /// `lastUpdatedTimestamp` on plans whose status or message changed.
    pub(in crate::decide) fn finish(
        &self,
        before: &Before,
        picked: &Picked,
        applied: &operations::Applied,
        st: &mut InstanceStatus,
        out: &mut WalkOutput,
    ) -> bool {
        let now = self.cx.now;
        let mut changed = finish_active(before, st, applied, self.cx.config, now, out);
        changed |= finish_beside(before, st, applied, self.cx.config, now, out);
        changed |= maintenance::after_walk(st, now, out);
        if picked.queued && running_plan(st).is_none() {
            // The plan in the way just ended: look again at once for the queued one.
            wake(out, now);
        }
        for (name, ps) in &mut st.plan_status {
            let was = before.plan(name);
            if was.is_none_or(|b| b.status != ps.status || b.message != ps.message) {
                ps.last_updated_timestamp = Some(crate::model::time(now));
                changed = true;
            }
        }
        changed
    }

    /// The Ready condition as the active plan leaves it (only the plans
    /// that drive Ready change it).
    pub(in crate::decide) fn readiness(&self, st: &mut InstanceStatus) -> bool {
        let Some(active) = &st.active_plan else {
            return false;
        };
        let Some(ps) = st.plan_status.get(&active.name) else {
            return false;
        };
        match ready::ready_condition(
            &st.conditions,
            &active.name,
            ps.status(),
            &ps.message,
            self.cx.now,
        ) {
            Some(conds) => {
                let conds = ready::keep_others(&st.conditions, conds);
                replace(&mut st.conditions, conds)
            }
            None => false,
        }
    }

    /// Lets an Instance being deleted go once cleanup ended (or there is
    /// none), and asks for the finalizer while cluster-scoped objects need
    /// deleting behind it.
    pub(in crate::decide) fn release_on_deletion(&self, st: &InstanceStatus, out: &mut WalkOutput) {
        let inst = self.cx.instance;
        if self.deleting && self.has_finalizer {
            let cleanup_uid = select::cleanup_uid(inst);
            let cleanup = st
                .plan_status
                .get(CLEANUP_PLAN)
                .filter(|p| p.uid.as_deref() == Some(cleanup_uid.as_str()));
            match cleanup.map(|p| p.status()) {
                _ if !self.has_cleanup => release(st, &mut out.actions),
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
        if !self.deleting
            && !self.has_finalizer
            && !self.has_cleanup
            && !cluster_scoped_objects(st).is_empty()
        {
            out.actions.push(Action::AddFinalizer);
        }
    }

    /// Records the pass in the status: the active plan's status, the
    /// blockers of this pass, the generation seen.
    pub(in crate::decide) fn record(&self, st: &mut InstanceStatus, out: &mut WalkOutput) -> bool {
        let mut changed = false;
        if let Some(active) = &mut st.active_plan
            && let Some(ps) = st.plan_status.get(&active.name)
        {
            changed |= replace(&mut active.status, ps.status());
        }
        let mut blockers = out.take_blockers();
        let active = running_plan(st);
        blocked::stamp_since(&st.blockers, &mut blockers, active.as_deref(), self.cx.now);
        changed |= replace(&mut st.blockers, blockers);
        if let Some(after) = self.cx.config.blocked_warning_after {
            let v = blocked::judge(
                &st.conditions,
                &st.blockers,
                active.as_deref(),
                after,
                self.cx.now,
            );
            if let Some(at) = v.wake_at {
                wake(out, at);
            }
            if let Some(message) = v.warning {
                out.actions
                    .push(event(EventType::Warning, blocked::EVENT_REASON, message));
            }
            if let Some(conditions) = v.conditions {
                st.conditions = conditions;
                changed = true;
            }
        }
        let generation = self
            .cx
            .instance
            .metadata
            .generation
            .or(st.observed_generation);
        changed |= replace(&mut st.observed_generation, generation);
        changed
    }

    /// When to look again: the earliest wake-up a stage asked for (a
    /// retry, a window opening, a suppression or backoff ending).
    pub(in crate::decide) fn requeue_after(&self, out: &WalkOutput) -> Option<Duration> {
        out.wake_at
            .map(|at| Duration::try_from(at.duration_since(self.cx.now)).unwrap_or(Duration::ZERO))
    }
}
