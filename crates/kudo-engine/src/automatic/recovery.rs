//! Recovery (DC/OS' `recovery` plan): when an object a plan applied is
//! deleted, or a field kudo-manager owns is taken over by another field
//! manager, the engine starts the plan `recovery`, which is in no package:
//! one phase per drifted object, each re-applying the object from the render
//! the manager stored when a plan last applied it.
//!
//! Rules:
//! - recovery is on unless `spec.recovery: Disabled` or the manager runs
//!   with recovery off, and never while the Instance is being deleted or an
//!   OperatorVersion defines its own plan called `recovery`;
//! - while no plan runs and none is asked for, every drifted object is
//!   recovered; while a plan runs, objects its current and remaining steps
//!   do not touch (DC/OS' dirtied assets, [`crate::plan::assets`]) are
//!   recovered at once, beside it, and the others wait for it (it
//!   re-applies them anyway); the running plan stays the active one;
//! - any plan started overrides a running recovery, active or beside;
//! - drift found while recovery runs waits until that recovery ends;
//! - it is an automatic plan: suppressions, maintenance windows, pause and
//!   cancel hold it as any other;
//! - an object recovered within the last hour waits 30 s, 60 s, 2 min, ...
//!   (the first delay is configurable; capped at an hour) after its previous recovery, and from the third
//!   recovery in an hour on each recovery is a Warning Event, so another
//!   controller fighting kudo-manager over a field never makes a hot loop.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kudo_api::names::RECOVERY_PLAN;
use kudo_api::{
    AppliedObject, Blocker, BlockerKind, Instance, InstanceStatus, PhaseStatus, PlanStatus,
    RecoveryPolicy, RecoveryRecord, StepStatus, TaskStatus,
};

use crate::model::facts::{event, recovery_running, running_plan};
use crate::model::health::object_label;
use crate::model::{EngineConfig, EventType};
use crate::plan::assets::Dirtied;
use crate::plan::holds::wake;
use crate::plan::lifecycle::{AutoPlan, start_beside};
use crate::plan::select::{Consumes, PlanRequest, Trigger, derived_uid};
use crate::plan::walk::WalkOutput;

pub use crate::model::{Drift, DriftCause, REAPPLY};
pub use crate::plan::definition::plan_definition;

/// Default delay after the first recovery of an object in the last hour
/// ([`crate::model::EngineConfig::recovery_backoff`]); it doubles with each further one.
pub const BACKOFF_BASE: Duration = crate::model::RECOVERY_BACKOFF_BASE;
/// Longest delay between two recoveries of one object.
pub const BACKOFF_CAP: Duration = Duration::from_secs(3600);
/// Recoveries of one object within this long count towards its backoff.
pub const RECENT: Duration = Duration::from_secs(3600);
/// From this many recoveries of one object within [`RECENT`] on, each one
/// is a Warning Event.
pub const WARN_AFTER: usize = 3;

/// Whether drift of this Instance is recovered.
pub fn enabled(instance: &Instance, config: &EngineConfig) -> bool {
    config.recovery && instance.spec.recovery != Some(RecoveryPolicy::Disabled)
}

/// When recovery of `object` may start next; `None` when it may start now.
pub fn next_allowed(
    records: &[RecoveryRecord],
    object: &AppliedObject,
    base: Duration,
    now: Timestamp,
) -> Option<Timestamp> {
    let recent = recent_times(records, object, now);
    let last = *recent.last()?;
    let doublings = u32::try_from(recent.len() - 1).unwrap_or(u32::MAX).min(16);
    let delay = base.saturating_mul(1 << doublings).min(BACKOFF_CAP);
    let at = last
        .checked_add(SignedDuration::try_from(delay).ok()?)
        .ok()?;
    (at > now).then_some(at)
}

fn recent_times(
    records: &[RecoveryRecord],
    object: &AppliedObject,
    now: Timestamp,
) -> Vec<Timestamp> {
    let since = now
        .checked_sub(SignedDuration::try_from(RECENT).unwrap_or(SignedDuration::ZERO))
        .unwrap_or(now);
    records
        .iter()
        .filter(|r| &r.object == object)
        .flat_map(|r| &r.recovered_at)
        .map(|t| t.0)
        .filter(|t| *t > since)
        .collect()
}

/// The object a task of the recovery plan re-applies: its phase is named
/// after it, and `status.recoveries` holds every object a recovery started
/// for within the last hour.
pub fn object_of<'s>(status: &'s InstanceStatus, phase: &str) -> Option<&'s AppliedObject> {
    status
        .recoveries
        .iter()
        .map(|r| &r.object)
        .find(|o| object_label(&o.kind, o.namespace.as_deref(), &o.name) == phase)
}

/// A fresh recovery status: one phase per object, named after it (see
/// [`object_of`]).
fn fresh_status(objects: &[&Drift]) -> PlanStatus {
    PlanStatus {
        name: RECOVERY_PLAN.to_string(),
        phases: objects
            .iter()
            .map(|d| PhaseStatus {
                name: object_label(
                    &d.object.kind,
                    d.object.namespace.as_deref(),
                    &d.object.name,
                ),
                steps: vec![StepStatus {
                    name: REAPPLY.to_string(),
                    tasks: vec![TaskStatus {
                        name: REAPPLY.to_string(),
                        objects: vec![d.object.clone()],
                        ..TaskStatus::default()
                    }],
                    ..StepStatus::default()
                }],
                ..PhaseStatus::default()
            })
            .collect(),
        ..PlanStatus::default()
    }
}

