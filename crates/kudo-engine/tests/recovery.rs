//! decide with drift: the recovery plan, its holds and its backoff.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kudo_api::{AppliedObject, BlockerKind, ExecutionStatus as S, PlanAction, RecoveryPolicy};
use kudo_engine::recovery::{Drift, DriftCause};
use kudo_engine::{TaskKey, TaskOutcome};
use support::*;

fn web() -> AppliedObject {
    AppliedObject {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: "web".into(),
    }
}

fn config_map() -> AppliedObject {
    AppliedObject {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: "conf".into(),
    }
}

fn deleted(object: AppliedObject) -> Drift {
    Drift {
        object,
        cause: DriftCause::Deleted,
    }
}

/// deploy (one step) and update (one step) have run and completed.
fn deployed() -> Sim {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("update", simple_plan(1))],
            vec![param("X", None)],
        ),
    );
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    sim
}

fn recovery_keys(sim: &Sim) -> Vec<String> {
    sim.ran
        .iter()
        .filter(|k| k.plan() == "recovery")
        .map(|k| format!("{}/{}/{}", k.phase(), k.step(), k.task()))
        .collect()
}

#[test]
fn a_deleted_object_starts_recovery_with_one_phase_per_object_and_completes() {
    let mut sim = deployed();
    let last_successful = sim.status().last_successful.clone();
    sim.drift = vec![deleted(web()), deleted(config_map())];
    sim.all_done();
    assert_eq!(
        recovery_keys(&sim),
        [
            "Deployment default/web/reapply/reapply",
            "ConfigMap default/conf/reapply/reapply"
        ]
    );
    assert_eq!(sim.plan_status("recovery"), S::Complete);
    let ps = &sim.status().plan_status["recovery"];
    let names: Vec<_> = ps.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Deployment default/web", "ConfigMap default/conf"]);
    assert_eq!(
        kudo_engine::recovery::object_of(sim.status(), "ConfigMap default/conf"),
        Some(&config_map()),
        "the executor finds what a phase re-applies"
    );
    let run = sim.status().history.last().unwrap();
    assert_eq!(run.plan, "recovery");
    assert_eq!(run.result, Some(S::Complete));
    assert_eq!(
        run.trigger,
        "Deployment default/web deleted; ConfigMap default/conf deleted"
    );
    assert!(sim.has_event("DriftDetected", "Deployment default/web deleted"));
    assert_eq!(
        sim.status().last_successful,
        last_successful,
        "recovery restores the configuration, it does not record a new one"
    );
    assert_eq!(sim.status().recoveries.len(), 2);
}

#[test]
fn a_changed_field_names_the_field_and_the_manager_that_took_it() {
    let mut sim = deployed();
    let before = sim.status().plan_status["deploy"].clone();
    sim.drift = vec![Drift {
        object: web(),
        cause: DriftCause::Changed {
            manager: Some("kubectl-edit".into()),
            fields: vec![".spec.replicas".into()],
        },
    }];
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    assert_eq!(
        sim.status().plan_status["deploy"],
        before,
        "deploy's record stays"
    );
    assert_eq!(
        sim.status()
            .active_plan
            .as_ref()
            .unwrap()
            .trigger
            .as_deref(),
        Some("Deployment default/web: .spec.replicas changed by kubectl-edit")
    );
}

/// The plans' tasks apply objects not known yet (they reported none), so
/// a running plan may touch anything.
fn touching_anything(sim: &mut Sim) {
    for t in &mut sim.ov.spec.tasks {
        t.kind = "Apply".into();
    }
}

#[test]
fn recovery_of_what_a_running_plan_may_touch_waits_and_starts_when_it_ends() {
    let mut sim = deployed();
    touching_anything(&mut sim);
    sim.set_params(&[("X", "2")]);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(sim.plan_status("update"), S::InProgress);
    sim.drift = vec![deleted(web())];
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert!(recovery_keys(&sim).is_empty(), "update may touch web");
    assert!(!sim.status().plan_status.contains_key("recovery"));
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
    // The next reconcile (the manager looks again once nothing runs).
    sim.all_done();
    assert_eq!(sim.plan_status("recovery"), S::Complete);
}

#[test]
fn a_new_plan_request_overrides_a_running_recovery() {
    let mut sim = deployed();
    sim.drift = vec![deleted(web())];
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    sim.drift.clear();
    sim.set_params(&[("X", "3")]);
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
    assert_eq!(sim.plan_status("recovery"), S::FatalError);
    assert!(
        sim.status().plan_status["recovery"]
            .message
            .contains("update overrides it")
    );
    assert!(
        sim.status().auto_suppression.is_none(),
        "an overridden recovery is no failure"
    );
}

