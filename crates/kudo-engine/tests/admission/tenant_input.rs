//! What a tenant writes that the rules refuse: another namespace's
//! OperatorVersion it was not given, plan operations out of order, a name
//! too long for the label it becomes, and lists longer than the rules walk.

use kudo_api::PlanOperation;
use kudo_api::names::SHARED_WITH_ANNOTATION;

use super::*;

/// An Instance of tenant-a naming `foo-operator` of tenant-b.
fn naming_tenant_b() -> Instance {
    with(&instance("foo-operator"), |i| {
        i.metadata.namespace = Some("tenant-a".into());
        i.spec.operator_version.namespace = Some("tenant-b".into());
    })
}

fn tenant_b_ov(shared_with: Option<&str>) -> OperatorVersion {
    let mut ov = fixture_ov("foo-operator");
    ov.metadata.namespace = Some("tenant-b".into());
    ov.metadata.annotations =
        shared_with.map(|to| [(SHARED_WITH_ANNOTATION.to_string(), to.to_string())].into());
    ov
}

#[test]
fn another_namespaces_operator_version_is_refused_alike_whether_it_exists_or_not() {
    let new = with(&naming_tenant_b(), params(&[("foo", "x")]));
    let unshared = review(None, &new, None, Some(&tenant_b_ov(None)));
    let missing = review(None, &new, None, None);
    assert_eq!(
        denied(&unshared),
        "Instance tenant-a/zk: OperatorVersion \"foo-operator\" of namespace tenant-b is not \
         shared with namespace tenant-a; use an OperatorVersion of namespace tenant-a, or ask the \
         owner of tenant-b to add tenant-a to the kudo.dev/shared-with annotation of that \
         OperatorVersion"
    );
    assert_eq!(unshared, missing);
    let shared = review(None, &new, None, Some(&tenant_b_ov(Some("tenant-a"))));
    assert!(shared.is_allowed(), "{shared:?}");
    let everyone = review(None, &new, None, Some(&tenant_b_ov(Some("*"))));
    assert!(everyone.is_allowed(), "{everyone:?}");
}

#[test]
fn switching_to_another_namespaces_operator_version_is_refused() {
    let old = idle();
    let new = with(&old, |i| {
        i.spec.operator_version.namespace = Some("tenant-b".into())
    });
    let v = review(
        Some(&old),
        &new,
        Some(&fixture_ov("foo-operator")),
        Some(&tenant_b_ov(Some("tenant-c"))),
    );
    assert!(denied(&v).contains("is not shared with namespace default"));
}

fn ops(ids: &[&str]) -> Vec<PlanOperation> {
    ids.iter()
        .map(|id| op(id, PlanAction::Pause, None, None))
        .collect()
}

fn with_ops(ids: &[&str]) -> Instance {
    with(&running(), |i| i.spec.plan_operations = ops(ids))
}

#[test]
fn plan_operations_are_only_appended_and_dropped_from_the_front() {
    let old = with_ops(&["a", "b", "c"]);
    for allowed in [
        &["a", "b", "c", "d"][..],
        &["b", "c", "d"],
        &["c"],
        &["x", "y"],
        &[],
    ] {
        let v = update(&old, &with_ops(allowed));
        assert!(v.is_allowed(), "{allowed:?}: {v:?}");
    }
    for (refused, named) in [
        (&["b", "a", "c"][..], "a"),
        (&["x", "a", "b", "c"], "a"),
        (&["a", "c", "d"], "b"),
        (&["a", "b"], "c"),
        (&["a", "b", "d", "c"], "c"),
    ] {
        let v = update(&old, &with_ops(refused));
        assert_eq!(
            denied(&v),
            format!(
                "Instance default/zk: plan operation {named:?} must keep its place: \
                 spec.planOperations only grows at its end and loses only its oldest entries, \
                 so that each operation is carried out once"
            ),
            "{refused:?}"
        );
    }
}