/// Recovery in one decide pass: nothing while recovery runs; every
/// drifted object while no plan runs and none is asked for (`asked`);
/// beside a running plan, the objects it does not touch.
pub(crate) fn consider_in_pass(
    cx: &AutoPlan<'_>,
    drift: &[Drift],
    asked: bool,
    st: &mut InstanceStatus,
    out: &mut WalkOutput,
) -> bool {
    if drift.is_empty() || recovery_running(st) {
        return false;
    }
    match running_plan(st) {
        None if !asked => consider(cx, drift, None, st, out),
        None => false,
        Some(plan) => {
            let claims: Vec<Option<String>> = {
                let dirtied = Dirtied::of_status(cx.ov, &plan, st);
                drift
                    .iter()
                    .map(|d| dirtied.claim(&d.object).map(ToString::to_string))
                    .collect()
            };
            let running = Running {
                plan: &plan,
                claims: &claims,
            };
            consider(cx, drift, Some(&running), st, out)
        }
    }
}

/// The plan running while drift is considered, and which of its steps
/// claims each drifted object.
struct Running<'d> {
    /// Its name.
    plan: &'d str,
    /// For each drifted object, in order, the step that works on it
    /// ([`Dirtied::claim`]).
    claims: &'d [Option<String>],
}

/// Starts the recovery plan for the drifted objects whose backoff has
/// passed; whether the status changed. The caller has checked that
/// recovery does not run and that either no plan runs and none was asked
/// for, or `running` is the plan that runs: then only objects it does not
/// touch are recovered, beside it.
fn consider(
    cx: &AutoPlan<'_>,
    drift: &[Drift],
    running: Option<&Running<'_>>,
    st: &mut InstanceStatus,
    out: &mut WalkOutput,
) -> bool {
    if drift.is_empty()
        || !enabled(cx.instance, cx.config)
        || cx.instance.metadata.deletion_timestamp.is_some()
    {
        return false;
    }
    if cx.ov.spec.plan(RECOVERY_PLAN).is_some() {
        out.push_blocker(blocker(
            BlockerKind::Other,
            format!(
                "{} is not recovered: the OperatorVersion defines a plan named \"recovery\" \
                 of its own; run it, or rename it to let kudo-rs recover drift",
                drift[0]
            ),
            None,
        ));
        return false;
    }
    let mut due = Vec::new();
    for (i, d) in drift.iter().enumerate() {
        if let Some(r) = running
            && let Some(Some(claim)) = r.claims.get(i)
        {
            out.push_blocker(blocker(
                BlockerKind::Other,
                format!(
                    "{d}; recovery waits for plan {:?}, which works on it ({claim})",
                    r.plan
                ),
                None,
            ));
            continue;
        }
        match next_allowed(
            &st.recoveries,
            &d.object,
            cx.config.recovery_backoff,
            cx.now,
        ) {
            None => due.push(d),
            Some(at) => {
                wake(out, at);
                let times = recent_times(&st.recoveries, &d.object, cx.now).len();
                out.push_blocker(blocker(
                    BlockerKind::Backoff,
                    format!(
                        "{d}; recovery backs off until {at} (recovered {times} times in the last hour)"
                    ),
                    Some(at),
                ));
            }
        }
    }
    if due.is_empty() {
        return false;
    }
    let cause = summary(&due);
    let req = PlanRequest {
        plan: RECOVERY_PLAN.to_string(),
        uid: derived_uid(
            cx.instance,
            RECOVERY_PLAN,
            &cx.now.as_millisecond().to_string(),
        ),
        trigger: Trigger::Recovery(cause.clone()),
        break_glass: false,
        consumes: Consumes::Nothing,
        parameters: Default::default(),
    };
    if cx.held(&req, st, out) {
        return false;
    }
    st.plan_status
        .insert(RECOVERY_PLAN.to_string(), fresh_status(&due));
    match running {
        Some(_) => start_beside(cx.instance, st, &req, cx.config, cx.now, out),
        None => cx.start(st, &req, out),
    }
    out.actions.push(event(
        EventType::Normal,
        "DriftDetected",
        format!("{cause}; plan recovery re-applies it as its last plan left it"),
    ));
    record(st, &due, cx.now, out);
    true
}

/// Notes the recoveries just started, forgets those older than an hour,
/// and warns about objects that keep drifting.
fn record(st: &mut InstanceStatus, due: &[&Drift], now: Timestamp, out: &mut WalkOutput) {
    for d in due {
        let recent: Vec<_> = recent_times(&st.recoveries, &d.object, now)
            .into_iter()
            .map(crate::model::time)
            .collect();
        let count = recent.len() + 1;
        st.recoveries.retain(|r| r.object != d.object);
        let mut recovered_at = recent;
        recovered_at.push(crate::model::time(now));
        st.recoveries.push(RecoveryRecord {
            object: d.object.clone(),
            recovered_at,
            cause: d.to_string(),
        });
        if count >= WARN_AFTER {
            out.actions.push(event(
                EventType::Warning,
                "RecoveryRepeated",
                format!(
                    "{d}: recovery number {count} within an hour; another controller may be \
                     changing it back; the next recovery waits longer"
                ),
            ));
        }
    }
    st.recoveries
        .retain(|r| !recent_times(std::slice::from_ref(r), &r.object, now).is_empty());
}

fn summary(due: &[&Drift]) -> String {
    const SHOWN: usize = 3;
    let mut text = due
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if due.len() > SHOWN {
        text.push_str(&format!("; and {} more", due.len() - SHOWN));
    }
    text
}

fn blocker(kind: BlockerKind, message: String, until: Option<Timestamp>) -> Blocker {
    Blocker {
        kind,
        message,
        until: until.map(crate::model::time),
        plan: Some(RECOVERY_PLAN.to_string()),
        ..Blocker::default()
    }
}
