//! The `Ready` condition, computed as KUDO does while a deploy, update or
//! upgrade plan runs: `PlanInProgress`/Unknown while it runs,
//! `ResourcesReady`/True when it completes, `PlanInFatalError`/Unknown when
//! it fails. `lastTransitionTime` changes only when the status changes.
//! Exactly one condition is kept.

use kudo_api::names::{DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN};
use kudo_api::{AppliedObject, Condition, ExecutionStatus as S, InstanceStatus};

use crate::model::health::{Health, health_can_change};

const READY_DRIVING_PLANS: [&str; 3] = [DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN];

/// The Ready condition after plan `plan` reached `status`; `None` when this
/// plan does not drive readiness (only deploy, update and upgrade do).
pub fn ready_condition(
    current: &[Condition],
    plan: &str,
    status: S,
    message: &str,
    now: jiff::Timestamp,
) -> Option<Vec<Condition>> {
    if !READY_DRIVING_PLANS.contains(&plan) {
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
        .map_or(crate::model::time(now), |c| c.last_transition_time.clone());
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

/// `ready` (the Ready condition alone) with the other conditions of
/// `current` after it (`Blocked`), so writing Ready keeps them.
pub fn keep_others(current: &[Condition], ready: Vec<Condition>) -> Vec<Condition> {
    let mut out = ready;
    out.extend(current.iter().filter(|c| c.type_ != "Ready").cloned());
    out
}

/// After a plan: the objects whose health `Ready` follows. They are what
/// the latest completed deploy, update or upgrade applied, of kinds whose
/// health can change; none while any plan runs (`PlanInProgress` stands)
/// or when that plan failed (`PlanInFatalError` stands).
pub fn workload(status: &InstanceStatus) -> Vec<&AppliedObject> {
    let running = status
        .plan_status
        .values()
        .any(|p| p.status.is_some_and(S::is_running));
    if running {
        return Vec::new();
    }
    let latest = status
        .plan_status
        .values()
        .filter(|p| READY_DRIVING_PLANS.contains(&p.name.as_str()))
        .filter(|p| p.status.is_some())
        .max_by_key(|p| {
            p.finished_at
                .as_ref()
                .or(p.last_updated_timestamp.as_ref())
                .map(|t| t.0)
        });
    let Some(plan) = latest.filter(|p| p.status == Some(S::Complete)) else {
        return Vec::new();
    };
    let mut objects: Vec<&AppliedObject> = plan
        .phases
        .iter()
        .flat_map(|ph| &ph.steps)
        .flat_map(|st| &st.tasks)
        .flat_map(|t| &t.objects)
        .filter(|o| health_can_change(&o.api_version, &o.kind))
        .collect();
    objects.sort();
    objects.dedup();
    objects
}

/// The Ready condition from the health of the [`workload`]:
/// `True/ResourcesReady` when every object is healthy, else
/// `False/ResourceNotReady` naming the first that is not and why. `None`
/// when the condition would not change (no status write).
pub fn workload_condition(
    current: &[Condition],
    health: &[Health],
    now: jiff::Timestamp,
) -> Option<Vec<Condition>> {
    let first_unhealthy = health.iter().find_map(|h| match h {
        Health::Healthy => None,
        Health::Progressing(m) | Health::Failed(m) => Some(m.as_str()),
    });
    let (value, reason, message) = match first_unhealthy {
        None => ("True", "ResourcesReady", ""),
        Some(why) => ("False", "ResourceNotReady", why),
    };
    let previous = current.iter().find(|c| c.type_ == "Ready");
    if previous.is_some_and(|c| c.status == value && c.reason == reason && c.message == message)
        && current.iter().filter(|c| c.type_ == "Ready").count() == 1
    {
        return None;
    }
    let since = previous
        .filter(|c| c.status == value)
        .map_or(crate::model::time(now), |c| c.last_transition_time.clone());
    let ready = vec![Condition {
        type_: "Ready".to_string(),
        status: value.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time: since,
        observed_generation: None,
    }];
    Some(keep_others(current, ready))
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

    fn ready(value: &str, reason: &str, message: &str, at: &str) -> Vec<Condition> {
        vec![Condition {
            type_: "Ready".into(),
            status: value.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: crate::model::time(ts(at)),
            observed_generation: None,
        }]
    }

    #[test]
    fn an_unhealthy_object_turns_ready_false_naming_it_and_why() {
        let current = ready("True", "ResourcesReady", "", "2026-01-01T00:00:00Z");
        let health = [
            Health::Healthy,
            Health::Progressing("Deployment ns/web: 1 of 2 updated replicas available".into()),
            Health::Failed("Job ns/x: failed".into()),
        ];
        let c = workload_condition(&current, &health, ts("2026-01-01T01:00:00Z")).unwrap();
        assert_eq!(
            (
                c[0].status.as_str(),
                c[0].reason.as_str(),
                c[0].message.as_str()
            ),
            (
                "False",
                "ResourceNotReady",
                "Deployment ns/web: 1 of 2 updated replicas available"
            )
        );
        assert_eq!(c[0].last_transition_time.0, ts("2026-01-01T01:00:00Z"));
    }

    #[test]
    fn nothing_changes_when_the_verdict_is_the_same() {
        let current = ready("True", "ResourcesReady", "", "2026-01-01T00:00:00Z");
        assert!(
            workload_condition(&current, &[Health::Healthy], ts("2026-01-02T00:00:00Z")).is_none()
        );
        let not = ready(
            "False",
            "ResourceNotReady",
            "Pod ns/p: not ready",
            "2026-01-01T00:00:00Z",
        );
        let again = [Health::Progressing("Pod ns/p: not ready".into())];
        assert!(workload_condition(&not, &again, ts("2026-01-02T00:00:00Z")).is_none());
        // Another reason keeps the transition time (status stays False).
        let other = [Health::Progressing("Pod ns/p: still pulling".into())];
        let c = workload_condition(&not, &other, ts("2026-01-02T00:00:00Z")).unwrap();
        assert_eq!(c[0].last_transition_time.0, ts("2026-01-01T00:00:00Z"));
    }

    #[test]
    fn recovered_objects_turn_ready_true_again() {
        let not = ready(
            "False",
            "ResourceNotReady",
            "Pod ns/p: not ready",
            "2026-01-01T00:00:00Z",
        );
        let c = workload_condition(&not, &[Health::Healthy], ts("2026-01-02T00:00:00Z")).unwrap();
        assert_eq!(
            (c[0].status.as_str(), c[0].reason.as_str()),
            ("True", "ResourcesReady")
        );
    }

    fn status_with(plans: serde_json::Value) -> InstanceStatus {
        serde_json::from_value(serde_json::json!({ "planStatus": plans })).unwrap()
    }

    fn plan(
        name: &str,
        status: &str,
        finished: &str,
        objects: serde_json::Value,
    ) -> serde_json::Value {
        serde_json::json!({"name": name, "status": status, "finishedAt": finished,
            "phases": [{"name": "p", "steps": [{"name": "s", "tasks": [{"name": "t", "objects": objects}]}]}]})
    }

    #[test]
    fn the_workload_is_what_the_latest_completed_deploy_update_or_upgrade_applied() {
        let objects = serde_json::json!([
            {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"},
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "cfg"},
        ]);
        let older = serde_json::json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "ns", "name": "old"}]);
        let status = status_with(serde_json::json!({
            "deploy": plan("deploy", "COMPLETE", "2026-01-01T00:00:00Z", older),
            "update": plan("update", "COMPLETE", "2026-01-02T00:00:00Z", objects),
            "backup": plan("backup", "COMPLETE", "2026-01-03T00:00:00Z", serde_json::json!([])),
        }));
        let names: Vec<&str> = workload(&status).iter().map(|o| o.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["web"],
            "ConfigMaps cannot turn unhealthy; backup does not drive Ready"
        );
    }

    #[test]
    fn no_workload_while_a_plan_runs_or_after_a_failed_one() {
        let objects = serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"}]);
        let running = status_with(serde_json::json!({
            "deploy": plan("deploy", "COMPLETE", "2026-01-01T00:00:00Z", objects.clone()),
            "backup": plan("backup", "IN_PROGRESS", "2026-01-02T00:00:00Z", serde_json::json!([])),
        }));
        assert!(workload(&running).is_empty());
        let failed = status_with(serde_json::json!({
            "deploy": plan("deploy", "COMPLETE", "2026-01-01T00:00:00Z", objects),
            "update": plan("update", "FATAL_ERROR", "2026-01-02T00:00:00Z", serde_json::json!([])),
        }));
        assert!(workload(&failed).is_empty());
    }

    #[test]
    fn custom_plans_do_not_touch_readiness() {
        assert!(
            ready_condition(&[], "backup", S::InProgress, "", ts("2026-01-01T00:00:00Z")).is_none()
        );
    }
}
