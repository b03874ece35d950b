//! decide with plan operations, canary strategies, maintenance windows,
//! suppressions and rollback (fake clock).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kudo_api::{
    BlockerKind, ExecutionStatus as S, MaintenanceWindow, PlanAction, PlanExecution, Suppression,
};
use kudo_engine::{Observed, TaskKey, TaskOutcome};
use support::*;

fn canary_sim(strategy: &str) -> Sim {
    Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", plan(None, &[phase("rollout", Some(strategy), 4)]))],
            vec![],
        ),
    )
}

/// A Sim of a plan `deploy` with one phase of `steps` serial steps.
fn deploy_sim(steps: usize) -> Sim {
    Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(steps))], vec![]),
    )
}

fn slow(k: &TaskKey) -> TaskOutcome {
    let _ = k;
    TaskOutcome::InProgress {
        message: "rolling".into(),
    }
}

#[test]
fn serial_canary_needs_one_continue_for_the_first_step_and_a_second_for_the_rest() {
    let mut sim = canary_sim("serial-canary");
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
    let b = &sim.status().blockers[0];
    assert_eq!(b.kind, BlockerKind::CanaryApproval);
    assert!(b.message.contains("approval 1 of 2"), "{}", b.message);

    sim.operate(op("c1", PlanAction::Continue, Some("rollout"), None));
    sim.all_done();
    assert_eq!(sim.step_status("deploy", "rollout", "s0"), S::Complete);
    assert_eq!(sim.step_status("deploy", "rollout", "s1"), S::Waiting);
    assert!(sim.status().blockers[0].message.contains("approval 2 of 2"));

    sim.operate(op("c2", PlanAction::Continue, Some("rollout"), None));
    let d = sim.reconcile(slow);
    assert_eq!(run_keys(&d), ["rollout/s1/t"], "serial after the gate");
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn parallel_canary_releases_the_rest_at_once_after_the_second_continue() {
    let mut sim = canary_sim("parallel-canary");
    sim.operate(op("c1", PlanAction::Continue, Some("rollout"), None));
    let d = sim.reconcile(slow);
    assert_eq!(run_keys(&d), ["rollout/s0/t"]);
    sim.all_done();
    sim.operate(op("c2", PlanAction::Continue, Some("rollout"), None));
    let d = sim.reconcile(slow);
    assert_eq!(
        run_keys(&d),
        ["rollout/s1/t", "rollout/s2/t", "rollout/s3/t"]
    );
    let approvals = sim.status().plan_status["deploy"].phases[0].canary_approvals;
    assert_eq!(approvals, Some(2));
}

#[test]
fn continue_without_phase_is_recorded_as_a_no_op() {
    let mut sim = canary_sim("canary");
    sim.operate(op("c1", PlanAction::Continue, None, None));
    sim.all_done();
    let rec = &sim.status().operations[0];
    assert!(rec.result.starts_with("no-op"), "{}", rec.result);
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
}

#[test]
fn pause_lets_running_steps_finish_but_starts_no_new_step() {
    let mut sim = deploy_sim(3);
    sim.reconcile(slow);
    sim.operate(op("p1", PlanAction::Pause, None, None));
    let d = sim.reconcile(slow);
    assert_eq!(
        run_keys(&d),
        ["main/s0/t"],
        "the running step keeps running"
    );
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
    assert_eq!(sim.status().plan_status["deploy"].message, "paused");
    sim.all_done();
    assert_eq!(sim.step_status("deploy", "main", "s0"), S::Complete);
    assert_eq!(sim.step_status("deploy", "main", "s1"), S::Waiting);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.kind == BlockerKind::Paused)
    );
    sim.operate(op("r1", PlanAction::Resume, None, None));
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn pausing_a_phase_holds_only_that_phase() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![(
                "deploy",
                plan(None, &[phase("one", None, 1), phase("two", None, 1)]),
            )],
            vec![],
        ),
    );
    sim.operate(op("p1", PlanAction::Pause, Some("two"), None));
    sim.all_done();
    assert_eq!(sim.step_status("deploy", "one", "s0"), S::Complete);
    assert_eq!(sim.step_status("deploy", "two", "s0"), S::Waiting);
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
}

#[test]
fn force_complete_marks_the_step_forced_and_is_applied_once_per_id() {
    let mut sim = deploy_sim(2);
    sim.reconcile(slow);
    sim.operate(op(
        "f1",
        PlanAction::ForceComplete,
        Some("main"),
        Some("s0"),
    ));
    sim.reconcile(slow);
    let step = &sim.status().plan_status["deploy"].phases[0].steps[0];
    assert_eq!((step.status(), step.forced), (S::Complete, Some(true)));
    assert!(step.message.contains("alice: testing"));
    // the next step started; a restart of s0 later must not be undone by f1 again
    sim.operate(op("r1", PlanAction::Restart, Some("main"), Some("s0")));
    sim.reconcile(slow);
    assert_eq!(sim.status().operations.len(), 2);
    let s0 = sim.step_status("deploy", "main", "s0");
    assert_ne!(s0, S::Complete, "f1 is not applied twice");
}

