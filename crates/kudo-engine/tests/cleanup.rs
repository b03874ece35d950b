//! decide on deletion: the cleanup finalizer, the cleanup plan over a
//! running one, and releasing the Instance.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::AppliedObject;
use kudo_api::ExecutionStatus as S;
use kudo_api::names::CLEANUP_FINALIZER;
use kudo_engine::{Action, TaskOutcome, TaskResult};
use support::*;

/// Instance `a` of an OperatorVersion with a one-step deploy and cleanup.
fn with_cleanup() -> Sim {
    Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("cleanup", simple_plan(1))],
            vec![],
        ),
    )
}

#[test]
fn finalizer_is_added_when_the_operator_version_has_cleanup() {
    let mut sim = with_cleanup();
    let d = sim.all_done();
    assert!(d.actions.contains(&Action::AddFinalizer));
    let d = sim.all_done();
    assert!(
        !d.actions.contains(&Action::AddFinalizer),
        "only when missing"
    );
}

#[test]
fn deletion_runs_cleanup_over_a_running_plan_then_releases_the_finalizer() {
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("cleanup", simple_plan(2))],
            vec![],
        ),
    );
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "x".into(),
    });
    assert!(
        sim.inst
            .metadata
            .finalizers
            .as_ref()
            .unwrap()
            .contains(&CLEANUP_FINALIZER.to_string())
    );
    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    let d = sim.reconcile(only_where(
        |k| k.plan() == "cleanup" && k.step() == "s1",
        TaskOutcome::InProgress {
            message: "y".into(),
        },
    ));
    assert!(!d.actions.contains(&Action::RemoveFinalizer));
    assert_eq!(sim.plan_status("deploy"), S::FatalError);
    assert_eq!(sim.plan_status("cleanup"), S::InProgress);
    let d = sim.all_done();
    assert_eq!(sim.plan_status("cleanup"), S::Complete);
    assert!(d.actions.contains(&Action::RemoveFinalizer));
    assert!(sim.has_event(
        "PlanFinished",
        "Execution of plan cleanup finished with status COMPLETE"
    ));
    assert!(
        sim.status().auto_suppression.is_none(),
        "a stopped plan is not a failure"
    );
}

#[test]
fn failed_cleanup_still_releases_the_instance_with_a_warning() {
    let mut sim = with_cleanup();
    sim.all_done();
    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    let d = sim.reconcile(|_| TaskOutcome::Fatal {
        message: "boom".into(),
    });
    assert!(d.actions.contains(&Action::RemoveFinalizer));
    assert!(sim.has_event("CleanupFailed", "FATAL_ERROR"));
}

#[test]
fn deletion_without_cleanup_plan_releases_the_finalizer_at_once() {
    let mut sim = Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(1))], vec![]),
    );
    sim.all_done();
    sim.inst.metadata.finalizers = Some(vec![CLEANUP_FINALIZER.into()]);
    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    let d = sim.all_done();
    assert!(d.actions.contains(&Action::RemoveFinalizer));
}

#[test]
fn an_operator_version_still_being_verified_keeps_the_finalizer_of_a_deleted_instance() {
    let mut sim = with_cleanup();
    sim.all_done();
    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    let pending = kudo_engine::Observed {
        operator_version_problem: Some("OperatorVersion ns/a is being verified".into()),
        operator_version_pending: true,
        ..Default::default()
    };
    let d = sim.decide_once(&pending);
    assert!(
        !d.actions.contains(&Action::RemoveFinalizer),
        "{:?}",
        d.actions
    );
    assert_eq!(
        d.status.blockers[0].message,
        "OperatorVersion ns/a is being verified"
    );
    // A verdict that it fails lets the Instance go without cleanup.
    let failed = kudo_engine::Observed {
        operator_version_problem: Some("does not pass package verify".into()),
        ..Default::default()
    };
    assert!(
        sim.decide_once(&failed)
            .actions
            .contains(&Action::RemoveFinalizer)
    );
}

fn applied(kind: &str, namespace: Option<&str>, name: &str) -> AppliedObject {
    AppliedObject {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: namespace.map(String::from),
        name: name.into(),
    }
}

#[test]
fn cluster_scoped_objects_hold_the_finalizer_and_are_deleted_before_it_goes() {
    // No cleanup plan: only the cluster-scoped objects call for the finalizer.
    let mut sim = Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(2))], vec![]),
    );
    let d = sim.reconcile_with(|k| TaskResult {
        outcome: TaskOutcome::Done,
        objects: if k.step() == "s0" {
            vec![
                applied("Namespace", None, "team"),
                applied("ConfigMap", Some("a"), "c"),
            ]
        } else {
            vec![applied("Namespace", None, "team")]
        },
        notes: Vec::new(),
    });
    assert!(d.actions.contains(&Action::AddFinalizer), "{:?}", d.actions);

    sim.inst.metadata.deletion_timestamp = Some(time(sim.now));
    let d = sim.all_done();
    let delete = d
        .actions
        .iter()
        .position(|a| {
            *a == Action::DeleteClusterScoped {
                objects: vec![applied("Namespace", None, "team")],
            }
        })
        .expect("the Namespace, once, and not the ConfigMap");
    let release = d
        .actions
        .iter()
        .position(|a| *a == Action::RemoveFinalizer)
        .unwrap();
    assert!(delete < release);
}

#[test]
fn without_cluster_scoped_objects_or_cleanup_no_finalizer_is_added() {
    let mut sim = Sim::new(
        instance("a"),
        ov("a", vec![("deploy", simple_plan(1))], vec![]),
    );
    let d = sim.all_done();
    assert!(!d.actions.contains(&Action::AddFinalizer));
}
