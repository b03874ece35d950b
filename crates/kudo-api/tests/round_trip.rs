//! KUDO-shaped YAML deserializes into the typed API and serializes back
//! without losing or changing a field.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kudo_api::{Instance, Operator, OperatorVersion};
use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn fixture(name: &str) -> serde_json::Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let raw = fixture(name);
    let typed: T = serde_json::from_value(raw.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, raw, "{name} changed on a round trip");
    typed
}

#[test]
fn operator_round_trips() {
    let op: Operator = round_trip("operator.yaml");
    assert_eq!(op.spec.maintainers.len(), 1);
}

#[test]
fn operator_version_with_every_task_kind_and_value_type_round_trips() {
    let ov: OperatorVersion = round_trip("operatorversion.yaml");
    let kinds: Vec<_> = ov
        .spec
        .tasks
        .iter()
        .map(|t| t.task_kind().unwrap())
        .collect();
    for kind in kudo_api::TaskKind::ALL {
        assert!(kinds.contains(&kind), "fixture lacks a {kind} task");
    }
    let types: Vec<_> = ov.spec.parameters.iter().map(|p| p.kind()).collect();
    for t in [
        kudo_api::ParameterType::String,
        kudo_api::ParameterType::Integer,
        kudo_api::ParameterType::Number,
        kudo_api::ParameterType::Boolean,
        kudo_api::ParameterType::Array,
        kudo_api::ParameterType::Map,
    ] {
        assert!(types.contains(&t), "fixture lacks a {t} parameter");
    }
    assert_eq!(
        ov.spec.parameter("MONITORING").unwrap().trigger.as_deref(),
        Some("update")
    );
    assert!(ov.spec.plan("empty").unwrap().phases.is_empty());
}

#[test]
fn instance_mid_plan_round_trips() {
    let inst: Instance = round_trip("instance-mid-plan.yaml");
    let status = inst.status.unwrap();
    let deploy = &status.plan_status["deploy"];
    assert_eq!(deploy.status(), kudo_api::ExecutionStatus::InProgress);
    assert_eq!(
        deploy.phases[1].steps[0].status(),
        kudo_api::ExecutionStatus::Error
    );
    assert_eq!(
        inst.spec.plan_execution.unwrap().status,
        Some(kudo_api::ExecutionStatus::InProgress)
    );
}

#[test]
fn instance_with_empty_plan_execution_round_trips() {
    let inst: Instance = round_trip("instance-finished.yaml");
    assert_eq!(inst.spec.plan_execution, Some(Default::default()));
}

#[test]
fn instance_with_every_kudo_rs_addition_round_trips() {
    let inst: Instance = round_trip("instance-kudo-rs.yaml");
    assert_eq!(inst.spec.plan_operations.len(), 2);
    let status = inst.status.unwrap();
    assert_eq!(status.history.len(), 2);
    assert_eq!(
        status.blockers[0].kind,
        kudo_api::BlockerKind::CanaryApproval
    );
}

#[test]
fn package_parameter_required_defaults_to_true_and_default_keeps_its_yaml_type() {
    let params: kudo_api::package::ParamsFile = serde_saphyr::from_str(
        "parameters:\n- name: A\n  default: 3\n- name: B\n  required: false\n  default: {x: [1, 2]}\n  type: map\n",
    )
    .unwrap();
    assert!(params.parameters[0].required);
    assert_eq!(params.parameters[0].default, Some(serde_json::json!(3)));
    assert!(!params.parameters[1].required);
    assert_eq!(
        params.parameters[1].default,
        Some(serde_json::json!({"x": [1, 2]}))
    );
    assert_eq!(
        params.parameters[1].value_type,
        Some(kudo_api::ParameterType::Map)
    );
}