#[test]
fn force_complete_is_a_way_out_of_a_fatal_step() {
    let mut sim = deploy_sim(2);
    sim.config.auto_suppress_on_failure = false;
    sim.reconcile(only_where(
        |k| k.step() == "s0",
        TaskOutcome::Fatal {
            message: "bad".into(),
        },
    ));
    assert_eq!(sim.plan_status("deploy"), S::FatalError);
    sim.operate(op(
        "f1",
        PlanAction::ForceComplete,
        Some("main"),
        Some("s0"),
    ));
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn restart_clears_the_backoff_and_runs_the_step_at_once() {
    let mut sim = deploy_sim(1);
    sim.reconcile(|_| TaskOutcome::Transient {
        message: "x".into(),
    });
    sim.reconcile(|_| TaskOutcome::Transient {
        message: "x".into(),
    });
    sim.operate(op("r1", PlanAction::Restart, Some("main"), Some("s0")));
    let d = sim.reconcile(slow);
    assert_eq!(run_keys(&d), ["main/s0/t"]);
    let step = &sim.status().plan_status["deploy"].phases[0].steps[0];
    assert_eq!((step.attempts, step.next_retry_at.as_ref()), (None, None));
}

#[test]
fn restart_of_a_finished_plan_runs_it_again() {
    let mut sim = deploy_sim(2);
    sim.all_done();
    let runs = sim.ran.len();
    sim.operate(op("r1", PlanAction::Restart, None, None));
    sim.all_done();
    assert_eq!(sim.ran.len(), runs + 2);
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn cancel_stops_the_plan_with_who_and_why_and_does_not_suppress() {
    let mut sim = deploy_sim(2);
    sim.reconcile(slow);
    sim.operate(op("x1", PlanAction::Cancel, None, None));
    let d = sim.reconcile(slow);
    assert!(run_keys(&d).is_empty());
    let ps = &sim.status().plan_status["deploy"];
    assert_eq!(ps.status(), S::FatalError);
    assert_eq!(ps.message, "cancelled by alice: testing");
    assert!(sim.status().auto_suppression.is_none());
    assert_eq!(sim.status().history[0].result, Some(S::FatalError));
}

#[test]
fn unknown_operation_target_is_recorded_as_a_no_op() {
    let mut sim = deploy_sim(1);
    sim.operate(op("x", PlanAction::Restart, Some("nope"), None));
    sim.all_done();
    assert!(
        sim.status().operations[0]
            .result
            .contains("no phase \"nope\"")
    );
}

fn nightly() -> MaintenanceWindow {
    MaintenanceWindow {
        days: "*".into(),
        start: "22:00".into(),
        end: "04:00".into(),
        time_zone: Some("UTC".into()),
        kind: None,
    }
}

#[test]
fn plan_waits_for_its_maintenance_window_then_proceeds() {
    let mut sim = deploy_sim(1);
    sim.inst.spec.maintenance_windows.push(nightly());
    let d = sim.all_done(); // 12:00 UTC
    assert!(run_keys(&d).is_empty());
    assert_eq!(d.requeue_after, Some(Duration::from_secs(10 * 3600)));
    let b = &sim.status().blockers[0];
    assert_eq!(b.kind, BlockerKind::MaintenanceWindow);
    assert!(b.message.contains("2026-11-24T22:00:00Z"), "{}", b.message);
    assert_eq!(b.until.as_ref().unwrap().0, ts("2026-11-24T22:00:00Z"));
    sim.advance(Duration::from_secs(10 * 3600));
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn running_steps_finish_after_the_window_closes_but_no_new_step_starts() {
    let mut sim = deploy_sim(2);
    sim.now = ts("2026-11-24T03:59:00Z");
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.reconcile(slow);
    sim.advance(Duration::from_secs(120));
    sim.all_done();
    assert_eq!(sim.step_status("deploy", "main", "s0"), S::Complete);
    assert_eq!(sim.step_status("deploy", "main", "s1"), S::Waiting);
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
    assert!(
        sim.status().plan_status["deploy"]
            .message
            .contains("maintenance window closed")
    );
}

#[test]
fn manager_default_windows_intersect_with_the_instance_windows() {
    let mut sim = deploy_sim(1);
    sim.now = ts("2026-11-24T23:00:00Z");
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.config
        .default_maintenance_windows
        .push(MaintenanceWindow {
            days: "*".into(),
            start: "01:00".into(),
            end: "02:00".into(),
            time_zone: Some("UTC".into()),
            kind: None,
        });
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty());
    assert_eq!(d.requeue_after, Some(Duration::from_secs(2 * 3600)));
}

#[test]
fn break_glass_manual_plan_ignores_windows() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("fix", simple_plan(1))],
            vec![],
        ),
    );
    sim.all_done();
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some("fix".into()),
            uid: Some("u1".into()),
            break_glass: Some(true),
            ..Default::default()
        })
    });
    sim.all_done();
    assert_eq!(sim.plan_status("fix"), S::Complete);
}

