//! decide: plan selection, strategies, retries, history (deletion and
//! cleanup: `cleanup.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kudo_api::{BlockerKind, ExecutionStatus as S, PlanAction, PlanExecution};
use kudo_engine::{Observed, TaskOutcome, TaskResult};
use support::*;

fn zk() -> Sim {
    Sim::new(
        instance("zk-1.0"),
        ov(
            "zk-1.0",
            vec![("deploy", simple_plan(3)), ("update", simple_plan(1))],
            vec![param("replicas", None), param("backup_now", Some("backup"))],
        ),
    )
}

#[test]
fn create_runs_deploy_to_complete_and_records_what_it_consumed() {
    let mut sim = zk();
    sim.set_params(&[("replicas", "3")]);
    sim.all_done();
    let st = sim.status();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    assert_eq!(st.applied_operator_version.as_deref(), Some("zk-1.0"));
    assert_eq!(st.applied_parameters.as_ref().unwrap()["replicas"], "3");
    let active = st.active_plan.as_ref().unwrap();
    assert_eq!(
        (active.name.as_str(), active.status),
        ("deploy", S::Complete)
    );
    assert_eq!(active.trigger.as_deref(), Some("create"));
    assert!(sim.has_event("PlanStarted", "Execution of plan deploy started"));
    assert!(sim.has_event(
        "PlanFinished",
        "Execution of plan deploy finished with status COMPLETE"
    ));
    assert_eq!(st.conditions.len(), 1);
    assert_eq!(
        (
            st.conditions[0].status.as_str(),
            st.conditions[0].reason.as_str()
        ),
        ("True", "ResourcesReady")
    );
    assert_eq!(st.history.len(), 1);
    assert_eq!(st.history[0].result, Some(S::Complete));
    assert_eq!(
        st.last_successful.as_ref().unwrap().operator_version,
        "zk-1.0"
    );
    assert!(st.blockers.is_empty());
}

#[test]
fn notes_of_done_tasks_stay_on_the_task_and_the_completed_step() {
    let mut sim = zk();
    sim.reconcile_with(|k| {
        let notes = if k.step() == "s1" {
            vec![kudo_engine::Note::new(
                "ApiVersionTranslated",
                "applied policy/v1beta1 PodDisruptionBudget as policy/v1",
            )]
        } else {
            Vec::new()
        };
        TaskResult {
            outcome: TaskOutcome::Done,
            objects: Vec::new(),
            notes,
        }
    });
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    let deploy = &sim.status().plan_status["deploy"];
    let steps: Vec<(&str, &str)> = deploy.phases[0]
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.message.as_str()))
        .collect();
    assert!(
        steps.contains(&(
            "s1",
            "applied policy/v1beta1 PodDisruptionBudget as policy/v1"
        )),
        "{steps:?}"
    );
    assert!(
        steps.iter().filter(|(_, m)| m.is_empty()).count() >= 1,
        "{steps:?}"
    );
}

#[test]
fn idle_instance_gets_its_status_back_unchanged_and_no_actions() {
    let mut sim = zk();
    sim.all_done();
    sim.advance(Duration::from_secs(3600));
    let d = sim.decide_once(&Observed::default());
    assert_eq!(&d.status, sim.status());
    assert!(d.actions.is_empty(), "{:?}", d.actions);
    assert_eq!(d.requeue_after, None);
}

#[test]
fn decide_is_deterministic() {
    let mut sim = zk();
    sim.reconcile(only_where(
        |k| k.step() == "s1",
        TaskOutcome::InProgress {
            message: "waiting".into(),
        },
    ));
    let a = sim.decide_once(&Observed::default());
    let b = sim.decide_once(&Observed::default());
    assert_eq!(a, b);
}

