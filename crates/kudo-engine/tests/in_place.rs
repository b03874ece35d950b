//! decide_in_place: the working copy is updated where it is, `changed` is
//! exact, and the edges where the tree is reshaped or left alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::{BlockerKind, ExecutionStatus as S, InstanceStatus, PlanAction};
use kudo_engine::{Action, Observed, TaskOutcome, TaskResult, decide, decide_in_place};
use support::*;

/// A serial deploy plan of one phase with `steps` steps, started.
fn running(steps: usize) -> Sim {
    let mut sim = Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(steps))], vec![]),
    );
    sim.reconcile(|k| {
        if k.step() == "s0" {
            TaskOutcome::Done
        } else {
            TaskOutcome::InProgress {
                message: "1 of 3 replicas ready".into(),
            }
        }
    });
    sim
}

/// A parallel deploy plan of two phases of `steps` steps each.
fn two_parallel_phases(strategy: &str, steps: usize) -> Sim {
    let phases = [
        phase("one", Some(strategy), steps),
        phase("two", Some(strategy), steps),
    ];
    let deploy = plan(Some("parallel"), &phases);
    Sim::new(instance("a"), ov("a", vec![("deploy", deploy)], vec![]))
}

fn working_copy(sim: &Sim) -> InstanceStatus {
    sim.inst.status.clone().unwrap()
}

fn step_names(status: &InstanceStatus) -> Vec<String> {
    status.plan_status["deploy"].phases[0]
        .steps
        .iter()
        .map(|s| s.name.clone())
        .collect()
}

#[test]
fn idle_instance_is_left_alone_and_reported_unchanged() {
    let mut sim = running(2);
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    let stored = working_copy(&sim);
    let mut status = stored.clone();
    let effects = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(!effects.changed);
    assert!(effects.actions.is_empty());
    assert_eq!(effects.requeue_after, None);
    assert_eq!(status, stored);
}

#[test]
fn instance_status_is_not_read_by_decide_in_place() {
    // The working copy is the state; an Instance carrying an empty status
    // (which decide would take for a new Instance) changes nothing.
    let sim = running(2);
    let observed = Observed::default();
    let mut expected = working_copy(&sim);
    let want = decide_in_place(sim.input(&observed), &mut expected);
    let mut other = sim.inst.clone();
    other.status = Some(InstanceStatus::default());
    let mut status = working_copy(&sim);
    let got = decide_in_place(
        kudo_engine::Input {
            instance: &other,
            ..sim.input(&observed)
        },
        &mut status,
    );
    assert_eq!(got, want);
    assert_eq!(status, expected);
    assert_eq!(
        status.plan_status["deploy"].phases[0].steps[0].status(),
        S::Complete
    );
}

#[test]
fn an_outcome_fed_back_twice_changes_nothing_the_second_time() {
    let sim = running(2);
    let mut status = working_copy(&sim);
    let key = decide(sim.input(&Observed::default()))
        .actions
        .into_iter()
        .find_map(|a| match a {
            Action::RunTask { key, .. } => Some(key),
            _ => None,
        })
        .unwrap();
    let mut observed = Observed::default();
    observed.tasks.insert(
        key,
        TaskResult {
            outcome: TaskOutcome::InProgress {
                message: "2 of 3 replicas ready".into(),
            },
            objects: Vec::new(),
            notes: Vec::new(),
        },
    );
    let first = decide_in_place(sim.input(&observed), &mut status);
    assert!(first.changed, "the message moved on");
    assert_eq!(
        status.plan_status["deploy"].phases[0].steps[1].message,
        "2 of 3 replicas ready"
    );
    let after_first = status.clone();
    let second = decide_in_place(sim.input(&observed), &mut status);
    assert!(!second.changed);
    assert_eq!(status, after_first);
    assert_eq!(
        second.actions, first.actions,
        "the task is still to re-check"
    );
}

#[test]
fn operator_version_adding_a_step_mid_plan_reshapes_the_working_copy() {
    let mut sim = running(3);
    assert_eq!(sim.step_status("deploy", "main", "s0"), S::Complete);
    assert_eq!(sim.step_status("deploy", "main", "s1"), S::InProgress);
    // The same OperatorVersion, now with a step between s0 and s1.
    let steps = &mut sim.ov.spec.plans.get_mut("deploy").unwrap().phases[0].steps;
    let mut added = steps[0].clone();
    added.name = "s0b".into();
    steps.insert(1, added);

    let stored = working_copy(&sim);
    let mut status = stored.clone();
    let effects = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(effects.changed);
    assert_eq!(step_names(&status), ["s0", "s0b", "s1", "s2"]);
    let steps = &status.plan_status["deploy"].phases[0].steps;
    assert_eq!(steps[0].status(), S::Complete, "kept by name");
    assert_eq!(
        steps[2].status(),
        S::InProgress,
        "s1 had started and keeps running"
    );
    assert_eq!(
        steps[1].status(),
        S::InProgress,
        "the new step joins the running serial phase after s0 and starts"
    );
    assert_eq!(status, decide(sim.input(&Observed::default())).status);

    // The shape matches now: the next pass only checks names.
    let again = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(!again.changed);
}

#[test]
fn operator_version_dropping_a_plan_drops_its_status() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("backup", simple_plan(1))],
            vec![],
        ),
    );
    sim.all_done();
    sim.ov.spec.plans.remove("backup");
    let mut status = working_copy(&sim);
    let effects = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(effects.changed);
    assert!(!status.plan_status.contains_key("backup"));
    assert!(status.plan_status.contains_key("deploy"));
}

#[test]
fn a_pause_applied_in_place_is_one_change_then_none() {
    let mut sim = running(3);
    sim.operate(op("p1", PlanAction::Pause, None, None));
    let mut status = working_copy(&sim);
    let first = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(first.changed);
    assert_eq!(status.operations.len(), 1);
    let second = decide_in_place(sim.input(&Observed::default()), &mut status);
    assert!(!second.changed, "the pause is applied once");
}

#[test]
fn a_paused_plan_lists_its_pause_once_however_many_steps_wait() {
    let mut sim = two_parallel_phases("parallel", 50);
    sim.operate(op("p1", PlanAction::Pause, None, None));
    sim.reconcile(|_| TaskOutcome::Done);
    // The pause is applied in the pass that starts the plan, so all 100
    // steps wait, and one blocker says why.
    let st = sim.status();
    let paused: Vec<_> = st
        .blockers
        .iter()
        .filter(|b| b.kind == BlockerKind::Paused)
        .collect();
    assert_eq!(paused.len(), 1, "{:?}", st.blockers);
    assert_eq!(sim.plan_status("deploy"), S::Waiting);
}

#[test]
fn canary_phases_waiting_for_approval_list_one_blocker_per_step() {
    let mut sim = two_parallel_phases("parallel-canary", 40);
    let d = sim.all_done();
    let canary = d
        .status
        .blockers
        .iter()
        .filter(|b| b.kind == BlockerKind::CanaryApproval)
        .count();
    assert_eq!(canary, 80, "every held step says which approval it needs");
}
