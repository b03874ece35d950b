//! Node maintenance (Mesos' maintenance primitives): the schedule's
//! validation ([`validate`]), the nodes and what changes on them
//! ([`nodes`]), draining a Down node ([`drain`]), and how an Instance is
//! told and answers (this module).
//!
//! An Instance with pods on scheduled nodes gets a [`Notice`] (the
//! manager reads it from the schedule's status). If its OperatorVersion
//! has a plan named `maintenance`, that plan runs as an automatic plan:
//! one plan at a time, suppressions and maintenance windows hold it as any
//! other. Its answer, kept in `status.maintenance`: `Pending` while the
//! plan has not finished, `Accepted` when it completed, `Declined` with the
//! plan's message when it ended FATAL_ERROR, `NoResponse` without such a
//! plan. As in Mesos the answer is a hint to the person: it blocks nothing.
//! A new notice (other nodes or another window) asks again; no notice
//! clears `status.maintenance`.

pub mod drain;
pub mod nodes;
mod validate;

use jiff::Timestamp;
use kudo_api::maintenance::MAINTENANCE_PLAN;
use kudo_api::{
    Blocker, ExecutionStatus as S, InstanceMaintenance, InstanceStatus, MaintenanceResponse,
    MaintenanceSchedule,
};

pub use validate::{duration, same_machine, validate, validate_name, validate_transition};

pub use crate::model::{Notice, describe_maintenance as describe};

use crate::model::facts::{other, running_plan};
use crate::plan::holds::wake;
use crate::plan::lifecycle::AutoPlan;
use crate::plan::select::{Consumes, PlanRequest, Trigger, derived_uid};
use crate::plan::walk::WalkOutput;

/// The notice for Instance `namespace/name` in `schedule`'s status, if its
/// pods run on scheduled nodes.
pub fn notice_for(schedule: &MaintenanceSchedule, namespace: &str, name: &str) -> Option<Notice> {
    let status = schedule.status.as_ref()?;
    let affected = status
        .instances
        .iter()
        .find(|i| i.namespace == namespace && i.name == name)?;
    let mut nodes: Vec<String> = affected.pods.iter().map(|p| p.node.clone()).collect();
    nodes.sort();
    nodes.dedup();
    let windows: Vec<_> = status
        .nodes
        .iter()
        .filter(|n| n.node.as_ref().is_some_and(|node| nodes.contains(node)))
        .filter_map(|n| Some((n.start.as_ref()?.0, n.end.as_ref()?.0)))
        .collect();
    let start = windows.iter().map(|w| w.0).min()?;
    let end = windows.iter().map(|w| w.1).max()?;
    Some(Notice { nodes, start, end })
}

/// Records a new notice, starts the `maintenance` plan when nothing is in
/// its way, and keeps the answer up to date; whether status changed.
pub(crate) fn consider(
    cx: &AutoPlan<'_>,
    notice: Option<&Notice>,
    st: &mut InstanceStatus,
    out: &mut WalkOutput,
) -> bool {
    let Some(notice) = notice.filter(|_| cx.instance.metadata.deletion_timestamp.is_none()) else {
        return st.maintenance.take().is_some();
    };
    let has_plan = cx.ov.spec.plan(MAINTENANCE_PLAN).is_some();
    let mut changed = false;
    let current = st
        .maintenance
        .as_ref()
        .filter(|m| m.nodes == notice.nodes && m.start.0 == notice.start && m.end.0 == notice.end);
    if current.is_none() {
        st.maintenance = Some(InstanceMaintenance {
            nodes: notice.nodes.clone(),
            start: crate::model::time(notice.start),
            end: crate::model::time(notice.end),
            response: if has_plan {
                MaintenanceResponse::Pending
            } else {
                MaintenanceResponse::NoResponse
            },
            message: if has_plan {
                String::new()
            } else {
                "the operator has no maintenance plan".to_string()
            },
            uid: None,
        });
        changed = true;
    }
    let Some(told) = st.maintenance.clone() else {
        return changed;
    };
    if told.response != MaintenanceResponse::Pending {
        return changed;
    }
    if told.uid.is_none() {
        changed |= try_start(cx, notice, st, out);
    }
    changed
}

/// After the walk: records the answer once the plan run for the notice has
/// ended (in the pass that ends it), and asks for another pass at once when
/// the plan that held the maintenance plan back has just ended.
pub(crate) fn after_walk(st: &mut InstanceStatus, now: Timestamp, out: &mut WalkOutput) -> bool {
    let waiting = st
        .maintenance
        .as_ref()
        .is_some_and(|m| m.response == MaintenanceResponse::Pending && m.uid.is_none());
    if waiting && running_plan(st).is_none() {
        wake(out, now);
    }
    answer(st)
}

fn answer(st: &mut InstanceStatus) -> bool {
    let Some(uid) = st
        .maintenance
        .as_ref()
        .filter(|m| m.response == MaintenanceResponse::Pending)
        .and_then(|m| m.uid.clone())
    else {
        return false;
    };
    let Some(ps) = st
        .plan_status
        .get(MAINTENANCE_PLAN)
        .filter(|p| p.uid.as_deref() == Some(uid.as_str()))
    else {
        return false;
    };
    let (response, message) = match ps.status() {
        S::Complete => (MaintenanceResponse::Accepted, String::new()),
        S::FatalError => (MaintenanceResponse::Declined, ps.message.clone()),
        _ => return false,
    };
    let Some(m) = st.maintenance.as_mut() else {
        return false;
    };
    m.response = response;
    m.message = message;
    true
}

fn try_start(
    cx: &AutoPlan<'_>,
    notice: &Notice,
    st: &mut InstanceStatus,
    out: &mut WalkOutput,
) -> bool {
    if let Some(running) = running_plan(st) {
        out.push_blocker(Blocker {
            plan: Some(MAINTENANCE_PLAN.to_string()),
            ..other(format!(
                "plan \"maintenance\" ({}) waits until plan {running:?} is COMPLETE or FATAL_ERROR",
                notice.describe()
            ))
        });
        return false;
    }
    let req = PlanRequest {
        plan: MAINTENANCE_PLAN.to_string(),
        uid: derived_uid(
            cx.instance,
            MAINTENANCE_PLAN,
            &format!("m{}", notice.start.as_second()),
        ),
        trigger: Trigger::Maintenance(notice.describe()),
        break_glass: false,
        consumes: Consumes::Nothing,
        parameters: Default::default(),
    };
    if cx.held(&req, st, out) {
        return false;
    }
    cx.start(st, &req, out);
    if let Some(m) = st.maintenance.as_mut() {
        m.uid = Some(req.uid);
    }
    true
}