#[test]
fn serial_phase_runs_one_step_at_a_time() {
    let mut sim = zk();
    let d = sim.reconcile(|_| TaskOutcome::InProgress {
        message: "StatefulSet default/zk: 0 of 1 ready".into(),
    });
    assert_eq!(run_keys(&d), ["main/s0/t"]);
    assert_eq!(sim.step_status("deploy", "main", "s0"), S::InProgress);
    assert_eq!(sim.step_status("deploy", "main", "s1"), S::Pending);
    assert_eq!(sim.plan_status("deploy"), S::InProgress);
    let st = sim.status();
    assert_eq!(st.conditions[0].reason, "PlanInProgress");
    assert!(
        st.blockers.iter().any(
            |b| b.kind == BlockerKind::WaitingForResource && b.message.contains("0 of 1 ready")
        )
    );
    // once it is healthy the next step starts in the same reconcile
    let d = sim.reconcile(only_where(
        |k| k.step() == "s1",
        TaskOutcome::InProgress {
            message: "x".into(),
        },
    ));
    assert_eq!(run_keys(&d), ["main/s1/t"]);
    assert_eq!(sim.step_status("deploy", "main", "s0"), S::Complete);
}

#[test]
fn parallel_phase_starts_every_step_at_once() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", plan(None, &[phase("p", None, 3)]))],
            vec![],
        ),
    );
    let d = sim.reconcile(|_| TaskOutcome::InProgress {
        message: "x".into(),
    });
    assert_eq!(run_keys(&d), ["p/s0/t", "p/s1/t", "p/s2/t"]);
}

#[test]
fn serial_plan_starts_a_phase_only_after_the_previous_one_completes() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![(
                "deploy",
                plan(
                    Some("serial"),
                    &[phase("one", None, 1), phase("two", None, 1)],
                ),
            )],
            vec![],
        ),
    );
    let d = sim.reconcile(only_where(
        |k| k.phase() == "one",
        TaskOutcome::InProgress {
            message: "x".into(),
        },
    ));
    assert_eq!(run_keys(&d), ["one/s0/t"]);
    assert_eq!(sim.step_status("deploy", "two", "s0"), S::Pending);
}

#[test]
fn tasks_of_a_step_run_in_order() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![(
                "deploy",
                plan(
                    None,
                    &[PhaseDef {
                        name: "p",
                        strategy: None,
                        steps: 1,
                        tasks: &["a", "b"],
                    }],
                ),
            )],
            vec![],
        ),
    );
    let d = sim.reconcile(only_where(
        |k| k.task() == "a",
        TaskOutcome::InProgress {
            message: "x".into(),
        },
    ));
    assert_eq!(run_keys(&d), ["p/s0/a"]);
    sim.all_done();
    let tasks: Vec<_> = sim.ran.iter().map(|k| k.task()).collect();
    assert_eq!(tasks, ["a", "a", "b"]);
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn transient_error_retries_with_exponential_backoff_not_a_hot_loop() {
    let mut sim = zk();
    let d = sim.reconcile(|_| TaskOutcome::Transient {
        message: "conflict on StatefulSet zk".into(),
    });
    assert_eq!(d.requeue_after, Some(Duration::from_secs(2)));
    let step = &sim.status().plan_status["deploy"].phases[0].steps[0];
    assert_eq!((step.status(), step.attempts), (S::Error, Some(1)));
    assert_eq!(sim.plan_status("deploy"), S::Error);
    assert!(sim.has_event("StepFailed", "conflict on StatefulSet zk"));
    // before the retry time nothing runs
    sim.advance(Duration::from_secs(1));
    let d = sim.decide_once(&Observed::default());
    assert!(run_keys(&d).is_empty());
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1)));
    // at the retry time the task runs again; a second failure doubles the delay
    sim.advance(Duration::from_secs(1));
    let d = sim.reconcile(|_| TaskOutcome::Transient {
        message: "again".into(),
    });
    assert_eq!(d.requeue_after, Some(Duration::from_secs(4)));
    // and success resumes the plan
    sim.advance(Duration::from_secs(4));
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn backoff_is_capped() {
    let config = kudo_engine::EngineConfig::default();
    assert_eq!(
        kudo_engine::walk::backoff(&config, 1),
        Duration::from_secs(2)
    );
    assert_eq!(
        kudo_engine::walk::backoff(&config, 3),
        Duration::from_secs(8)
    );
    assert_eq!(kudo_engine::walk::backoff(&config, 40), config.max_backoff);
}

