//! The plan operations' own checks: targets, the canary phase a bare
//! `continue` approves, and what a pause or resume says it will do.

use super::*;
use std::collections::BTreeMap;

use kudo_api::{
    Blocker, ExecutionStatus, OperatorVersionSpec, Phase, PhaseStatus, Plan, PlanStatus, Step,
};

fn ov() -> OperatorVersion {
    OperatorVersion::new(
        "app-1.0.0",
        OperatorVersionSpec {
            plans: BTreeMap::from([(
                "deploy".to_string(),
                Plan {
                    strategy: None,
                    phases: vec![Phase {
                        name: "main".into(),
                        strategy: None,
                        steps: vec![Step {
                            name: "web".into(),
                            tasks: vec![],
                        }],
                    }],
                    downtime: None,
                },
            )]),
            ..Default::default()
        },
    )
}

fn target(plan: Option<&str>, phase: Option<&str>, step: Option<&str>) -> PlanOperationArgs {
    PlanOperationArgs {
        instance: "app".into(),
        plan: plan.map(Into::into),
        phase: phase.map(Into::into),
        step: step.map(Into::into),
        reason: None,
    }
}

/// Instance `site` with `status`.
fn site(status: InstanceStatus) -> Instance {
    let mut instance = Instance::new("site", Default::default());
    instance.status = Some(status);
    instance
}

fn canary_waiting(plan: &str, phase: &str) -> Blocker {
    Blocker {
        kind: BlockerKind::CanaryApproval,
        message: "waits for canary approval".into(),
        plan: Some(plan.into()),
        phase: Some(phase.into()),
        ..Default::default()
    }
}