#[test]
fn cleanup_ignores_windows_and_suppressions() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("cleanup", simple_plan(1))],
            vec![],
        ),
    );
    sim.all_done();
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.inst.spec.suppressions.push(Suppression {
        reason: "freeze".into(),
        ..Default::default()
    });
    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    sim.all_done();
    assert_eq!(sim.plan_status("cleanup"), S::Complete);
}

#[test]
fn manual_suppression_stops_a_running_plan_from_starting_new_steps() {
    let mut sim = deploy_sim(2);
    sim.reconcile(slow);
    let until = ts("2026-11-24T13:00:00Z");
    sim.edit(|s| {
        s.suppressions.push(Suppression {
            until: Some(time(until)),
            reason: "incident 42".into(),
            by: Some("bob".into()),
            ..Default::default()
        })
    });
    let d = sim.all_done();
    assert_eq!(sim.step_status("deploy", "main", "s1"), S::Waiting);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(3600)));
    let b = sim
        .status()
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::Suppressed)
        .unwrap();
    assert!(b.message.contains("bob: incident 42"), "{}", b.message);
    sim.now = until;
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

/// Deployed with `v=good`, then `v=bad` whose update failed (suppressed).
fn after_a_failed_change(plans: &[&str]) -> Sim {
    let plans = plans.iter().map(|p| (*p, simple_plan(1))).collect();
    let mut sim = Sim::new(instance("a"), ov("a", plans, vec![param("v", None)]));
    sim.set_params(&[("v", "good")]);
    sim.all_done();
    sim.set_params(&[("v", "bad")]);
    sim.reconcile(|_| TaskOutcome::Fatal {
        message: "crash".into(),
    });
    sim
}

#[test]
fn rollback_runs_despite_the_automatic_suppression_and_clears_it() {
    let mut sim = after_a_failed_change(&["deploy", "update"]);
    assert!(sim.status().auto_suppression.is_some());
    sim.set_params(&[("v", "other")]);
    sim.all_done();
    assert_eq!(sim.status().history.len(), 2, "a new automatic plan waits");
    sim.set_params(&[("v", "good")]);
    sim.all_done();
    let last = sim.status().history.last().unwrap();
    assert_eq!(
        (last.trigger.as_str(), last.result),
        ("rollback", Some(S::Complete))
    );
    assert!(sim.status().auto_suppression.is_none());
    assert_eq!(
        sim.status().last_successful.as_ref().unwrap().parameters,
        BTreeMap::from([("v".to_string(), "good".to_string())])
    );
}

#[test]
fn a_plan_run_by_hand_after_a_failed_change_does_not_make_the_change_the_rollback_target() {
    let mut sim = after_a_failed_change(&["deploy", "update", "backup"]);
    let run_by_hand = |sim: &mut Sim, plan: &str, uid: &str| {
        sim.edit(|s| {
            s.plan_execution = Some(kudo_api::PlanExecution {
                plan_name: Some(plan.into()),
                uid: Some(uid.into()),
                ..Default::default()
            });
        });
        sim.all_done();
        assert_eq!(sim.plan_status(plan), S::Complete);
    };
    let good = BTreeMap::from([("v".to_string(), "good".to_string())]);
    run_by_hand(&mut sim, "backup", "b1");
    assert_eq!(
        sim.status().last_successful.as_ref().unwrap().parameters,
        good,
        "a backup does not make the failed change good"
    );
    // The configuration plan run again by hand does.
    run_by_hand(&mut sim, "update", "u1");
    assert_eq!(
        sim.status().last_successful.as_ref().unwrap().parameters,
        BTreeMap::from([("v".to_string(), "bad".to_string())])
    );
}

#[test]
fn automatic_suppression_can_expire_by_itself() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("update", simple_plan(1))],
            vec![param("v", None)],
        ),
    );
    sim.config.auto_suppression_duration = Some(Duration::from_secs(600));
    sim.reconcile(|_| TaskOutcome::Fatal {
        message: "crash".into(),
    });
    sim.set_params(&[("v", "x")]);
    let d = sim.all_done();
    assert_eq!(d.requeue_after, Some(Duration::from_secs(600)));
    sim.advance(Duration::from_secs(600));
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
}

#[test]
fn idle_suppressed_instance_stays_unchanged_between_passes() {
    let mut sim = deploy_sim(1);
    sim.inst.spec.suppressions.push(Suppression {
        reason: "freeze".into(),
        ..Default::default()
    });
    sim.all_done();
    let d = sim.decide_once(&Observed::default());
    assert_eq!(&d.status, sim.status());
}