#[test]
fn an_object_that_keeps_drifting_backs_off_exponentially_and_warns_from_the_third_time() {
    let mut sim = deployed();
    sim.drift = vec![deleted(web())];
    sim.all_done();
    assert_eq!(recovery_keys(&sim).len(), 1);

    // Drifted again at once: held for 30 s, with a blocker and a wake-up.
    let d = sim.all_done();
    assert_eq!(recovery_keys(&sim).len(), 1);
    let b = &sim.status().blockers[0];
    assert_eq!(b.kind, BlockerKind::Backoff);
    assert!(b.message.contains("recovered 1 times"), "{}", b.message);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(30)));

    sim.advance(Duration::from_secs(30));
    sim.all_done();
    assert_eq!(recovery_keys(&sim).len(), 2);
    let d = sim.all_done();
    assert_eq!(d.requeue_after, Some(Duration::from_secs(60)), "doubled");
    assert!(!sim.events.iter().any(|(r, _)| r == "RecoveryRepeated"));

    sim.advance(Duration::from_secs(60));
    sim.all_done();
    assert_eq!(recovery_keys(&sim).len(), 3);
    assert!(sim.has_event("RecoveryRepeated", "recovery number 3 within an hour"));
    let d = sim.all_done();
    assert_eq!(d.requeue_after, Some(Duration::from_secs(120)));

    // An hour later the count starts again.
    sim.advance(Duration::from_secs(3700));
    sim.all_done();
    assert_eq!(recovery_keys(&sim).len(), 4);
    assert_eq!(sim.status().recoveries[0].recovered_at.len(), 1);
}

#[test]
fn spec_recovery_disabled_or_the_manager_flag_leaves_drift_alone() {
    let mut sim = deployed();
    sim.edit(|s| s.recovery = Some(RecoveryPolicy::Disabled));
    sim.drift = vec![deleted(web())];
    sim.all_done();
    assert!(!sim.status().plan_status.contains_key("recovery"));

    let mut sim = deployed();
    sim.config.recovery = false;
    sim.drift = vec![deleted(web())];
    sim.all_done();
    assert!(!sim.status().plan_status.contains_key("recovery"));
}

#[test]
fn a_manual_suppression_holds_recovery_with_a_blocker() {
    let mut sim = deployed();
    let until = sim
        .now
        .checked_add(jiff::SignedDuration::from_hours(1))
        .unwrap();
    sim.edit(|s| {
        s.suppressions.push(kudo_api::Suppression {
            until: Some(time(until)),
            reason: "freeze".into(),
            ..Default::default()
        })
    });
    sim.drift = vec![deleted(web())];
    let d = sim.all_done();
    assert!(!sim.status().plan_status.contains_key("recovery"));
    let b = &sim.status().blockers[0];
    assert_eq!(b.kind, BlockerKind::Suppressed);
    assert!(b.message.contains("plan \"recovery\""), "{}", b.message);
    assert!(d.requeue_after.is_some());
}

#[test]
fn the_recovery_plan_can_be_paused_and_cancelled_like_any_plan() {
    let mut sim = deployed();
    sim.drift = vec![deleted(web()), deleted(config_map())];
    sim.reconcile(|k: &TaskKey| {
        if k.phase().starts_with("Deployment") {
            TaskOutcome::InProgress {
                message: "rolling".into(),
            }
        } else {
            TaskOutcome::Done
        }
    });
    let mut pause = op("p1", PlanAction::Pause, None, None);
    pause.plan = Some("recovery".into());
    sim.operate(pause);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(
        sim.status().operations[0].result,
        "plan \"recovery\" paused: steps running now finish, no new step starts"
    );
    let mut cancel = op("c1", PlanAction::Cancel, None, None);
    cancel.plan = Some("recovery".into());
    sim.operate(cancel);
    sim.drift.clear();
    sim.all_done();
    assert_eq!(sim.plan_status("recovery"), S::FatalError);
    assert!(
        sim.status().plan_status["recovery"]
            .message
            .contains("cancelled by alice")
    );
}

