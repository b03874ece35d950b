//! An Instance runs another namespace's OperatorVersion only when that
//! namespace shares it: otherwise nothing of it runs and a blocker says
//! why, in the same words whether it exists or not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::ExecutionStatus as S;
use kudo_api::names::SHARED_WITH_ANNOTATION;
use kudo_engine::{Input, Observed};
use support::*;

const REFUSAL: &str = "OperatorVersion \"a\" of namespace tenant-b is not shared with namespace \
                       tenant-a; use an OperatorVersion of namespace tenant-a, or ask the owner \
                       of tenant-b to add tenant-a to the kudo.dev/shared-with annotation of that \
                       OperatorVersion";

/// An Instance of tenant-a naming OperatorVersion `a` of tenant-b.
fn cross_namespace() -> Sim {
    let mut inst = instance("a");
    inst.metadata.namespace = Some("tenant-a".into());
    inst.spec.operator_version.namespace = Some("tenant-b".into());
    let mut ov = ov("a", vec![("deploy", simple_plan(1))], vec![]);
    ov.metadata.namespace = Some("tenant-b".into());
    Sim::new(inst, ov)
}

#[test]
fn another_namespaces_operator_version_runs_nothing_until_it_is_shared() {
    let mut sim = cross_namespace();
    let d = sim.all_done();
    assert!(run_keys(&d).is_empty(), "{:?}", run_keys(&d));
    assert_eq!(sim.status().blockers.len(), 1);
    assert_eq!(sim.status().blockers[0].message, REFUSAL);
    assert!(
        sim.status().plan_status.is_empty(),
        "nothing of it was read"
    );

    sim.ov.metadata.annotations = Some(
        [(
            SHARED_WITH_ANNOTATION.to_string(),
            "tenant-c,tenant-a".to_string(),
        )]
        .into(),
    );
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    assert!(sim.status().blockers.is_empty());
}

#[test]
fn a_missing_operator_version_of_another_namespace_blocks_in_the_same_words() {
    let sim = cross_namespace();
    let observed = Observed::default();
    let d = kudo_engine::decide(Input {
        operator_version: None,
        ..sim.input(&observed)
    });
    assert_eq!(d.status.blockers.len(), 1);
    assert_eq!(d.status.blockers[0].message, REFUSAL);
}
