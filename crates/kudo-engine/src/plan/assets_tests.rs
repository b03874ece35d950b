use kudo_api::{
    OperatorVersion, OperatorVersionSpec, PhaseStatus, PlanStatus, StepStatus, Task, TaskStatus,
};

use super::*;

fn obj(kind: &str, name: &str) -> AppliedObject {
    AppliedObject {
        api_version: "apps/v1".into(),
        kind: kind.into(),
        namespace: Some("ns".into()),
        name: name.into(),
    }
}

/// An OperatorVersion whose plans have the shape of the statuses in `st`.
fn ov_of(st: &InstanceStatus) -> OperatorVersion {
    let task = |name: &str, kind: &str| Task {
        name: name.into(),
        kind: kind.into(),
        spec: Default::default(),
    };
    let plans = st
        .plan_status
        .iter()
        .map(|(name, ps)| {
            let plan = kudo_api::Plan {
                phases: ps
                    .phases
                    .iter()
                    .map(|ph| kudo_api::Phase {
                        name: ph.name.clone(),
                        strategy: None,
                        steps: ph
                            .steps
                            .iter()
                            .map(|s| kudo_api::Step {
                                name: s.name.clone(),
                                tasks: s.tasks.iter().map(|t| t.name.clone()).collect(),
                            })
                            .collect(),
                    })
                    .collect(),
                ..kudo_api::Plan::default()
            };
            (name.clone(), plan)
        })
        .collect();
    OperatorVersion::new(
        "zk-1",
        OperatorVersionSpec {
            tasks: vec![
                task("app", "Apply"),
                task("db", "Apply"),
                task("cache", "Apply"),
                task("wait", "Dummy"),
            ],
            plans,
            ..Default::default()
        },
    )
}

fn step(name: &str, status: S, tasks: &[(&str, Vec<AppliedObject>)]) -> StepStatus {
    StepStatus {
        name: name.into(),
        status: Some(status),
        tasks: tasks
            .iter()
            .map(|(t, objects)| TaskStatus {
                name: (*t).into(),
                objects: objects.clone(),
                ..TaskStatus::default()
            })
            .collect(),
        ..StepStatus::default()
    }
}

fn status(plan: &str, steps: Vec<StepStatus>) -> InstanceStatus {
    let mut st = InstanceStatus::default();
    st.plan_status.insert(
        plan.into(),
        PlanStatus {
            name: plan.into(),
            status: Some(S::InProgress),
            phases: vec![PhaseStatus {
                name: "main".into(),
                steps,
                ..PhaseStatus::default()
            }],
            ..PlanStatus::default()
        },
    );
    st
}

#[test]
fn a_completed_step_no_longer_claims_its_objects() {
    let st = status(
        "deploy",
        vec![
            step(
                "app",
                S::Complete,
                &[("app", vec![obj("Deployment", "web")])],
            ),
            step(
                "db",
                S::InProgress,
                &[("db", vec![obj("StatefulSet", "db")])],
            ),
        ],
    );
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "deploy", &st);
    assert_eq!(d.claim(&obj("Deployment", "web")), None);
    let claim = d.claim(&obj("StatefulSet", "db")).unwrap();
    assert_eq!((claim.phase, claim.step, claim.known), ("main", "db", true));
}

#[test]
fn a_remaining_step_claims_what_it_applied_last_time() {
    let st = status(
        "deploy",
        vec![
            step(
                "app",
                S::InProgress,
                &[("app", vec![obj("Deployment", "web")])],
            ),
            step(
                "cache",
                S::Pending,
                &[("cache", vec![obj("Deployment", "cache")])],
            ),
        ],
    );
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "deploy", &st);
    assert_eq!(d.claim(&obj("Deployment", "cache")).unwrap().step, "cache");
    assert_eq!(d.claim(&obj("Deployment", "other")), None);
}

#[test]
fn a_step_whose_objects_are_unknown_claims_everything() {
    let st = status(
        "deploy",
        vec![
            step(
                "app",
                S::InProgress,
                &[("app", vec![obj("Deployment", "web")])],
            ),
            step("db", S::Pending, &[("db", vec![])]),
        ],
    );
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "deploy", &st);
    let claim = d.claim(&obj("ConfigMap", "anything")).unwrap();
    assert_eq!((claim.step, claim.known), ("db", false));
    assert!(claim.to_string().contains("not known"), "{claim}");
    assert_eq!(d.claim_pod(Some("ns"), "unrelated-0").unwrap().step, "db");
}

#[test]
fn dummy_tasks_touch_nothing() {
    let st = status(
        "deploy",
        vec![step("pause", S::Pending, &[("wait", vec![])])],
    );
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "deploy", &st);
    assert_eq!(d.claim(&obj("Deployment", "web")), None);
}

#[test]
fn a_task_never_run_in_this_plan_is_known_from_another_plan() {
    let mut st = status("update", vec![step("db", S::Pending, &[("db", vec![])])]);
    let deploy = status(
        "deploy",
        vec![step(
            "db",
            S::Complete,
            &[("db", vec![obj("StatefulSet", "db")])],
        )],
    );
    st.plan_status.extend(deploy.plan_status);
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "update", &st);
    assert_eq!(d.claim(&obj("StatefulSet", "db")).unwrap().step, "db");
    assert_eq!(d.claim(&obj("Deployment", "web")), None);
}

#[test]
fn a_pod_belongs_to_the_workload_its_name_begins_with() {
    let st = status(
        "deploy",
        vec![step(
            "db",
            S::InProgress,
            &[("db", vec![obj("StatefulSet", "db"), obj("Pod", "single")])],
        )],
    );
    let ov = ov_of(&st);
    let d = Dirtied::of_status(&ov, "deploy", &st);
    assert!(d.claim_pod(Some("ns"), "db-2").is_some());
    assert!(d.claim_pod(Some("ns"), "single").is_some());
    assert!(d.claim_pod(Some("ns"), "dbx-0").is_none());
    assert!(d.claim_pod(Some("ns"), "web-5d9f-abcde").is_none());
    assert!(d.claim_pod(Some("other"), "db-2").is_none());
    assert!(d.claim_pod(None, "db-2").is_some());
}

#[test]
fn admission_facts_give_the_same_claims_as_the_status() {
    let st = status(
        "deploy",
        vec![
            step(
                "app",
                S::Complete,
                &[("app", vec![obj("Deployment", "web")])],
            ),
            step("db", S::Pending, &[("db", vec![obj("StatefulSet", "db")])]),
        ],
    );
    let facts = StatusFacts::from(&st);
    let ov = ov_of(&st);
    let a = Dirtied::of_status(&ov, "deploy", &st);
    let b = Dirtied::of_facts(&ov, "deploy", &facts);
    for o in [obj("Deployment", "web"), obj("StatefulSet", "db")] {
        assert_eq!(a.claim(&o), b.claim(&o));
    }
}