#[test]
fn an_operator_version_with_its_own_recovery_plan_is_not_overridden() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("recovery", simple_plan(1))],
            vec![],
        ),
    );
    sim.all_done();
    sim.drift = vec![deleted(web())];
    sim.all_done();
    assert_eq!(sim.plan_status("recovery"), S::NeverRun);
    assert!(
        sim.status().blockers[0]
            .message
            .contains("defines a plan named \"recovery\""),
    );
}

fn pod_op(id: &str, action: PlanAction, pod: &str) -> kudo_api::PlanOperation {
    kudo_api::PlanOperation {
        pod: Some(pod.into()),
        pod_uid: Some(format!("uid-{pod}")),
        ..op(id, action, None, None)
    }
}

#[test]
fn a_pod_restart_runs_as_a_phase_of_the_recovery_plan_until_its_task_is_done() {
    let mut sim = deployed();
    sim.operate(pod_op("r1", PlanAction::RestartPod, "zk-0"));
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "waiting for pod zk-0".into(),
    });
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    assert_eq!(recovery_keys(&sim), ["Pod default/zk-0/restart/r1"]);
    let run = sim.status().history.last().unwrap();
    assert_eq!(run.trigger, "pod zk-0: restart requested by alice: testing");
    assert_eq!(
        sim.status().operations.last().unwrap().result,
        "restart of pod zk-0 started in plan recovery"
    );
    let op = kudo_engine::recovery_pods::operation_of(&sim.inst, "r1").unwrap();
    assert_eq!(op.pod_uid.as_deref(), Some("uid-zk-0"));
    sim.all_done();
    assert_eq!(sim.plan_status("recovery"), S::Complete);
}

#[test]
fn a_pod_replace_joins_a_running_recovery_plan() {
    let mut sim = deployed();
    sim.drift = vec![deleted(web())];
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    sim.drift.clear();
    sim.operate(pod_op("r2", PlanAction::ReplacePod, "zk-1"));
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    let ps = &sim.status().plan_status["recovery"];
    let names: Vec<_> = ps.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Deployment default/web", "Pod default/zk-1"]);
    assert_eq!(ps.phases[1].steps[0].name, "replace");
    let runs = sim
        .status()
        .history
        .iter()
        .filter(|r| r.plan == "recovery")
        .count();
    assert_eq!(runs, 1, "one recovery run");
    sim.all_done();
    assert_eq!(sim.plan_status("recovery"), S::Complete);
}

#[test]
fn a_running_recovery_takes_one_operation_per_pod_and_a_bounded_number_of_pods() {
    let mut sim = deployed();
    let waiting = |_: &_| TaskOutcome::InProgress {
        message: "pod not ready".into(),
    };
    sim.operate(pod_op("r0", PlanAction::RestartPod, "zk-0"));
    sim.reconcile(waiting);
    sim.operate(pod_op("r1", PlanAction::RestartPod, "zk-0"));
    sim.reconcile(waiting);
    assert_eq!(
        sim.status().operations.last().unwrap().result,
        "no-op: the running recovery plan already works on pod zk-0; restart it after the plan ends"
    );
    let max = kudo_engine::recovery_pods::MAX_RECOVERY_PHASES;
    for i in 1..=max {
        sim.operate(pod_op(
            &format!("p{i}"),
            PlanAction::RestartPod,
            &format!("zk-{i}"),
        ));
        sim.reconcile(waiting);
    }
    assert_eq!(sim.status().plan_status["recovery"].phases.len(), max);
    assert_eq!(
        sim.status().operations.last().unwrap().result,
        format!(
            "no-op: the running recovery plan already holds {max} pods; restart pod zk-{max} after the plan ends"
        )
    );
}

#[test]
fn a_pod_operation_while_a_plan_that_may_touch_its_workload_runs_is_a_recorded_no_op() {
    let mut sim = deployed();
    touching_anything(&mut sim);
    sim.set_params(&[("X", "2")]);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    sim.operate(pod_op("r3", PlanAction::RestartPod, "zk-0"));
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(
        sim.status().operations.last().unwrap().result,
        "no-op: plan \"update\" is working on pod zk-0's workload (phase \"main\", step \"s0\", \
         whose objects are not known before it runs); restart it after the plan ends"
    );
    assert!(!sim.status().plan_status.contains_key("recovery"));

    let mut no_uid = pod_op("r4", PlanAction::RestartPod, "zk-0");
    no_uid.pod_uid = None;
    sim.all_done();
    sim.operate(no_uid);
    sim.all_done();
    assert!(
        sim.status()
            .operations
            .last()
            .unwrap()
            .result
            .contains("needs the pod's name and uid")
    );
}
