//! Every plan operation in spec is carried out at most once, however long
//! spec keeps it: records in `status.operations` come and go, the mark in
//! `status.operationsMark` stays.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::{ExecutionStatus as S, PlanAction, PlanExecution, PlanOperation};
use kudo_engine::operations::KEPT_OPERATIONS;
use kudo_engine::{TaskKey, TaskOutcome};
use support::*;

fn deploy_sim() -> Sim {
    Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(2))], vec![]),
    )
}

fn slow(_: &TaskKey) -> TaskOutcome {
    TaskOutcome::InProgress {
        message: "rolling".into(),
    }
}

fn on_plan(id: &str, action: PlanAction, reason: &str) -> PlanOperation {
    PlanOperation {
        plan: Some("deploy".into()),
        reason: Some(reason.into()),
        ..op(id, action, None, None)
    }
}

fn records_of(sim: &Sim, id: &str) -> usize {
    sim.status()
        .operations
        .iter()
        .filter(|r| r.id == id)
        .count()
}

/// Adds `count` harmless operations (phase resumes) one by one, each seen
/// by a reconcile, as a GitOps repository gathers them over time; once the
/// record of `watched` has gone, it never comes back (the operation is not
/// applied again).
fn add_later_operations(sim: &mut Sim, from: usize, count: usize, watched: &str) {
    let mut gone = false;
    for n in from..from + count {
        sim.operate(op(
            &format!("later-{n}"),
            PlanAction::Resume,
            Some("main"),
            None,
        ));
        sim.reconcile(slow);
        let recorded = records_of(sim, watched);
        assert!(
            !(gone && recorded > 0),
            "{watched} was applied again after later-{n}"
        );
        assert!(recorded <= 1);
        gone |= recorded == 0;
    }
}

fn redeploy(sim: &mut Sim) {
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some("deploy".into()),
            uid: Some("redeploy".into()),
            ..PlanExecution::default()
        })
    });
}

#[test]
fn sixty_operations_later_the_first_still_in_spec_is_not_applied_again() {
    let mut sim = deploy_sim();
    sim.reconcile(slow);
    sim.operate(on_plan("first", PlanAction::Pause, "hold on"));
    sim.reconcile(slow);
    assert_eq!(sim.status().plan_status["deploy"].paused, Some(true));
    sim.operate(on_plan("second", PlanAction::Resume, "go on"));
    sim.reconcile(slow);
    add_later_operations(&mut sim, 0, 58, "first");

    assert_eq!(sim.inst.spec.plan_operations.len(), 60);
    assert_eq!(sim.inst.spec.plan_operations[0].id, "first");
    assert_eq!(records_of(&sim, "first"), 0, "its record has gone");
    assert_eq!(sim.status().operations.len(), KEPT_OPERATIONS);
    assert_eq!(sim.status().operations_mark.as_deref(), Some("later-57"));
    assert_eq!(sim.status().plan_status["deploy"].paused, None);
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn a_cancel_kept_in_spec_does_not_cancel_a_later_deploy() {
    let mut sim = deploy_sim();
    sim.reconcile(slow);
    sim.operate(on_plan("old-cancel", PlanAction::Cancel, "old cancel"));
    sim.reconcile(slow);
    assert_eq!(sim.plan_status("deploy"), S::FatalError);
    add_later_operations(&mut sim, 0, 45, "old-cancel");
    // The new deploy runs while the cancel's record leaves the status.
    redeploy(&mut sim);
    sim.reconcile(slow);
    add_later_operations(&mut sim, 45, 10, "old-cancel");
    assert_eq!(records_of(&sim, "old-cancel"), 0);

    let deploy = &sim.status().plan_status["deploy"];
    assert_eq!(deploy.uid.as_deref(), Some("redeploy"));
    assert_eq!(deploy.status(), S::InProgress, "{}", deploy.message);
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn operations_of_every_kind_added_together_are_each_applied_once() {
    let mut sim = deploy_sim();
    sim.reconcile(slow);
    // A clear is applied first in a pass, before the pause listed ahead of it.
    sim.edit(|s| {
        s.plan_operations.extend([
            on_plan("pause", PlanAction::Pause, "hold on"),
            op("clear", PlanAction::ClearSuppression, None, None),
            on_plan("resume", PlanAction::Resume, "go on"),
        ])
    });
    sim.reconcile(slow);
    let ids: Vec<&str> = sim
        .status()
        .operations
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(ids, ["clear", "pause", "resume"]);
    assert_eq!(sim.status().operations_mark.as_deref(), Some("resume"));
    sim.reconcile(slow);
    assert_eq!(sim.status().operations.len(), 3, "nothing applied twice");
    assert_eq!(sim.status().plan_status["deploy"].paused, None);
}

#[test]
fn a_status_recorded_before_the_mark_existed_adopts_its_newest_record() {
    let mut sim = deploy_sim();
    sim.reconcile(slow);
    sim.operate(on_plan("old-cancel", PlanAction::Cancel, "old cancel"));
    sim.reconcile(slow);
    add_later_operations(&mut sim, 0, 3, "old-cancel");
    // As an older manager left it: no mark, the cancel's record gone.
    let status = sim.inst.status.as_mut().unwrap();
    status.operations_mark = None;
    status.operations.retain(|r| r.id != "old-cancel");
    redeploy(&mut sim);
    sim.reconcile(slow);
    assert_eq!(sim.status().operations_mark.as_deref(), Some("later-2"));
    assert_eq!(records_of(&sim, "old-cancel"), 0);
    assert_eq!(sim.plan_status("deploy"), S::InProgress);
}

#[test]
fn an_entry_past_a_mark_no_longer_in_spec_is_applied() {
    let mut sim = deploy_sim();
    sim.reconcile(slow);
    sim.operate(on_plan("p1", PlanAction::Pause, "hold on"));
    sim.reconcile(slow);
    // The front of spec dropped, mark included, and a new entry added.
    sim.edit(|s| s.plan_operations = vec![on_plan("r1", PlanAction::Resume, "go on")]);
    sim.reconcile(slow);
    assert_eq!(sim.status().operations_mark.as_deref(), Some("r1"));
    assert_eq!(sim.status().plan_status["deploy"].paused, None);
}
