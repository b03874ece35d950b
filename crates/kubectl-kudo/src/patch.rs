//! JSON merge patches the CLI sends for Instances. The CLI writes only spec
//! (and metadata.resourceVersion as a precondition); the webhook decides
//! whether a request is allowed, the manager what it means.

use std::collections::BTreeMap;

use kudo_api::{AppliedConfig, PlanOperation, Suppression};
use serde_json::{Map, Value, json};

/// How many plan operations spec keeps; the oldest are dropped from the
/// front (the manager's mark in status already covers them, so dropping
/// them changes nothing).
pub const MAX_PLAN_OPERATIONS: usize = 20;

/// `update`: set (never remove) parameters.
pub fn parameters(values: &BTreeMap<String, String>) -> Value {
    json!({ "spec": { "parameters": values } })
}

/// `upgrade`: switch the OperatorVersion and set parameters.
pub fn upgrade(operator_version: &str, values: &BTreeMap<String, String>) -> Value {
    let mut spec = Map::new();
    spec.insert(
        "operatorVersion".into(),
        json!({ "name": operator_version }),
    );
    if !values.is_empty() {
        spec.insert("parameters".into(), json!(values));
    }
    json!({ "spec": spec })
}

/// `plan trigger`: request a run of `plan` with a fresh uid, with
/// `parameters` for that run only. The whole of `planExecution` is
/// replaced (`null` clears what an earlier request set), so the values of
/// one run never carry over to the next.
pub fn trigger(
    plan: &str,
    uid: &str,
    break_glass: bool,
    parameters: &BTreeMap<String, String>,
) -> Value {
    json!({ "spec": { "planExecution": {
        "planName": plan,
        "uid": uid,
        "breakGlass": if break_glass { json!(true) } else { Value::Null },
        "parameters": if parameters.is_empty() { Value::Null } else { json!(parameters) },
    } } })
}

/// The list of plan operations with `new` appended, keeping the last
/// [`MAX_PLAN_OPERATIONS`].
pub fn appended_operations(existing: &[PlanOperation], new: PlanOperation) -> Vec<PlanOperation> {
    let mut all: Vec<PlanOperation> = existing.to_vec();
    all.push(new);
    let excess = all.len().saturating_sub(MAX_PLAN_OPERATIONS);
    all.drain(..excess);
    all
}

/// A plan operation appended to spec, guarded by `resource_version` so a
/// concurrent writer makes the server answer 409 instead of losing an entry.
pub fn plan_operations(
    resource_version: &str,
    existing: &[PlanOperation],
    new: PlanOperation,
) -> Value {
    json!({
        "metadata": { "resourceVersion": resource_version },
        "spec": { "planOperations": appended_operations(existing, new) },
    })
}

/// `suppress`: append a manual suppression window.
pub fn add_suppression(
    resource_version: &str,
    existing: &[Suppression],
    new: Suppression,
) -> Value {
    let mut all = existing.to_vec();
    all.push(new);
    json!({
        "metadata": { "resourceVersion": resource_version },
        "spec": { "suppressions": all },
    })
}

/// `suppress clear`: drop every manual suppression and record a
/// clearSuppression operation (which clears an automatic one).
pub fn clear_suppressions(
    resource_version: &str,
    existing_operations: &[PlanOperation],
    clear: PlanOperation,
) -> Value {
    json!({
        "metadata": { "resourceVersion": resource_version },
        "spec": {
            "suppressions": Value::Null,
            "planOperations": appended_operations(existing_operations, clear),
        },
    })
}

/// `rollback`: the OperatorVersion and parameters of `target`; parameters in
/// `current` that the target lacks are removed (null in a merge patch).
pub fn rollback(
    resource_version: &str,
    current: &BTreeMap<String, String>,
    target: &AppliedConfig,
) -> Value {
    let mut params = Map::new();
    for key in current.keys() {
        if !target.parameters.contains_key(key) {
            params.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in &target.parameters {
        params.insert(key.clone(), json!(value));
    }
    let mut spec = Map::new();
    spec.insert(
        "operatorVersion".into(),
        json!({ "name": target.operator_version }),
    );
    if !params.is_empty() {
        spec.insert("parameters".into(), Value::Object(params));
    }
    json!({
        "metadata": { "resourceVersion": resource_version },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::PlanAction;
    use pretty_assertions::assert_eq;

    fn op(id: usize) -> PlanOperation {
        PlanOperation {
            id: format!("op-{id}"),
            action: PlanAction::Pause,
            ..Default::default()
        }
    }

    #[test]
    fn trigger_sets_plan_and_uid_and_clears_what_an_earlier_run_was_given() {
        assert_eq!(
            trigger("backup", "u1", false, &BTreeMap::new()),
            json!({"spec": {"planExecution": {
                "planName": "backup", "uid": "u1", "breakGlass": null, "parameters": null
            }}})
        );
        assert_eq!(
            trigger("backup", "u1", true, &BTreeMap::new())["spec"]["planExecution"]["breakGlass"],
            json!(true)
        );
    }

    #[test]
    fn trigger_carries_the_values_of_the_run() {
        let values = BTreeMap::from([("BUCKET".to_string(), "x".to_string())]);
        assert_eq!(
            trigger("backup", "u1", false, &values)["spec"]["planExecution"]["parameters"],
            json!({"BUCKET": "x"})
        );
    }

    #[test]
    fn upgrade_without_parameters_only_switches_the_operator_version() {
        assert_eq!(
            upgrade("kafka-1.1.0", &BTreeMap::new()),
            json!({"spec": {"operatorVersion": {"name": "kafka-1.1.0"}}})
        );
    }

    #[test]
    fn operations_keep_only_the_last_twenty_entries() {
        let existing: Vec<_> = (0..20).map(op).collect();
        let patch = plan_operations("42", &existing, op(20));
        let ids: Vec<_> = patch["spec"]["planOperations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 20);
        assert_eq!(ids.first().map(String::as_str), Some("op-1"));
        assert_eq!(ids.last().map(String::as_str), Some("op-20"));
        assert_eq!(patch["metadata"]["resourceVersion"], json!("42"));
    }

    #[test]
    fn rollback_nulls_parameters_the_target_did_not_have() {
        let current = BTreeMap::from([
            ("A".to_string(), "2".to_string()),
            ("NEW".to_string(), "x".to_string()),
        ]);
        let target = AppliedConfig {
            operator_version: "app-1.0.0".into(),
            parameters: BTreeMap::from([("A".to_string(), "1".to_string())]),
            ..Default::default()
        };
        assert_eq!(
            rollback("7", &current, &target),
            json!({
                "metadata": {"resourceVersion": "7"},
                "spec": {
                    "operatorVersion": {"name": "app-1.0.0"},
                    "parameters": {"A": "1", "NEW": null},
                },
            })
        );
    }

    #[test]
    fn clearing_suppressions_removes_the_field_and_appends_the_operation() {
        let clear = PlanOperation {
            id: "c".into(),
            action: PlanAction::ClearSuppression,
            ..Default::default()
        };
        let patch = clear_suppressions("3", &[op(1)], clear);
        assert_eq!(patch["spec"]["suppressions"], Value::Null);
        assert_eq!(
            patch["spec"]["planOperations"][1]["action"],
            json!("clearSuppression")
        );
    }
}