#[test]
fn unknown_step_is_refused_listing_the_known_ones() {
    let err = check_target(&ov(), &target(Some("deploy"), Some("main"), Some("db"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "phase main of plan deploy has no step db; its steps are: web"
    );
    assert!(check_target(&ov(), &target(Some("deploy"), Some("main"), Some("web"))).is_ok());
}

#[test]
fn unknown_plan_is_refused_listing_the_known_ones() {
    let err = check_plan_exists(&ov(), "backup").unwrap_err();
    assert!(err.to_string().contains("its plans are: deploy"), "{err}");
}

#[test]
fn target_description_defaults_to_the_active_plan() {
    assert_eq!(
        describe_target(&target(None, None, None), Some("deploy")),
        "plan deploy"
    );
    assert_eq!(
        describe_target(&target(None, Some("main"), Some("web")), None),
        "step main/web of the active plan"
    );
}

#[test]
fn a_bare_continue_approves_the_one_canary_phase_that_waits() {
    let status = InstanceStatus {
        blockers: vec![
            canary_waiting("deploy", "rollout"),
            canary_waiting("deploy", "rollout"),
        ],
        ..Default::default()
    };
    assert_eq!(
        waiting_canary_phase(&site(status.clone()), None, None, "default").unwrap(),
        ("deploy".to_string(), "rollout".to_string())
    );
}

#[test]
fn a_bare_continue_with_no_or_several_waiting_phases_says_which_there_are() {
    let none = waiting_canary_phase(&site(InstanceStatus::default()), None, None, "default")
        .unwrap_err()
        .to_string();
    assert!(
        none.contains("`kubectl kudo plan status --instance site -n default`"),
        "{none}"
    );
    let status = InstanceStatus {
        blockers: vec![canary_waiting("deploy", "a"), canary_waiting("deploy", "b")],
        ..Default::default()
    };
    let several = waiting_canary_phase(&site(status.clone()), None, None, "default").unwrap_err();
    assert_eq!(several.exit_code(), 2);
    assert!(
        several
            .to_string()
            .contains("(phase a of plan deploy, phase b of plan deploy)"),
        "{several}"
    );
}

fn with_plan(status: ExecutionStatus, paused: bool) -> InstanceStatus {
    InstanceStatus {
        plan_status: BTreeMap::from([(
            "deploy".to_string(),
            PlanStatus {
                status: Some(status),
                paused: paused.then_some(true),
                phases: vec![PhaseStatus {
                    name: "main".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )]),
        ..Default::default()
    }
}

#[test]
fn a_pause_says_whether_it_holds_this_run_or_the_next() {
    let resume = KudoCommand::new("plan resume", "app").flag("--plan", "deploy");
    let whole = target(Some("deploy"), None, None);
    let running = with_plan(ExecutionStatus::InProgress, false);
    assert_eq!(
        pause_effect(PlanAction::Pause, &running, None, &whole, "deploy", &resume).unwrap(),
        "plan deploy pauses: steps running now finish, no new step starts until \
         `kubectl kudo plan resume --instance app --plan deploy`"
    );
    let done = with_plan(ExecutionStatus::Complete, false);
    assert_eq!(
        pause_effect(PlanAction::Pause, &done, None, &whole, "deploy", &resume).unwrap(),
        "plan deploy is not running: its next run starts paused and runs no step until \
         `kubectl kudo plan resume --instance app --plan deploy`"
    );
}

#[test]
fn pausing_a_paused_plan_or_resuming_a_running_one_changes_nothing() {
    let resume = KudoCommand::new("plan resume", "app");
    let whole = target(Some("deploy"), None, None);
    let paused = with_plan(ExecutionStatus::Waiting, true);
    assert_eq!(
        pause_effect(PlanAction::Pause, &paused, None, &whole, "deploy", &resume).unwrap_err(),
        "plan deploy is paused already"
    );
    let running = with_plan(ExecutionStatus::InProgress, false);
    assert_eq!(
        pause_effect(
            PlanAction::Resume,
            &running,
            None,
            &whole,
            "deploy",
            &resume
        )
        .unwrap_err(),
        "plan deploy is not paused; nothing to resume"
    );
    assert!(pause_effect(PlanAction::Resume, &paused, None, &whole, "deploy", &resume).is_ok());
}

#[test]
fn a_bare_continue_before_the_gate_approves_the_first_canary_phase_ahead() {
    let mut ov = ov();
    let plan = ov.spec.plans.get_mut("deploy").unwrap();
    plan.phases.push(Phase {
        name: "rollout".into(),
        strategy: Some("serial-canary".into()),
        steps: vec![],
    });
    let mut status = with_plan(ExecutionStatus::InProgress, false);
    let ps = status.plan_status.get_mut("deploy").unwrap();
    ps.phases.push(PhaseStatus {
        name: "rollout".into(),
        status: Some(ExecutionStatus::Pending),
        canary_approvals: Some(1),
        ..Default::default()
    });
    assert_eq!(
        waiting_canary_phase(&site(status.clone()), Some(&ov), None, "default").unwrap(),
        ("deploy".to_string(), "rollout".to_string())
    );
    status.plan_status.get_mut("deploy").unwrap().phases[1].canary_approvals = Some(2);
    assert!(waiting_canary_phase(&site(status.clone()), Some(&ov), None, "default").is_err());
}

#[test]
fn a_resume_right_after_a_pause_the_manager_has_not_applied_yet_resumes() {
    let mut instance = Instance::new("app", Default::default());
    instance.spec.plan_operations.push(PlanOperation {
        id: "p1".into(),
        action: PlanAction::Pause,
        plan: Some("deploy".into()),
        ..Default::default()
    });
    instance.status = Some(with_plan(ExecutionStatus::Complete, false));
    let pending = pending_pause(&instance, "deploy", None);
    assert_eq!(pending, Some(PlanAction::Pause));
    let resume = KudoCommand::new("plan resume", "app");
    let status = instance.status.clone().unwrap();
    let whole = target(Some("deploy"), None, None);
    assert!(
        pause_effect(
            PlanAction::Resume,
            &status,
            pending,
            &whole,
            "deploy",
            &resume
        )
        .is_ok()
    );
    // Once recorded, the status says it.
    instance.status.as_mut().unwrap().operations_mark = Some("p1".into());
    assert_eq!(pending_pause(&instance, "deploy", None), None);
}

#[test]
fn a_bare_continue_right_after_install_approves_the_deploy_plan_ahead() {
    let mut ov = ov();
    ov.spec.plans.get_mut("deploy").unwrap().phases.push(Phase {
        name: "rollout".into(),
        strategy: Some("canary".into()),
        steps: vec![],
    });
    let mut instance = Instance::new("site", Default::default());
    instance.spec.operator_version.name = Some("app-1.0.0".into());
    assert_eq!(
        waiting_canary_phase(&instance, Some(&ov), None, "default").unwrap(),
        ("deploy".to_string(), "rollout".to_string())
    );
}
