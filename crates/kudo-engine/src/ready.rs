//! The `Ready` condition, computed as KUDO does while a deploy, update or
//! upgrade plan runs: `PlanInProgress`/Unknown while it runs,
//! `ResourcesReady`/True when it completes, `PlanInFatalError`/Unknown when
//! it fails. `lastTransitionTime` changes only when the status changes.
//! Exactly one condition is kept.

use kudo_api::names::{DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN};
use kudo_api::{Condition, ExecutionStatus as S};

/// The Ready condition after plan `plan` reached `status`; `None` when this
/// plan does not drive readiness (only deploy, update and upgrade do).
pub fn ready_condition(
    current: &[Condition],
    plan: &str,
    status: S,
    message: &str,
    now: jiff::Timestamp,
) -> Option<Vec<Condition>> {
    if ![DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN].contains(&plan) {
        return None;
    }
    let (value, reason) = match status {
        S::Complete => ("True", "ResourcesReady"),
        S::FatalError => ("Unknown", "PlanInFatalError"),
        s if s.is_running() => ("Unknown", "PlanInProgress"),
        _ => return None,
    };
    let previous = current.iter().find(|c| c.type_ == "Ready");
    let since = previous
        .filter(|c| c.status == value)
        .map_or(crate::time(now), |c| c.last_transition_time.clone());
    Some(vec![Condition {
        type_: "Ready".to_string(),
        status: value.to_string(),
        reason: reason.to_string(),
        message: if status == S::FatalError {
            message.to_string()
        } else {
            String::new()
        },
        last_transition_time: since,
        observed_generation: None,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn running_deploy_is_unknown_plan_in_progress() {
        let c =
            ready_condition(&[], "deploy", S::InProgress, "", ts("2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(
            (c[0].status.as_str(), c[0].reason.as_str()),
            ("Unknown", "PlanInProgress")
        );
    }

    #[test]
    fn transition_time_is_kept_while_status_is_unchanged() {
        let t0 = ts("2026-01-01T00:00:00Z");
        let t1 = ts("2026-01-01T00:05:00Z");
        let first = ready_condition(&[], "update", S::InProgress, "", t0).unwrap();
        let fatal = ready_condition(&first, "update", S::FatalError, "boom", t1).unwrap();
        assert_eq!(
            fatal[0].last_transition_time.0, t0,
            "Unknown -> Unknown keeps the time"
        );
        assert_eq!(fatal[0].reason, "PlanInFatalError");
        let done = ready_condition(&fatal, "deploy", S::Complete, "", t1).unwrap();
        assert_eq!(done[0].last_transition_time.0, t1);
        assert_eq!(done[0].status, "True");
    }

    #[test]
    fn custom_plans_do_not_touch_readiness() {
        assert!(
            ready_condition(&[], "backup", S::InProgress, "", ts("2026-01-01T00:00:00Z")).is_none()
        );
    }
}
