//! Namespace-wide suppression through `decide`: automatic plans of every
//! Instance of a namespace hold while more of its Instances than the
//! threshold are automatically suppressed; plans a person asks for do not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::{BlockerKind, ExecutionStatus as S, PlanExecution};
use kudo_engine::namespace::{NamespaceSuppressions, Suppressed, Threshold, ThresholdSource};
use support::*;

fn zk() -> Sim {
    Sim::new(
        instance("zk-1.0"),
        ov(
            "zk-1.0",
            vec![
                ("deploy", simple_plan(1)),
                ("update", simple_plan(1)),
                ("backup", simple_plan(1)),
            ],
            vec![param("replicas", None)],
        ),
    )
}

fn suppressed(names: &[&str], until: Option<&str>) -> NamespaceSuppressions {
    NamespaceSuppressions {
        namespace: "default".into(),
        threshold: Threshold::MoreThan(1),
        source: ThresholdSource::Manager,
        suppressed: names
            .iter()
            .map(|n| Suppressed {
                name: (*n).into(),
                until: until.map(ts),
            })
            .collect(),
    }
}

fn namespace_blockers(sim: &Sim) -> Vec<String> {
    sim.status()
        .blockers
        .iter()
        .filter(|b| b.kind == BlockerKind::Suppressed && b.message.contains("namespace default"))
        .map(|b| b.message.clone())
        .collect()
}

#[test]
fn a_parameter_change_waits_while_the_namespace_holds_and_runs_once_it_lifts() {
    let mut sim = zk();
    sim.all_done();
    sim.namespace = Some(suppressed(&["kafka", "redis"], None));
    sim.set_params(&[("replicas", "5")]);
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    let held = namespace_blockers(&sim);
    assert_eq!(held.len(), 1, "{:?}", sim.status().blockers);
    assert!(held[0].contains("2 Instances"), "{}", held[0]);
    assert!(held[0].contains("kafka, redis"), "{}", held[0]);
    assert!(sim.has_event("NamespaceSuppressed", "threshold 1"));

    sim.namespace = Some(suppressed(&["kafka"], None));
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
    assert!(namespace_blockers(&sim).is_empty());
}

#[test]
fn the_hold_raises_its_event_once_not_every_reconcile() {
    let mut sim = zk();
    sim.all_done();
    sim.namespace = Some(suppressed(&["kafka", "redis"], None));
    sim.set_params(&[("replicas", "5")]);
    for _ in 0..3 {
        sim.all_done();
    }
    let events = sim
        .events
        .iter()
        .filter(|(r, _)| r == "NamespaceSuppressed")
        .count();
    assert_eq!(events, 1, "{:?}", sim.events);
}

#[test]
fn a_plan_a_person_asks_for_runs_despite_the_hold() {
    let mut sim = zk();
    sim.all_done();
    sim.namespace = Some(suppressed(&["kafka", "redis", "pg"], None));
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some("backup".into()),
            uid: Some("run-1".into()),
            ..Default::default()
        })
    });
    sim.all_done();
    assert_eq!(sim.plan_status("backup"), S::Complete);
}

#[test]
fn a_hold_that_ends_by_expiry_wakes_the_instance_then() {
    let mut sim = zk();
    sim.all_done();
    sim.namespace = Some(suppressed(
        &["kafka", "redis"],
        Some("2026-11-24T13:00:00Z"),
    ));
    sim.set_params(&[("replicas", "5")]);
    let d = sim.all_done();
    assert_eq!(sim.plan_status("update"), S::NeverRun);
    assert_eq!(
        d.requeue_after,
        Some(std::time::Duration::from_secs(3600)),
        "woken when the suppressions end"
    );
    sim.advance(std::time::Duration::from_secs(3600));
    sim.all_done();
    assert_eq!(sim.plan_status("update"), S::Complete);
}

#[test]
fn a_malformed_annotation_is_shown_and_the_manager_threshold_applies() {
    let mut sim = zk();
    let mut ns = suppressed(&["kafka"], None);
    ns.source = ThresholdSource::Malformed(
        "annotation kudo.dev/suppression-threshold: \"many\" is not a threshold".into(),
    );
    sim.namespace = Some(ns);
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.message.contains("\"many\" is not a threshold")),
        "{:?}",
        sim.status().blockers
    );
}
