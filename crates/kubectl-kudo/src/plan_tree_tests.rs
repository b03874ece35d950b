//! Tests of the `plan status` text.
use super::*;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as MetaTime;
use kudo_api::{Blocker, BlockerKind, InstanceSpec, Phase, Plan, Step};
use pretty_assertions::assert_eq;

fn time(text: &str) -> Time {
    MetaTime(text.parse().unwrap())
}

fn ov() -> OperatorVersionSpec {
    let plan = |name: &str| Plan {
        strategy: Some("serial".into()),
        phases: vec![Phase {
            name: name.into(),
            strategy: Some("parallel".into()),
            steps: vec![Step {
                name: name.into(),
                tasks: vec![],
            }],
        }],
        downtime: None,
    };
    OperatorVersionSpec {
        plans: BTreeMap::from([
            ("deploy".to_string(), plan("deploy")),
            ("validate".to_string(), plan("validate")),
        ]),
        ..Default::default()
    }
}

fn instance(status: Option<InstanceStatus>) -> Instance {
    let mut spec = InstanceSpec::default();
    spec.operator_version.name = Some("test-1.0".into());
    let mut inst = Instance::new("test", spec);
    inst.metadata.namespace = Some("default".into());
    inst.status = status;
    inst
}

fn failed_deploy() -> InstanceStatus {
    let step = StepStatus {
        name: "deploy".into(),
        status: Some(ExecutionStatus::FatalError),
        message: "error detail".into(),
        ..Default::default()
    };
    let phase = PhaseStatus {
        name: "deploy".into(),
        status: Some(ExecutionStatus::FatalError),
        steps: vec![step],
        ..Default::default()
    };
    InstanceStatus {
        plan_status: BTreeMap::from([(
            "deploy".to_string(),
            PlanStatus {
                name: "deploy".into(),
                status: Some(ExecutionStatus::FatalError),
                last_updated_timestamp: Some(time("2019-10-17T01:01:01Z")),
                phases: vec![phase],
                ..Default::default()
            },
        )]),
        ..Default::default()
    }
}

