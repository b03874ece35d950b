use std::path::{Path, PathBuf};

use kudo_api::{
    AppliedObject, Blocker, BlockerKind, Instance, OperationRecord, OperatorVersion, PlanAction,
    PlanRun, TaskStatus,
};
use serde_json::{Value, json};

use super::*;
use kudo_engine::view::InstanceView;

use crate::webhook::wire;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/admission")
}

fn operator_versions() -> Vec<OperatorVersion> {
    let text = std::fs::read_to_string(fixtures().join("operatorversions.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn reviews() -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for folder in ["allow", "deny"] {
        for entry in std::fs::read_dir(fixtures().join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let body: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            out.push((path, body));
        }
    }
    assert!(out.len() > 30, "fixtures missing");
    out
}

/// Fills every status field the rules do not read, as a long-lived Instance
/// has them: history, conditions, operations, blockers, and per step
/// messages, timestamps, retries and tasks with applied objects.
pub(crate) fn with_records(object: &mut Value) {
    let Some(status) = object.get("status").filter(|s| s.is_object()) else {
        return;
    };
    let mut status: InstanceStatus = serde_json::from_value(status.clone()).unwrap();
    let at: kudo_api::Time = serde_json::from_value(json!("2026-11-20T10:00:00Z")).unwrap();
    status.conditions = serde_json::from_value(json!([{
        "type": "Ready", "status": "False", "reason": "PlanRunning",
        "message": "plan deploy runs", "lastTransitionTime": "2026-11-20T10:00:00Z"
    }]))
    .unwrap();
    status.history = (0..20)
        .map(|i| PlanRun {
            plan: "deploy".into(),
            uid: format!("run-{i}"),
            trigger: "parameters (MEMORY)".into(),
            started: at.clone(),
            finished: Some(at.clone()),
            result: Some(ExecutionStatus::Complete),
            message: "all steps complete".into(),
        })
        .collect();
    status.operations = vec![OperationRecord {
        id: "op-1".into(),
        action: PlanAction::Pause,
        applied_at: at.clone(),
        result: "paused".into(),
    }];
    status.blockers = vec![Blocker {
        kind: BlockerKind::Backoff,
        message: "retrying".into(),
        until: Some(at.clone()),
        ..Blocker::default()
    }];
    status.observed_generation = Some(7);
    for plan in status.plan_status.values_mut() {
        plan.message = "plan message".into();
        plan.started_at = Some(at.clone());
        plan.last_updated_timestamp = Some(at.clone());
        for phase in &mut plan.phases {
            phase.message = "phase message".into();
            phase.canary_approvals = Some(1);
            for step in &mut phase.steps {
                step.message = "waiting for pods".into();
                step.started_at = Some(at.clone());
                step.attempts = Some(2);
                step.tasks = vec![TaskStatus {
                    name: "app".into(),
                    status: step.status,
                    message: "applied".into(),
                    objects: (0..5)
                        .map(|i| AppliedObject {
                            api_version: "apps/v1".into(),
                            kind: "StatefulSet".into(),
                            namespace: Some("default".into()),
                            name: format!("zk-{i}"),
                        })
                        .collect(),
                }];
            }
        }
    }
    object["status"] = serde_json::to_value(status).unwrap();
}

fn full_instance(value: &Value) -> Option<Instance> {
    (!value.is_null()).then(|| serde_json::from_value(value.clone()).unwrap())
}

fn ov<'a>(ovs: &'a [OperatorVersion], instance: Option<&Instance>) -> Option<&'a OperatorVersion> {
    let name = instance?.spec.operator_version.name.as_deref()?;
    ovs.iter()
        .find(|o| o.metadata.name.as_deref() == Some(name))
}

fn verdicts(body: &Value, ovs: &[OperatorVersion]) -> (String, String) {
    let now = "2026-11-21T12:00:00Z".parse().unwrap();
    let full = (
        full_instance(&body["request"]["oldObject"]),
        full_instance(&body["request"]["object"]),
    );
    let text = serde_json::to_vec(body).unwrap();
    let request = wire::parse(&text).unwrap().request.unwrap();
    let views = (request.old_object, request.object);
    // Owned Instances through `review_at`, the decoded views through
    // `review_views`: the webhook's path must judge as the controller's.
    let by_owned = {
        let (old, new) = &full;
        match new.as_ref().or(old.as_ref()) {
            None => "no object".to_string(),
            Some(new) => format!(
                "{:?}",
                kudo_engine::admission::review_at(
                    old.as_ref(),
                    new,
                    ov(ovs, old.as_ref()),
                    ov(ovs, Some(new)),
                    Some(now),
                )
            ),
        }
    };
    let by_views = {
        let (old, new) = &views;
        let ov_of = |view: Option<&InstanceView<'_>>| {
            let name = view?.spec.operator_version.name.as_deref()?;
            ovs.iter()
                .find(|o| o.metadata.name.as_deref() == Some(name))
        };
        match new.as_deref().or(old.as_deref()) {
            None => "no object".to_string(),
            Some(new) => format!(
                "{:?}",
                kudo_engine::admission::review_views(
                    old.as_deref(),
                    new,
                    ov_of(old.as_deref()),
                    ov_of(Some(new)),
                    Some(now),
                )
            ),
        }
    };
    (by_owned, by_views)
}

#[test]
fn slim_and_full_statuses_get_the_same_verdicts() {
    let ovs = operator_versions();
    let mut with_status = 0;
    for (path, mut body) in reviews() {
        let (full, slim) = verdicts(&body, &ovs);
        assert_eq!(full, slim, "{}", path.display());
        if body["request"]["oldObject"].get("status").is_some() {
            with_status += 1;
        }
        for field in ["oldObject", "object"] {
            with_records(&mut body["request"][field]);
        }
        let (full_with_records, slim_with_records) = verdicts(&body, &ovs);
        assert_eq!(full_with_records, slim_with_records, "{}", path.display());
        assert_eq!(
            full,
            full_with_records,
            "{}: records changed the verdict",
            path.display()
        );
    }
    assert!(
        with_status >= 10,
        "too few fixtures with a status: {with_status}"
    );
}

#[test]
fn keeps_the_fields_the_rules_read() {
    let mut object = json!({
        "status": {
            "activePlan": {"name": "deploy", "uid": "u-1", "status": "IN_PROGRESS"},
            "planStatus": {"deploy": {
                "name": "deploy", "status": "IN_PROGRESS", "uid": "u-1",
                "phases": [{"name": "nodes", "status": "IN_PROGRESS", "steps": [
                    {"name": "node-1", "status": "COMPLETE"},
                    {"name": "node-2", "status": "IN_PROGRESS"}
                ]}]
            }},
            "appliedParameters": {"A": "1"},
            "appliedOperatorVersion": "zk-1",
            "lastPlanExecutionUid": "x",
            "lastSuccessful": {"operatorVersion": "zk-1", "parameters": {"A": "0"}},
            "autoSuppression": {"since": "2026-11-20T10:00:00Z", "reason": "deploy failed"}
        }
    });
    let read: InstanceStatus = serde_json::from_value(object["status"].clone()).unwrap();
    with_records(&mut object);
    let slim: WireStatus = serde_json::from_value(object["status"].clone()).unwrap();
    assert_eq!(InstanceStatus::from(slim), read);
}
