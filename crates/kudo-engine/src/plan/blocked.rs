//! Blocked too long (Apollo): a plan held by a maintenance window or a
//! suppression for longer than [`crate::model::EngineConfig::blocked_warning_after`]
//! gets the condition `Blocked` (True, reason `HeldTooLong`, naming what
//! still holds it) and a `PlanBlockedTooLong` Warning Event; both once, and
//! again when what holds it changes. When nothing holds a plan that long
//! any more the condition turns False.
//!
//! How long a plan is held is kept on its blockers (`since`): a window or
//! suppression blocker of a plan that already had one in the previous pass
//! keeps that time, whatever the reason now, so a plan that waits first for
//! a window and then for a suppression counts as held all along.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kudo_api::{Blocker, BlockerKind, Condition};

/// The condition type.
pub const CONDITION: &str = "Blocked";
/// Its reason while a plan is held too long.
pub const HELD_TOO_LONG: &str = "HeldTooLong";
/// The Warning Event's reason.
pub const EVENT_REASON: &str = "PlanBlockedTooLong";

/// Blockers that count as holding a plan: windows and suppressions.
fn holds(b: &Blocker) -> bool {
    matches!(
        b.kind,
        BlockerKind::MaintenanceWindow | BlockerKind::Suppressed
    )
}

/// The plan a holding blocker concerns (a running plan's step hold names
/// none: it is the active plan's).
fn plan_of<'b>(b: &'b Blocker, active: Option<&'b str>) -> Option<&'b str> {
    b.plan.as_deref().or(active)
}

/// Stamps `since` on this pass's holding blockers: the earliest `since` of
/// the previous pass's holding blockers of the same plan, else `now`.
pub fn stamp_since(
    previous: &[Blocker],
    blockers: &mut [Blocker],
    active: Option<&str>,
    now: Timestamp,
) {
    for b in blockers.iter_mut().filter(|b| holds(b)) {
        let plan = plan_of(b, active).map(str::to_string);
        let earlier = previous
            .iter()
            .filter(|p| holds(p) && plan_of(p, active).map(str::to_string) == plan)
            .filter_map(|p| p.since.as_ref().map(|t| t.0))
            .min();
        b.since = Some(crate::model::time(earlier.unwrap_or(now)));
    }
}

/// What [`judge`] found.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// The conditions to write, when they change.
    pub conditions: Option<Vec<Condition>>,
    /// The Warning Event's message, when one is due.
    pub warning: Option<String>,
    /// When a plan held now will have been held too long.
    pub wake_at: Option<Timestamp>,
}

/// The `Blocked` condition for these blockers (stamped by
/// [`stamp_since`]) held for `after` or more at `now`.
pub fn judge(
    conditions: &[Condition],
    blockers: &[Blocker],
    active: Option<&str>,
    after: Duration,
    now: Timestamp,
) -> Verdict {
    let after = SignedDuration::try_from(after).unwrap_or(SignedDuration::MAX);
    let mut verdict = Verdict::default();
    // The plan held longest, and since when.
    let longest = blockers
        .iter()
        .filter(|b| holds(b))
        .filter_map(|b| Some((b.since.as_ref()?.0, plan_of(b, active))))
        .min_by_key(|(since, _)| *since);
    let due = longest.and_then(|(since, plan)| {
        let at = since.checked_add(after).ok()?;
        if at > now {
            verdict.wake_at = Some(at);
            return None;
        }
        Some((since, plan))
    });
    let current = conditions.iter().find(|c| c.type_ == CONDITION);
    let wanted = match due {
        Some((since, plan)) => {
            let why: Vec<&str> = blockers
                .iter()
                .filter(|b| holds(b) && plan_of(b, active) == plan)
                .map(|b| b.message.as_str())
                .collect();
            let message = format!(
                "plan {:?} has been held since {since}: {}",
                plan.unwrap_or("?"),
                why.join("; ")
            );
            Some(("True", HELD_TOO_LONG, message))
        }
        None if current.is_some_and(|c| c.status == "True") => {
            Some(("False", "NotBlocked", String::new()))
        }
        None => None,
    };
    let Some((status, reason, message)) = wanted else {
        return verdict;
    };
    if current.is_some_and(|c| c.status == status && c.reason == reason && c.message == message) {
        return verdict;
    }
    if status == "True" {
        verdict.warning = Some(message.clone());
    }
    let condition = Condition {
        type_: CONDITION.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: current
            .filter(|c| c.status == status)
            .map_or(crate::model::time(now), |c| c.last_transition_time.clone()),
        observed_generation: None,
    };
    let mut list: Vec<Condition> = conditions
        .iter()
        .filter(|c| c.type_ != CONDITION)
        .cloned()
        .collect();
    list.push(condition);
    verdict.conditions = Some(list);
    verdict
}

#[cfg(test)]
#[path = "blocked_tests.rs"]
mod tests;
