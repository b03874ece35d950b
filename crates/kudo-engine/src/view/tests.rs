use std::collections::BTreeMap;

use kudo_api::{ActivePlan, PhaseStatus, PlanStatus, StepStatus};

use super::*;

fn status() -> InstanceStatus {
    let step = |name: &str, status| StepStatus {
        name: name.into(),
        status: Some(status),
        ..Default::default()
    };
    let deploy = PlanStatus {
        name: "deploy".into(),
        status: Some(ExecutionStatus::InProgress),
        uid: Some("u1".into()),
        phases: vec![
            PhaseStatus {
                name: "a".into(),
                steps: vec![step("a1", ExecutionStatus::Complete)],
                ..Default::default()
            },
            PhaseStatus {
                name: "b".into(),
                steps: vec![
                    step("b1", ExecutionStatus::InProgress),
                    step("b2", ExecutionStatus::Pending),
                ],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    InstanceStatus {
        plan_status: BTreeMap::from([
            ("deploy".to_string(), deploy),
            ("update".to_string(), PlanStatus::default()),
        ]),
        active_plan: Some(ActivePlan {
            name: "deploy".into(),
            ..Default::default()
        }),
        applied_parameters: Some(BTreeMap::from([("A".into(), "1".into())])),
        ..Default::default()
    }
}

#[test]
fn a_status_view_keeps_each_plans_phases_and_steps_in_order() {
    let status = status();
    let view = StatusView::from(&status);
    let deploy = view.plan("deploy").unwrap();
    assert_eq!(deploy.status, ExecutionStatus::InProgress);
    assert_eq!(deploy.uid.as_deref(), Some("u1"));
    let phases: Vec<&str> = view.phases_of(deploy).iter().map(|p| &*p.name).collect();
    assert_eq!(phases, ["a", "b"]);
    let b = &view.phases_of(deploy)[1];
    let steps: Vec<(&str, ExecutionStatus)> = view
        .steps_of(b)
        .iter()
        .map(|s| (&*s.name, s.status))
        .collect();
    assert_eq!(
        steps,
        [
            ("b1", ExecutionStatus::InProgress),
            ("b2", ExecutionStatus::Pending)
        ]
    );
    let update = view.plan("update").unwrap();
    assert_eq!(update.status, ExecutionStatus::NeverRun);
    assert!(view.phases_of(update).is_empty());
    assert!(view.plan("cleanup").is_none());
    assert_eq!(view.active_plan.as_deref(), Some("deploy"));
}

#[test]
fn an_owned_copy_equals_the_borrowed_view() {
    let mut instance = Instance::new("zk", InstanceSpec::default());
    instance.spec.parameters = Some(BTreeMap::from([("B".into(), "2".into())]));
    instance.spec.operator_version.name = Some("zk-1".into());
    instance.status = Some(status());
    let view = InstanceView::from(&instance);
    assert_eq!(view.ov_name(), "zk-1");
    assert_eq!(view.params().get("B"), Some("2"));
    // Views are invariant in their lifetime: compare what they print.
    assert_eq!(
        format!("{:?}", view.clone().into_owned()),
        format!("{view:?}")
    );
    assert!(InstanceView::without_status(&instance).status.is_none());
}

#[test]
fn specs_compare_equal_exactly_when_the_owned_specs_do() {
    let mut a = InstanceSpec::default();
    let b = a.clone();
    assert_eq!(SpecView::from(&a), SpecView::from(&b));
    a.parameters = Some(BTreeMap::new());
    assert_ne!(a, b);
    assert_ne!(SpecView::from(&a), SpecView::from(&b));
    let mut c = b.clone();
    c.operator_version.kind = Some("OperatorVersion".into());
    assert_ne!(SpecView::from(&c), SpecView::from(&b));
}

#[test]
fn a_view_without_steps_keeps_the_plans_and_their_uids() {
    let status = status();
    let view = StatusView::without_steps(&status);
    let deploy = view.plan("deploy").unwrap();
    assert_eq!(deploy.uid.as_deref(), Some("u1"));
    assert_eq!(deploy.status, ExecutionStatus::InProgress);
    assert!(view.phases_of(deploy).is_empty() && view.steps.is_empty());
    assert_eq!(view.applied_parameters.get("A"), Some("1"));
}