#[test]
fn fatal_error_stops_the_plan_and_suppresses_automatic_plans() {
    let mut sim = zk();
    sim.reconcile(only_where(
        |k| k.step() == "s1",
        TaskOutcome::Fatal {
            message: "template x: missing key".into(),
        },
    ));
    assert_eq!(sim.plan_status("deploy"), S::FatalError);
    assert_eq!(sim.step_status("deploy", "main", "s2"), S::Pending);
    let st = sim.status();
    assert_eq!(st.conditions[0].reason, "PlanInFatalError");
    assert!(st.plan_status["deploy"].message.contains("missing key"));
    assert!(st.auto_suppression.is_some());
    assert!(sim.has_event("PlanFinished", "finished with status FATAL_ERROR"));
    // FATAL is absorbing: further reconciles run nothing
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    assert_eq!(sim.plan_status("deploy"), S::FatalError);
    // a parameter change waits for the suppression
    sim.set_params(&[("replicas", "5")]);
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.kind == BlockerKind::Suppressed)
    );
    // clearing it lets the update run
    sim.operate(op("c1", PlanAction::ClearSuppression, None, None));
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
    assert_eq!(
        sim.status().history.last().unwrap().trigger,
        "parameter replicas"
    );
}

#[test]
fn parameter_change_runs_its_trigger_or_falls_back_to_update() {
    let mut sim = Sim::new(
        instance("zk-1.0"),
        ov(
            "zk-1.0",
            vec![
                ("deploy", simple_plan(1)),
                ("update", simple_plan(1)),
                ("backup", simple_plan(1)),
            ],
            vec![param("replicas", None), param("backup_now", Some("backup"))],
        ),
    );
    sim.all_done();
    sim.set_params(&[("backup_now", "yes")]);
    sim.all_done();
    assert_eq!(sim.plan_status("backup"), S::Complete);
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    sim.set_params(&[("replicas", "5")]);
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
}

#[test]
fn conflicting_triggers_do_not_start_and_say_why() {
    let mut sim = Sim::new(
        instance("zk-1.0"),
        ov(
            "zk-1.0",
            vec![
                ("deploy", simple_plan(1)),
                ("update", simple_plan(1)),
                ("backup", simple_plan(1)),
            ],
            vec![
                param("replicas", Some("update")),
                param("backup_now", Some("backup")),
            ],
        ),
    );
    sim.all_done();
    sim.set_params(&[("backup_now", "yes"), ("replicas", "4")]);
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    let msg = &sim.status().blockers[0].message;
    assert!(msg.contains("backup") && msg.contains("update"), "{msg}");
}

#[test]
fn upgrade_runs_the_first_of_upgrade_update_deploy() {
    let mut sim = zk();
    sim.all_done();
    sim.ov = ov(
        "zk-2.0",
        vec![("deploy", simple_plan(1)), ("upgrade", simple_plan(2))],
        vec![],
    );
    sim.edit(|s| s.operator_version.name = Some("zk-2.0".into()));
    sim.all_done();
    assert_eq!(sim.plan_status("upgrade"), S::Complete);
    assert_eq!(
        sim.status().applied_operator_version.as_deref(),
        Some("zk-2.0")
    );
    assert_eq!(
        sim.status()
            .active_plan
            .as_ref()
            .unwrap()
            .trigger
            .as_deref(),
        Some("upgrade")
    );
}

#[test]
fn manual_plan_execution_runs_once_per_uid() {
    let mut sim = zk();
    sim.all_done();
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some("update".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        })
    });
    sim.all_done();
    let ps = &sim.status().plan_status["update"];
    assert_eq!((ps.status(), ps.uid.as_deref()), (S::Complete, Some("u-1")));
    let runs = sim.ran.len();
    sim.all_done();
    assert_eq!(sim.ran.len(), runs, "the same uid does not run again");
    assert_eq!(sim.status().last_plan_execution_uid.as_deref(), Some("u-1"));
}

#[test]
fn request_arriving_while_another_plan_runs_is_queued_then_started() {
    let mut sim = zk();
    let slow = only_where(
        |k| k.plan() == "deploy",
        TaskOutcome::InProgress {
            message: "x".into(),
        },
    );
    sim.reconcile(&slow);
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some("update".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        })
    });
    sim.reconcile(&slow);
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.message.contains("waits until plan \"deploy\""))
    );
    let d = sim.all_done();
    assert_eq!(
        d.requeue_after,
        Some(Duration::ZERO),
        "look again at once for the queued plan"
    );
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    assert_eq!(sim.plan_status("update"), S::Complete);
}