#[test]
fn the_id_of_the_last_operation_carried_out_cannot_be_used_again() {
    let old = with(&with_ops(&[]), |i| {
        i.status.as_mut().unwrap().operations_mark = Some("a".into())
    });
    let v = update(&old, &with_ops(&["a"]));
    assert!(denied(&v).contains("plan operation id \"a\" was used before"));
}

#[test]
fn an_instance_name_longer_than_a_label_value_is_refused_on_create() {
    let ov = fixture_ov("foo-operator");
    let new = |name: &str| {
        with(&instance("foo-operator"), |i| {
            i.metadata.name = Some(name.into());
            i.spec.parameters = Some([("foo".to_string(), "x".to_string())].into());
        })
    };
    let long = "a".repeat(64);
    let verdict = review(None, &new(&long), None, Some(&ov));
    assert!(
        denied(&verdict).contains("its name has 64 characters; at most 63"),
        "{verdict:?}"
    );
    warnings(&review(None, &new(&"a".repeat(63)), None, Some(&ov)));
}

#[test]
fn lists_longer_than_the_rules_walk_are_refused_naming_the_field() {
    let old = with_ops(&[]);
    let ids: Vec<String> = (0..=kudo_engine::admission::MAX_PLAN_OPERATIONS)
        .map(|i| format!("op-{i}"))
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(
        denied(&update(&old, &with_ops(&ids))),
        "Instance default/zk: spec.planOperations has 257 entries, at most 256; drop the oldest"
    );
    assert!(update(&old, &with_ops(&ids[1..])).is_allowed());

    let windows = |n: usize| {
        with(&old, |i| {
            i.spec.maintenance_windows = vec![
                serde_json::from_value(
                    serde_json::json!({"days": "*", "start": "01:00", "end": "02:00"})
                )
                .unwrap();
                n
            ]
        })
    };
    assert_eq!(
        denied(&update(&old, &windows(33))),
        "Instance default/zk: spec.maintenanceWindows has 33 entries, at most 32; merge windows"
    );
    assert!(update(&old, &windows(32)).is_allowed());
}

#[test]
fn an_operator_version_declaring_more_parameters_than_a_package_may_is_refused() {
    let mut ov = fixture_ov("foo-operator");
    let extra = ov.spec.parameters[0].clone();
    for i in ov.spec.parameters.len()..=kudo_api::MAX_PARAMETERS {
        ov.spec.parameters.push(kudo_api::Parameter {
            name: format!("p{i}"),
            ..extra.clone()
        });
    }
    let new = with(&instance("foo-operator"), params(&[("foo", "x")]));
    assert_eq!(
        denied(&review(None, &new, None, Some(&ov))),
        "Instance default/zk: OperatorVersion foo-operator declares 1,001 parameters, more than \
         the 1,000 a package may (package verify refuses it too)"
    );
    // An Instance made before the limit may still move away from it.
    let old = with(&idle(), |i| {
        i.spec.operator_version.name = Some("foo-operator".into());
    });
    let moved = with(&old, |i| {
        i.spec.operator_version.name = Some("foo-operator-2".into());
    });
    let fine = fixture_ov("foo-operator-2");
    let verdict = review(Some(&old), &moved, Some(&ov), Some(&fine));
    assert!(verdict.is_allowed(), "{verdict:?}");
}

#[test]
fn parameters_larger_than_the_status_can_keep_are_refused_when_they_change() {
    let ov = fixture_ov("foo-operator");
    let big = "x".repeat(kudo_engine::admission::MAX_PARAMETER_BYTES);
    let new = with(&instance("foo-operator"), params(&[("foo", &big)]));
    assert_eq!(
        denied(&review(None, &new, None, Some(&ov))),
        "Instance default/zk: spec.parameters hold 262,147 bytes, at most 262,144 (the status \
         keeps them twice more, and an object holds at most 1.5 MiB); keep large content in a \
         ConfigMap or Secret and pass its name"
    );
    let fits = with(&instance("foo-operator"), params(&[("foo", &big[3..])]));
    assert!(review(None, &fits, None, Some(&ov)).is_allowed());
}
