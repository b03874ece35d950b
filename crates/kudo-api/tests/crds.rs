//! The committed CRDs in `crds/` match the types, are structural, and accept
//! every object KUDO (and kudo-rs) writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use std::path::PathBuf;

use serde_json::Value;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn committed_crds_match_the_types() {
    for crd in kudo_api::crds::all() {
        let file = repo_root()
            .join("crds")
            .join(kudo_api::crds::file_name(&crd));
        let committed = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}; run `make crds`", file.display()));
        let generated = kudo_api::crds::to_yaml(&crd).unwrap();
        assert!(
            committed == generated,
            "{} is out of date with crates/kudo-api; run `make crds` and commit crds/",
            file.display()
        );
    }
}

fn schema_of(plural: &str) -> Value {
    let crd = kudo_api::crds::all()
        .into_iter()
        .find(|c| c.spec.names.plural == plural)
        .unwrap();
    let v = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    v["openAPIV3Schema"].clone()
}

/// Structural schema rules of apiextensions.k8s.io/v1 that a derive can break:
/// every node specifies a type (or preserves unknown fields / int-or-string),
/// and value validations (anyOf/oneOf/allOf/not) carry no types or defaults.
fn assert_structural(path: &str, node: &Value) {
    let obj = node
        .as_object()
        .unwrap_or_else(|| panic!("{path}: schema is not an object"));
    let exempt = obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        || obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    assert!(obj.contains_key("type") || exempt, "{path}: no type");
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            for b in branches {
                for forbidden in ["type", "default", "nullable", "description"] {
                    assert!(
                        b.get(forbidden).is_none(),
                        "{path}.{key}: branch sets {forbidden}"
                    );
                }
            }
        }
    }
    assert!(!obj.contains_key("$ref"), "{path}: $ref is not allowed");
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (k, v) in props {
            assert_structural(&format!("{path}.{k}"), v);
        }
    }
    if let Some(items) = obj.get("items") {
        assert_structural(&format!("{path}[]"), items);
    }
    if let Some(add @ Value::Object(_)) = obj.get("additionalProperties") {
        assert_structural(&format!("{path}{{}}"), add);
    }
}

#[test]
fn schemas_are_structural() {
    for plural in ["operators", "operatorversions", "instances"] {
        assert_structural(plural, &schema_of(plural));
    }
}

/// Checks `value` against `schema` the way the API server would: every field
/// must be known (or it would be pruned), types and enums must match.
fn validate(path: &str, schema: &Value, value: &Value, errors: &mut Vec<String>) {
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            errors.push(format!("{path}: null but not nullable"));
        }
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        errors.push(format!("{path}: {value} not in enum {allowed:?}"));
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    match (ty, value) {
        ("object", Value::Object(map)) => {
            for (k, v) in map {
                if let Some(p) = schema.get("properties").and_then(|p| p.get(k)) {
                    validate(&format!("{path}.{k}"), p, v, errors);
                } else if let Some(add @ Value::Object(_)) = schema.get("additionalProperties") {
                    validate(&format!("{path}.{k}"), add, v, errors);
                } else if schema.get("x-kubernetes-preserve-unknown-fields")
                    != Some(&Value::Bool(true))
                {
                    errors.push(format!("{path}.{k}: unknown field (would be pruned)"));
                }
            }
            if let Some(Value::Array(req)) = schema.get("required") {
                for r in req {
                    if !map.contains_key(r.as_str().unwrap_or("")) {
                        errors.push(format!("{path}: missing required {r}"));
                    }
                }
            }
        }
        ("array", Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                validate(&format!("{path}[{i}]"), &schema["items"], v, errors);
            }
        }
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) => {}
        ("integer", Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        ("number", Value::Number(_)) => {}
        ("", _) => {}
        _ => errors.push(format!("{path}: {value} is not of type {ty}")),
    }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn assert_accepted(plural: &str, fixture_name: &str) {
    let obj = fixture(fixture_name);
    let schema = schema_of(plural);
    let mut errors = Vec::new();
    for part in ["spec", "status"] {
        if let Some(v) = obj.get(part) {
            validate(part, &schema["properties"][part], v, &mut errors);
        }
    }
    assert!(
        errors.is_empty(),
        "{fixture_name} rejected by the {plural} schema: {errors:#?}"
    );
}

#[test]
fn schemas_accept_kudo_written_objects() {
    assert_accepted("operators", "operator.yaml");
    assert_accepted("operatorversions", "operatorversion.yaml");
    assert_accepted("instances", "instance-mid-plan.yaml");
    assert_accepted("instances", "instance-finished.yaml");
    assert_accepted("instances", "instance-kudo-rs.yaml");
}

#[test]
fn schema_validation_rejects_unknown_status_strings() {
    let mut obj = fixture("instance-finished.yaml");
    obj["status"]["planStatus"]["deploy"]["status"] = Value::String("RUNNING".into());
    let mut errors = Vec::new();
    validate(
        "status",
        &schema_of("instances")["properties"]["status"],
        &obj["status"],
        &mut errors,
    );
    assert!(errors.iter().any(|e| e.contains("RUNNING")), "{errors:?}");
}

#[test]
fn instance_has_status_subresource_printer_columns_short_name_and_category() {
    let crd = crd_of_kind("Instance");
    assert_eq!(
        crd.spec.names.short_names.as_deref(),
        Some(&["inst".to_string()][..])
    );
    assert_eq!(
        crd.spec.names.categories.as_deref(),
        Some(&["kudo".to_string()][..])
    );
    assert_eq!(
        status_and_columns(&crd),
        ["Operator Version", "Plan", "Status", "Age"]
    );
}

/// The printer column names of a CRD whose first version has the status
/// subresource (checked).
fn status_and_columns(crd: &CustomResourceDefinition) -> Vec<String> {
    let v = &crd.spec.versions[0];
    assert!(v.subresources.as_ref().unwrap().status.is_some());
    v.additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect()
}

fn crd_of_kind(kind: &str) -> CustomResourceDefinition {
    kudo_api::crds::all()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD of kind {kind}"))
}

#[test]
fn maintenance_schedule_is_cluster_scoped_with_status_short_name_category_and_columns() {
    let crd = crd_of_kind("MaintenanceSchedule");
    assert_eq!(crd.spec.scope, "Cluster");
    assert_eq!(
        crd.spec.names.short_names.as_deref(),
        Some(&["ms".to_string()][..])
    );
    assert_eq!(
        crd.spec.names.categories.as_deref(),
        Some(&["kudo".to_string()][..])
    );
    assert_eq!(
        status_and_columns(&crd),
        ["Next Window", "Draining", "Down", "Age"]
    );
}
