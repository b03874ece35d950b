//! What holds or lets through the next run of a plan: a pause given while
//! the plan is not running, a parameter update of a paused plan, a manual
//! run asked for behind a change that waits for a window or a suppression,
//! and how history records a run a new request superseded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::{
    BlockerKind, ExecutionStatus as S, MaintenanceWindow, PlanAction, PlanExecution, PlanOperation,
};
use kudo_engine::{TaskKey, TaskOutcome};
use support::*;

fn slow(k: &TaskKey) -> TaskOutcome {
    let _ = k;
    TaskOutcome::InProgress {
        message: "rolling".into(),
    }
}

/// deploy, and `reconfigure` triggered by parameter `TICK`.
fn two_plans() -> Sim {
    Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(2)), ("reconfigure", simple_plan(2))],
            vec![param("TICK", Some("reconfigure")), param("SIZE", None)],
        ),
    )
}

fn on(plan: &str, id: &str, action: PlanAction) -> PlanOperation {
    PlanOperation {
        plan: Some(plan.into()),
        ..op(id, action, None, None)
    }
}

/// Closed at the Sim's default time (12:00 UTC).
fn nightly() -> MaintenanceWindow {
    MaintenanceWindow {
        days: "*".into(),
        start: "22:00".into(),
        end: "04:00".into(),
        time_zone: Some("UTC".into()),
        kind: None,
    }
}

fn trigger(sim: &mut Sim, plan: &str, uid: &str, break_glass: bool) {
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some(plan.into()),
            uid: Some(uid.into()),
            break_glass: break_glass.then_some(true),
            ..Default::default()
        })
    });
}

#[test]
fn a_pause_given_while_the_plan_is_not_running_holds_its_next_run() {
    let mut sim = two_plans();
    sim.all_done();
    sim.operate(on("reconfigure", "p1", PlanAction::Pause));
    sim.all_done();
    let record = &sim.status().operations[0];
    assert_eq!(
        record.result,
        "plan \"reconfigure\" paused: it is not running; its next run starts paused"
    );

    sim.set_params(&[("TICK", "3")]);
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty(), "no step of the paused run starts");
    assert_eq!(sim.plan_status("reconfigure"), S::Waiting);
    let paused = sim
        .status()
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::Paused)
        .unwrap();
    assert!(
        paused.message.contains(
            "resume it with kubectl kudo plan resume --instance zk --plan reconfigure -n default"
        ),
        "{}",
        paused.message
    );

    sim.operate(on("reconfigure", "r1", PlanAction::Resume));
    sim.all_done();
    assert_eq!(sim.plan_status("reconfigure"), S::Complete);
    assert_eq!(
        sim.status().operations[1].result,
        "plan \"reconfigure\" resumed"
    );
}

#[test]
fn a_parameter_update_restarts_a_paused_plan_and_keeps_it_paused() {
    let mut sim = two_plans();
    sim.all_done();
    sim.set_params(&[("TICK", "3")]);
    sim.reconcile(slow);
    sim.operate(on("reconfigure", "p1", PlanAction::Pause));
    sim.all_done();
    assert_eq!(sim.step_status("reconfigure", "main", "s1"), S::Waiting);

    sim.set_params(&[("TICK", "4")]);
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty(), "{:?}", run_keys(&d));
    let ps = &sim.status().plan_status["reconfigure"];
    assert_eq!(ps.uid.as_deref(), Some("uid-1-reconfigure-g4"));
    assert_eq!(ps.paused, Some(true));
    assert_eq!(ps.status(), S::Waiting);
    assert_eq!(sim.step_status("reconfigure", "main", "s0"), S::Waiting);
}

#[test]
fn resuming_a_plan_that_is_not_paused_says_so() {
    let mut sim = two_plans();
    sim.all_done();
    sim.operate(on("deploy", "r1", PlanAction::Resume));
    sim.all_done();
    assert_eq!(
        sim.status().operations[0].result,
        "no-op: plan \"deploy\" is not paused"
    );
}

#[test]
fn a_break_glass_run_of_the_plan_a_waiting_change_needs_runs_now_and_takes_the_change() {
    let mut sim = two_plans();
    sim.all_done();
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.set_params(&[("SIZE", "2")]);
    sim.all_done();
    let waiting = &sim.status().blockers[0];
    assert_eq!(waiting.kind, BlockerKind::MaintenanceWindow);
    assert_eq!(sim.status().history.len(), 1, "the change waits");

    trigger(&mut sim, "deploy", "glass", true);
    sim.all_done();
    let deploy = &sim.status().plan_status["deploy"];
    assert_eq!(deploy.uid.as_deref(), Some("glass"));
    assert_eq!(deploy.status(), S::Complete);
    let applied = sim.status().applied_parameters.as_ref().unwrap();
    assert_eq!(applied.get("SIZE").map(String::as_str), Some("2"));
    assert!(
        sim.status().blockers.is_empty(),
        "{:?}",
        sim.status().blockers
    );
    assert_eq!(sim.status().history.last().unwrap().trigger, "manual");
}

#[test]
fn a_break_glass_run_of_another_plan_leaves_the_waiting_change_waiting() {
    let mut sim = two_plans();
    sim.all_done();
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.set_params(&[("TICK", "2")]);
    sim.all_done();

    trigger(&mut sim, "deploy", "glass", true);
    sim.all_done();
    // The pass that finished deploy asked to look again at once.
    sim.all_done();
    assert_eq!(
        sim.status().plan_status["deploy"].uid.as_deref(),
        Some("glass")
    );
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    assert_eq!(sim.plan_status("reconfigure"), S::NeverRun);
    let blocker = &sim.status().blockers[0];
    assert_eq!(blocker.kind, BlockerKind::MaintenanceWindow);
    assert!(
        blocker
            .message
            .starts_with("plan \"reconfigure\" (parameter TICK) waits"),
        "{}",
        blocker.message
    );
}

#[test]
fn a_manual_run_without_break_glass_waits_for_the_window_like_the_change() {
    let mut sim = two_plans();
    sim.all_done();
    sim.inst.spec.maintenance_windows.push(nightly());
    sim.set_params(&[("SIZE", "2")]);
    trigger(&mut sim, "deploy", "plain", false);
    sim.all_done();
    assert_eq!(sim.status().history.len(), 1);
    assert_eq!(
        sim.status().blockers[0].kind,
        BlockerKind::MaintenanceWindow
    );
}

#[test]
fn a_run_superseded_by_a_new_request_of_the_same_plan_has_no_result_in_history() {
    let mut sim = two_plans();
    sim.all_done();
    sim.set_params(&[("TICK", "2")]);
    sim.reconcile(slow);
    sim.set_params(&[("TICK", "3")]);
    sim.reconcile(slow);
    let history = &sim.status().history;
    let superseded = &history[history.len() - 2];
    assert_eq!(superseded.plan, "reconfigure");
    assert!(superseded.finished.is_some());
    assert_eq!(superseded.result, None);
    assert!(
        superseded.message.starts_with("restarted by a new request"),
        "{}",
        superseded.message
    );
    sim.all_done();
    assert_eq!(
        sim.status().history.last().unwrap().result,
        Some(S::Complete)
    );
}
