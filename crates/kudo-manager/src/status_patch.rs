//! Pure helpers for writing status and finalizers as small patches.

use serde_json::{Map, Value, json};

/// RFC 7386 merge patch turning `old` into `new`: changed keys carry their
/// new value, removed keys `null`; arrays and scalars are replaced whole.
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) if ov == nv => {}
                    Some(ov) => {
                        patch.insert(k.clone(), merge_patch(ov, nv));
                    }
                    None => {
                        patch.insert(k.clone(), nv.clone());
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// `{"status": ...}` serialised straight from the typed status: the merge
/// patch from an empty stored status, without building Values to diff.
#[derive(Debug, serde::Serialize)]
pub struct StatusPatch<'a> {
    /// The whole new status.
    pub status: &'a kudo_api::InstanceStatus,
}

/// JSON patch adding `finalizer` to `current` (guarded by a `test` so a
/// concurrent change makes the patch fail rather than clobber it).
pub fn add_finalizer(current: Option<&[String]>, finalizer: &str) -> Value {
    match current {
        Some(list) if !list.is_empty() => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": list},
            {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}
        ]),
        _ => json!([
            {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}
        ]),
    }
}

/// JSON patch removing `finalizer` from `current`; `None` if it is not there.
pub fn remove_finalizer(current: &[String], finalizer: &str) -> Option<Value> {
    let index = current.iter().position(|f| f == finalizer)?;
    Some(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": current},
        {"op": "remove", "path": format!("/metadata/finalizers/{index}")}
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_nulls_removed_keys_and_keeps_unchanged_out() {
        let old = json!({"a": 1, "b": {"x": 1, "y": 2}, "gone": true, "list": [1, 2]});
        let new = json!({"a": 1, "b": {"x": 1, "y": 3}, "list": [1]});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"b": {"y": 3}, "gone": null, "list": [1]})
        );
    }

    #[test]
    fn merge_patch_of_equal_values_is_empty() {
        let v = json!({"a": {"b": [1]}});
        assert_eq!(merge_patch(&v, &v), json!({}));
    }

    #[test]
    fn a_whole_status_patch_equals_the_merge_patch_from_an_empty_status() {
        use kudo_api::{InstanceStatus, PhaseStatus, PlanStatus, StepStatus};
        let empty = serde_json::to_value(InstanceStatus::default()).unwrap();
        assert_eq!(
            empty,
            json!({}),
            "a stored default status takes the fast path"
        );
        let mut status = InstanceStatus::default();
        let plan = PlanStatus {
            name: "deploy".into(),
            phases: vec![PhaseStatus {
                name: "main".into(),
                steps: vec![StepStatus {
                    name: "s0".into(),
                    ..StepStatus::default()
                }],
                ..PhaseStatus::default()
            }],
            ..PlanStatus::default()
        };
        status.plan_status.insert("deploy".into(), plan);
        let new = serde_json::to_value(&status).unwrap();
        let diffed = json!({ "status": merge_patch(&empty, &new) });
        let whole = serde_json::to_string(&StatusPatch { status: &status }).unwrap();
        assert_eq!(whole, serde_json::to_string(&diffed).unwrap());
    }

    #[test]
    fn adding_the_first_finalizer_creates_the_list() {
        assert_eq!(
            add_finalizer(None, "f"),
            json!([{"op": "add", "path": "/metadata/finalizers", "value": ["f"]}])
        );
    }

    #[test]
    fn adding_to_existing_finalizers_is_guarded_by_a_test() {
        let cur = vec!["other".to_string()];
        let p = add_finalizer(Some(&cur), "f");
        assert_eq!(p[0]["op"], "test");
        assert_eq!(p[1]["path"], "/metadata/finalizers/-");
    }

    #[test]
    fn removing_a_finalizer_targets_its_index() {
        let cur = vec!["a".to_string(), "f".to_string()];
        let p = remove_finalizer(&cur, "f").unwrap_or_default();
        assert_eq!(p[1]["path"], "/metadata/finalizers/1");
        assert!(remove_finalizer(&cur, "missing").is_none());
    }
}
