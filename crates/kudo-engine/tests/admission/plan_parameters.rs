//! Plan parameters (`spec.planExecution.parameters`): declared names and
//! valid values only, tied to one run (a new uid).

use super::*;

fn manual_with(plan: &str, uid: &str, kv: &[(&str, &str)]) -> impl FnOnce(&mut Instance) {
    let (plan, uid) = (plan.to_string(), uid.to_string());
    let values: BTreeMap<String, String> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |i| {
        i.spec.plan_execution = Some(PlanExecution {
            plan_name: Some(plan),
            uid: Some(uid),
            parameters: Some(values),
            ..Default::default()
        })
    }
}

/// `fixture_ov` with `size` (integer, enum 1|3) and a required `bucket`.
fn typed_ov(name: &str) -> OperatorVersion {
    let mut ov = fixture_ov(name);
    ov.spec.parameters.push(kudo_api::Parameter {
        name: "size".into(),
        value_type: Some(ParameterType::Integer),
        enum_values: Some(vec!["1".into(), "3".into()]),
        default: Some("1".into()),
        ..Default::default()
    });
    ov.spec.parameters.push(kudo_api::Parameter {
        name: "bucket".into(),
        required: Some(true),
        default: Some("main".into()),
        ..Default::default()
    });
    ov
}

fn typed_update(old: &Instance, new: &Instance) -> Verdict {
    let ov = typed_ov("foo-operator");
    review(Some(old), new, Some(&ov), Some(&ov))
}

#[test]
fn a_run_with_declared_valid_parameters_is_allowed() {
    let old = idle();
    let new = with(
        &old,
        manual_with("update", "u1", &[("size", "3"), ("bucket", "x")]),
    );
    warnings(&typed_update(&old, &new));
}

#[test]
fn an_undeclared_plan_parameter_is_refused_naming_it_and_the_declared_ones() {
    let old = idle();
    let new = with(&old, manual_with("update", "u1", &[("BUKET", "x")]));
    let message = denied(&typed_update(&old, &new)).to_string();
    assert!(message.contains("BUKET"), "{message}");
    assert!(message.contains("not declared"), "{message}");
    assert!(message.contains("bucket"), "{message}");
}

#[test]
fn a_plan_parameter_of_the_wrong_type_or_outside_its_enum_is_refused() {
    let old = idle();
    let wrong_type = with(&old, manual_with("update", "u1", &[("size", "three")]));
    let message = denied(&typed_update(&old, &wrong_type)).to_string();
    assert!(
        message.contains("size") && message.contains("integer"),
        "{message}"
    );
    let outside = with(&old, manual_with("update", "u1", &[("size", "2")]));
    let message = denied(&typed_update(&old, &outside)).to_string();
    assert!(message.contains("allowed values"), "{message}");
}

#[test]
fn emptying_a_required_parameter_for_a_run_is_refused() {
    let old = idle();
    let mut ov = typed_ov("foo-operator");
    for p in &mut ov.spec.parameters {
        if p.name == "bucket" {
            p.default = None;
        }
    }
    let old = with(&old, params(&[("foo", "foo"), ("bucket", "b")]));
    let new = with(&old, manual_with("update", "u1", &[("bucket", "")]));
    let message = denied(&review(Some(&old), &new, Some(&ov), Some(&ov))).to_string();
    assert!(message.contains("bucket is required"), "{message}");
}

#[test]
fn plan_parameters_without_a_plan_and_uid_are_refused() {
    let old = idle();
    let new = with(&old, |i| {
        i.spec.plan_execution = Some(PlanExecution {
            parameters: Some(BTreeMap::from([("size".into(), "3".into())])),
            ..Default::default()
        })
    });
    let message = denied(&typed_update(&old, &new)).to_string();
    assert!(message.contains("without a plan to run"), "{message}");
    let created = review(None, &new, None, Some(&typed_ov("foo-operator")));
    assert!(denied(&created).contains("without a plan"), "{created:?}");
}

#[test]
fn plan_parameters_changed_without_a_new_uid_are_refused() {
    let old = with(&idle(), manual_with("update", "u1", &[("size", "3")]));
    let new = with(&old, manual_with("update", "u1", &[("size", "1")]));
    let message = denied(&typed_update(&old, &new)).to_string();
    assert!(message.contains("without a new uid"), "{message}");
    // Dropping them changes nothing and is allowed.
    let cleared = with(&old, manual("update", "u1"));
    warnings(&typed_update(&old, &cleared));
}

#[test]
fn a_parameter_with_a_trigger_plan_may_be_given_to_a_run_of_another_plan() {
    // `bar` triggers update; given to a run of canary it triggers nothing.
    let old = idle();
    let new = with(&old, manual_with("canary", "u1", &[("bar", "x")]));
    warnings(&update(&old, &new));
}

#[test]
fn plan_parameters_on_create_are_checked_too() {
    let new = with(
        &instance("foo-operator"),
        manual_with("update", "u1", &[("nope", "x")]),
    );
    let verdict = review(None, &new, None, Some(&typed_ov("foo-operator")));
    assert!(denied(&verdict).contains("nope"), "{verdict:?}");
}

#[test]
fn a_new_run_left_with_the_last_runs_values_is_allowed_with_a_warning() {
    let old = with(&idle(), manual_with("update", "u1", &[("size", "3")]));
    let new = with(&old, manual_with("update", "u2", &[("size", "3")]));
    let verdict = typed_update(&old, &new);
    let said = warnings(&verdict);
    assert!(
        said.iter()
            .any(|w| w.contains("the run of uid u1 was given") && w.contains("null")),
        "{said:?}"
    );
    let fresh = with(&old, manual_with("update", "u2", &[("size", "1")]));
    let verdict = typed_update(&old, &fresh);
    assert!(!warnings(&verdict).iter().any(|w| w.contains("was given")));
}

#[test]
fn a_run_whose_values_the_status_cannot_keep_is_refused() {
    let old = idle();
    let big = "x".repeat(kudo_engine::admission::MAX_PARAMETER_BYTES);
    let new = with(&old, manual_with("update", "u1", &[("bucket", &big)]));
    assert_eq!(
        denied(&typed_update(&old, &new)),
        "Instance default/zk: spec.planExecution.parameters hold 262,150 bytes, at most \
         262,144 (the plan's status keeps them too, and an object holds at most 1.5 MiB); keep \
         large content in a ConfigMap or Secret and pass its name"
    );
}
