//! Holds: why a plan or a new step may not start now (suppressions,
//! maintenance windows), as blockers, and when to look again.

use jiff::Timestamp;
use kudo_api::{Blocker, BlockerKind, InstanceStatus, WindowKind};

use crate::model::EventType;
use crate::model::facts::{event, other};
use crate::plan::namespace_hold::Hold;
use crate::plan::select::{PlanRequest, Trigger};
use crate::plan::walk::WalkOutput;
use crate::plan::{suppression, windows};

pub(crate) fn wake(out: &mut WalkOutput, at: Timestamp) {
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

/// The window state a plan waits for, and the kind of window it is.
pub(crate) type PlanWindow<'w> = (
    WindowKind,
    &'w Result<windows::WindowState, crate::model::error::EngineError>,
);

fn window_blocker((kind, window): PlanWindow<'_>, out: &mut WalkOutput) -> Option<Blocker> {
    match window {
        Ok(windows::WindowState::Open { .. }) => None,
        Ok(windows::WindowState::Closed { opens_at }) => {
            if let Some(at) = opens_at {
                wake(out, *at);
            }
            Some(Blocker {
                kind: BlockerKind::MaintenanceWindow,
                message: match opens_at {
                    Some(at) => format!("{kind} maintenance window closed until {at}"),
                    None => format!(
                        "{kind} maintenance window closed: the Instance's windows and the \
                         manager's default windows do not overlap in the next two weeks"
                    ),
                },
                until: opens_at.map(crate::model::time),
                ..Default::default()
            })
        }
        Err(e) => Some(other(format!(
            "{e}; no step starts until spec.maintenanceWindows is fixed"
        ))),
    }
}

/// Why new steps of the running plan may not start now.
pub(crate) fn step_hold(
    manual: Option<&kudo_api::Suppression>,
    window: PlanWindow<'_>,
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

/// What holds a start besides the plan's own window.
#[derive(Clone, Copy, Default)]
pub(crate) struct StartHolds<'a> {
    /// The active manual suppression.
    pub manual: Option<&'a kudo_api::Suppression>,
    /// The namespace-wide suppression, when the namespace holds.
    pub namespace: Option<&'a Hold>,
}

/// Why the requested plan may not start now.
pub(crate) fn start_hold(
    req: &PlanRequest,
    instance: &kudo_api::Instance,
    st: &InstanceStatus,
    holds: StartHolds<'_>,
    window: PlanWindow<'_>,
    now: Timestamp,
    out: &mut WalkOutput,
) -> Option<Blocker> {
    let manual = holds.manual;
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
        && let Some(a) = suppression::active_auto(st.auto_suppression.as_ref(), now)
    {
        if let Some(u) = &a.until {
            wake(out, u.0);
        }
        return Some(with_plan(Blocker {
            kind: BlockerKind::Suppressed,
            message: suppression::describe_auto(a, crate::model::facts::identity_of(instance)),
            until: a.until.clone(),
            ..Default::default()
        }));
    }
    if req.trigger.is_automatic()
        && let Some(hold) = holds.namespace
    {
        return Some(with_plan(namespace_blocker(hold, st, out)));
    }
    if req.break_glass {
        return None;
    }
    window_blocker(window, out).map(with_plan)
}

/// The blocker of a plan the namespace holds; the Warning Event once, when
/// the hold (its count or names) is new to this Instance.
fn namespace_blocker(hold: &Hold, st: &InstanceStatus, out: &mut WalkOutput) -> Blocker {
    if let Some(at) = hold.lifts_at {
        wake(out, at);
    }
    if !st
        .blockers
        .iter()
        .any(|b| b.message.ends_with(&hold.message))
    {
        out.actions.push(event(
            EventType::Warning,
            "NamespaceSuppressed",
            hold.message.clone(),
        ));
    }
    Blocker {
        kind: BlockerKind::Suppressed,
        message: hold.message.clone(),
        until: hold.lifts_at.map(crate::model::time),
        ..Default::default()
    }
}
