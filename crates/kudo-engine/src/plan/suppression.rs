//! Suppression windows (Apollo): manual ones from spec, an automatic one in
//! status after a plan ends in FATAL_ERROR.

use jiff::Timestamp;
use kudo_api::hint::KudoCommand;
use kudo_api::{AutoSuppression, Suppression};

/// Whether a manual suppression covers `now`.
pub fn is_active(s: &Suppression, now: Timestamp) -> bool {
    s.from.as_ref().is_none_or(|f| f.0 <= now) && s.until.as_ref().is_none_or(|u| now < u.0)
}

/// The active manual suppression that lasts longest (open-ended first).
pub fn active_manual(suppressions: &[Suppression], now: Timestamp) -> Option<&Suppression> {
    suppressions
        .iter()
        .filter(|s| is_active(s, now))
        .max_by_key(|s| s.until.as_ref().map_or(Timestamp::MAX, |u| u.0))
}

/// The automatic suppression, if it has not expired.
pub fn active_auto(
    auto_suppression: Option<&AutoSuppression>,
    now: Timestamp,
) -> Option<&AutoSuppression> {
    auto_suppression.filter(|a| a.until.as_ref().is_none_or(|u| now < u.0))
}

/// Human description of a manual suppression.
pub fn describe_manual(s: &Suppression) -> String {
    format!(
        "suppressed {} by {}: {}",
        s.until.as_ref().map_or(
            "until removed from spec.suppressions".to_string(),
            |u| format!("until {}", u.0)
        ),
        s.by.as_deref().unwrap_or("unknown"),
        s.reason
    )
}

/// Human description of the automatic suppression of the Instance
/// `(namespace, name)`, with the commands that end it.
pub fn describe_auto(a: &AutoSuppression, (namespace, name): (&str, &str)) -> String {
    format!(
        "automatically suppressed {} after a failure: {} (clear it with {}, or roll back with {})",
        a.until
            .as_ref()
            .map_or("until cleared".to_string(), |u| format!("until {}", u.0)),
        a.reason,
        KudoCommand::new("suppress clear", name).namespace(namespace),
        KudoCommand::new("rollback", name).namespace(namespace),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{InstanceSpec, InstanceStatus};

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn manual_suppression_is_active_between_from_and_until() {
        let s = Suppression {
            from: Some(crate::model::time(ts("2026-01-01T10:00:00Z"))),
            until: Some(crate::model::time(ts("2026-01-01T12:00:00Z"))),
            reason: "freeze".into(),
            by: Some("ops".into()),
        };
        assert!(!is_active(&s, ts("2026-01-01T09:59:59Z")));
        assert!(is_active(&s, ts("2026-01-01T10:00:00Z")));
        assert!(!is_active(&s, ts("2026-01-01T12:00:00Z")));
    }

    #[test]
    fn open_ended_manual_suppression_wins_as_longest() {
        let spec = InstanceSpec {
            suppressions: vec![
                Suppression {
                    until: Some(crate::model::time(ts("2026-01-02T00:00:00Z"))),
                    reason: "short".into(),
                    ..Default::default()
                },
                Suppression {
                    reason: "forever".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let active = active_manual(&spec.suppressions, ts("2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(active.reason, "forever");
    }

    #[test]
    fn automatic_suppression_expires() {
        let status = InstanceStatus {
            auto_suppression: Some(AutoSuppression {
                since: crate::model::time(ts("2026-01-01T00:00:00Z")),
                until: Some(crate::model::time(ts("2026-01-01T01:00:00Z"))),
                reason: "deploy failed".into(),
                plan: None,
                uid: None,
            }),
            ..Default::default()
        };
        assert!(
            active_auto(status.auto_suppression.as_ref(), ts("2026-01-01T00:30:00Z")).is_some()
        );
        assert!(
            active_auto(status.auto_suppression.as_ref(), ts("2026-01-01T01:00:00Z")).is_none()
        );
    }
}