#[test]
fn failed_plan_prints_in_kudo_layout() {
    let text = render(&instance(Some(failed_deploy())), Some(&ov()), false);
    let expected = "\
Plan(s) for \"test\" in namespace \"default\":
.
└── test (Operator-Version: \"test-1.0\" Active-Plan: \"deploy\")
    ├── Plan deploy (serial strategy) [FATAL_ERROR], last updated 2019-10-17 01:01:01
    │   └── Phase deploy (parallel strategy) [FATAL_ERROR]
    │       └── Step deploy [FATAL_ERROR] (error detail)
    └── Plan validate (serial strategy) [NOT ACTIVE]
        └── Phase validate (parallel strategy) [NOT ACTIVE]
            └── Step validate [NOT ACTIVE]
";
    assert_eq!(text, expected);
}

#[test]
fn task_lines_repeat_nothing_the_step_already_says() {
    let mut step = StepStatus {
        name: "app".into(),
        status: Some(ExecutionStatus::InProgress),
        message: "waiting".into(),
        tasks: vec![kudo_api::TaskStatus {
            name: "deploy".into(),
            message: "waiting".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    assert_eq!(
        step_tree(&step, false).to_string(),
        "Step app [IN_PROGRESS] (waiting)\n"
    );
    step.tasks[0].message = "Deployment web: 1 of 3 ready".into();
    assert!(
        step_tree(&step, false)
            .to_string()
            .contains("Task deploy [NEVER_RUN] (Deployment web")
    );
}

#[test]
fn instance_without_any_plan_run_says_so() {
    let text = render(&instance(None), Some(&ov()), false);
    assert_eq!(
        text,
        "No plan ever run for instance - nothing to show for instance test\n"
    );
}

#[test]
fn running_plan_wins_over_a_more_recently_updated_one() {
    let mut status = failed_deploy();
    status.plan_status.insert(
        "validate".into(),
        PlanStatus {
            status: Some(ExecutionStatus::InProgress),
            last_updated_timestamp: Some(time("2019-10-16T00:00:00Z")),
            ..Default::default()
        },
    );
    assert_eq!(active_plan_name(&status).as_deref(), Some("validate"));
}

#[test]
fn with_a_recovery_running_beside_it_the_active_plan_is_shown_and_both_run() {
    let running = || PlanStatus {
        status: Some(ExecutionStatus::InProgress),
        uid: Some("u".into()),
        ..Default::default()
    };
    let mut status = failed_deploy();
    status.plan_status.insert("validate".into(), running());
    status.plan_status.insert("recovery".into(), running());
    status.active_plan = Some(kudo_api::ActivePlan {
        name: "validate".into(),
        status: ExecutionStatus::InProgress,
        ..Default::default()
    });
    assert_eq!(active_plan_name(&status).as_deref(), Some("validate"));
    let text = render(&instance(Some(status)), Some(&ov()), false);
    assert!(text.contains("Active-Plan: \"validate\""), "{text}");
    assert!(text.contains("Plan validate"), "{text}");
    assert!(text.contains("Plan recovery"), "{text}");
    assert_eq!(text.matches("IN_PROGRESS").count(), 2, "{text}");
}

#[test]
fn blockers_are_listed_with_scope_and_end() {
    let mut status = failed_deploy();
    status.blockers = vec![Blocker {
        kind: BlockerKind::MaintenanceWindow,
        message: "maintenance window closed".into(),
        until: Some(time("2026-11-23T21:00:00Z")),
        plan: Some("deploy".into()),
        ..Default::default()
    }];
    let text = blockers_text("test", "default", &status, false);
    assert_eq!(
        text,
        "\nBlockers:\n  - MaintenanceWindow: maintenance window closed [plan deploy] (until 2026-11-23 21:00:00)\n"
    );
}

fn told(response: MaintenanceResponse, message: &str) -> InstanceMaintenance {
    InstanceMaintenance {
        nodes: vec!["n1".into()],
        start: time("2026-11-28T02:00:00Z"),
        end: time("2026-11-28T03:00:00Z"),
        response,
        message: message.into(),
        uid: None,
    }
}

#[test]
fn node_maintenance_is_shown_with_the_answer_and_its_message() {
    let mut status = failed_deploy();
    status.maintenance = Some(told(MaintenanceResponse::Accepted, ""));
    let text = render(&instance(Some(status.clone())), Some(&ov()), false);
    assert!(
        text.ends_with(
            "\nNode maintenance (see `kubectl kudo maintenance status`):\n  - node n1 \
             scheduled for maintenance 2026-11-28T02:00:00Z–2026-11-28T03:00:00Z, answered \
             Accepted\n"
        ),
        "{text}"
    );
    let declined = told(MaintenanceResponse::Declined, "quorum would be lost");
    assert_eq!(
        maintenance_line(&declined),
        "node n1 scheduled for maintenance 2026-11-28T02:00:00Z–2026-11-28T03:00:00Z, \
         answered Declined: quorum would be lost"
    );
    status.maintenance = None;
    let without = render(&instance(Some(status)), Some(&ov()), false);
    assert!(!without.contains("maintenance"), "{without}");
}

#[test]
fn ready_and_its_reason_are_shown_under_the_tree() {
    let mut status = failed_deploy();
    status.conditions = vec![kudo_api::Condition {
        type_: "Ready".into(),
        status: "False".into(),
        reason: "ResourceNotReady".into(),
        message: "Deployment default/web: progress deadline exceeded".into(),
        last_transition_time: MetaTime("2026-11-21T10:00:00Z".parse().unwrap()),
        observed_generation: None,
    }];
    let text = render(&instance(Some(status)), Some(&ov()), false);
    assert!(
        text.contains(
            "\nReady: False (ResourceNotReady: Deployment default/web: progress deadline exceeded)\n"
        ),
        "{text}"
    );
}

#[test]
fn a_plan_that_ran_before_shows_its_last_result_not_inactive() {
    let mut status = failed_deploy();
    status.plan_status.insert(
        "validate".into(),
        PlanStatus {
            name: "validate".into(),
            status: Some(ExecutionStatus::InProgress),
            uid: Some("v1".into()),
            last_updated_timestamp: Some(time("2019-10-18T00:00:00Z")),
            ..Default::default()
        },
    );
    status.plan_status.get_mut("deploy").unwrap().uid = Some("d1".into());
    let text = render(&instance(Some(status)), Some(&ov()), false);
    assert!(
        text.contains("Plan deploy (serial strategy) [FATAL_ERROR], last updated"),
        "{text}"
    );
    assert!(!text.contains("[NOT ACTIVE]"), "{text}");
}

#[test]
fn the_recovery_plan_shows_the_strategies_it_runs_with() {
    let mut status = failed_deploy();
    status.plan_status.insert(
        "recovery".into(),
        PlanStatus {
            name: "recovery".into(),
            status: Some(ExecutionStatus::Complete),
            uid: Some("r1".into()),
            phases: vec![PhaseStatus {
                name: "Deployment default/web".into(),
                status: Some(ExecutionStatus::Complete),
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let text = render(&instance(Some(status)), Some(&ov()), false);
    assert!(
        text.contains("Plan recovery (parallel strategy) [COMPLETE]"),
        "{text}"
    );
    assert!(
        text.contains("Phase Deployment default/web (serial strategy) [COMPLETE]"),
        "{text}"
    );
}