#[test]
fn retriggering_the_running_plan_restarts_it_with_a_new_uid() {
    let mut sim = Sim::new(
        instance("zk-1.0"),
        ov(
            "zk-1.0",
            vec![("deploy", simple_plan(2))],
            vec![param("replicas", None)],
        ),
    );
    sim.reconcile(only_where(
        |k| k.step() == "s1",
        TaskOutcome::InProgress {
            message: "x".into(),
        },
    ));
    let first_uid = sim.status().plan_status["deploy"].uid.clone();
    sim.set_params(&[("replicas", "2")]);
    let d = sim.reconcile(|_| TaskOutcome::InProgress {
        message: "x".into(),
    });
    let ps = &sim.status().plan_status["deploy"];
    assert_ne!(ps.uid, first_uid);
    assert_eq!(
        ps.phases[0].steps[0].status(),
        S::InProgress,
        "restarted from the first step"
    );
    assert_eq!(run_keys(&d), ["main/s0/t"]);
    assert_eq!(sim.status().history.len(), 2);
    assert!(sim.status().history[0].message.contains("restarted"));
}

#[test]
fn missing_operator_version_is_a_blocker_naming_it() {
    let mut sim = zk();
    sim.all_done();
    let d = kudo_engine::decide(kudo_engine::Input {
        instance: &sim.inst,
        operator_version: None,
        observed: &Observed::default(),
        now: sim.now,
        config: &sim.config,
    });
    assert!(
        d.status.blockers[0]
            .message
            .contains("\"zk-1.0\" not found")
    );
    assert_eq!(
        d.status.plan_status,
        sim.status().plan_status,
        "plan statuses are kept"
    );
    assert!(d.actions.is_empty());
}

#[test]
fn last_updated_timestamp_moves_only_when_the_plan_status_changes() {
    let mut sim = zk();
    let waiting = |_: &kudo_engine::TaskKey| TaskOutcome::InProgress {
        message: "x".into(),
    };
    sim.reconcile(waiting);
    let t0 = sim.status().plan_status["deploy"]
        .last_updated_timestamp
        .clone();
    sim.advance(Duration::from_secs(30));
    sim.reconcile(waiting);
    assert_eq!(
        sim.status().plan_status["deploy"].last_updated_timestamp,
        t0
    );
    sim.all_done();
    assert_ne!(
        sim.status().plan_status["deploy"].last_updated_timestamp,
        t0
    );
}

#[test]
fn status_written_by_kudo_is_adopted_without_running_a_plan() {
    let mut sim = zk();
    let mut st = kudo_api::InstanceStatus::default();
    st.plan_status.insert(
        "deploy".into(),
        kudo_api::PlanStatus {
            name: "deploy".into(),
            status: Some(S::Complete),
            ..Default::default()
        },
    );
    sim.inst.status = Some(st);
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    assert_eq!(
        sim.status().applied_operator_version.as_deref(),
        Some("zk-1.0")
    );
    // Its completed deploy is the configuration it last completed with.
    let settled = sim.status().last_successful.clone().unwrap();
    assert_eq!(settled.operator_version, "zk-1.0");
    assert_eq!(settled.plan.as_deref(), Some("deploy"));
}

#[test]
fn a_kudo_status_with_a_failed_plan_is_adopted_without_a_completed_configuration() {
    let mut sim = zk();
    let mut st = kudo_api::InstanceStatus::default();
    for (plan, result) in [("deploy", S::Complete), ("update", S::FatalError)] {
        st.plan_status.insert(
            plan.into(),
            kudo_api::PlanStatus {
                name: plan.into(),
                status: Some(result),
                ..Default::default()
            },
        );
    }
    sim.inst.status = Some(st);
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    assert_eq!(
        sim.status().applied_operator_version.as_deref(),
        Some("zk-1.0")
    );
    assert_eq!(sim.status().last_successful, None);
}

#[test]
fn history_keeps_the_last_n_executions() {
    let mut sim = zk();
    sim.config.history_limit = 3;
    sim.all_done();
    for i in 0..5 {
        sim.set_params(&[("replicas", &i.to_string())]);
        sim.all_done();
    }
    let h = &sim.status().history;
    assert_eq!(h.len(), 3);
    assert!(
        h.iter()
            .all(|r| r.plan == "update" && r.result == Some(S::Complete))
    );
}
