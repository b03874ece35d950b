//! JSON merge patch, JSON patch and strategic merge patch.

use serde_json::{Map, Value};

use crate::status::ApiError;

/// The patch types the API accepts, by Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchKind {
    /// The patch type for a Content-Type header.
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        let base = ct.split(';').next().unwrap_or_default().trim();
        match base {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/json-patch+json" => Ok(Self::Json),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Applies an RFC 7386 merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// [`merge`] taking the patch by value: its parts move into the target
/// instead of being copied (a status patch can be the whole status). The
/// map operations are `json_patch::merge`'s, so key order comes out the same.
pub fn merge_owned(target: &mut Value, patch: Value) {
    let Value::Object(patch) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(map) = target.as_object_mut() else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key.as_str());
        } else {
            merge_owned(map.entry(key).or_insert(Value::Null), value);
        }
    }
}

/// Applies an RFC 6902 patch; a failing operation is a 422 like the real server.
pub fn json(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| {
        ApiError::bad_request(format!("the request body is not a valid JSON patch: {e}"))
    })?;
    json_patch::patch(target, &ops).map_err(|e| ApiError {
        code: 422,
        reason: "Invalid",
        message: format!("the server rejected our request due to an error in our request: {e}"),
        details: None,
    })
}

/// The merge key of a list field for strategic merge, given its first item.
fn merge_key(field: &str, sample: Option<&Value>) -> Option<&'static str> {
    let has = |k: &str| sample.is_some_and(|s| s.get(k).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "hostAliases"
        | "volumeClaimTemplates" => Some(if field == "hostAliases" { "ip" } else { "name" }),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" => Some("port"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "topologySpreadConstraints" => Some("topologyKey"),
        _ => None,
    }
}

/// Lists of scalars merged as sets under strategic merge.
fn is_primitive_set(field: &str) -> bool {
    field == "finalizers"
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch. Lists with a known merge key (containers
/// by name, ports by port, conditions by type, ...) are merged item by item;
/// other lists are replaced; `$patch: delete|replace`, `$retainKeys`,
/// `$setElementOrder/...` and `$deleteFromPrimitiveList/...` are understood.
pub fn strategic(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Value::Object(pm) = patch else {
        *target = strip_directives(patch);
        return Ok(());
    };
    match pm.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = strip_directives(patch);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) if other != "merge" => {
            return Err(ApiError::bad_request(format!(
                "unknown $patch directive {other:?} in strategic merge patch"
            )));
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(tm) = target.as_object_mut() else {
        return Ok(());
    };
    if let Some(retain) = pm.get("$retainKeys").and_then(Value::as_array) {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        tm.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, pv) in pm {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (tm.get_mut(field), pv.as_array()) {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if pv.is_null() {
            tm.remove(key);
            continue;
        }
        match (tm.get_mut(key), pv) {
            (Some(tv @ Value::Object(_)), Value::Object(_)) => strategic(tv, pv)?,
            (Some(Value::Array(tl)), Value::Array(pl)) => {
                if let Some(mk) = merge_key(key, pl.first().or(tl.first())) {
                    merge_list_by_key(tl, pl, mk)?;
                } else if is_primitive_set(key) {
                    for item in pl {
                        if !tl.contains(item) {
                            tl.push(item.clone());
                        }
                    }
                } else {
                    *tl = pl.iter().map(strip_directives).collect();
                }
            }
            _ => {
                tm.insert(key.clone(), strip_directives(pv));
            }
        }
    }
    Ok(())
}

fn merge_list_by_key(target: &mut Vec<Value>, patch: &[Value], key: &str) -> Result<(), ApiError> {
    if patch
        .iter()
        .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *target = patch
            .iter()
            .filter(|p| p.get("$patch").is_none())
            .map(strip_directives)
            .collect();
        return Ok(());
    }
    for item in patch {
        let id = item.get(key);
        let pos = id.and_then(|id| target.iter().position(|t| t.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                target.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic(&mut target[i], item)?,
            (None, false) => target.push(strip_directives(item)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_by_value_gives_what_merge_by_reference_gives() {
        let target = json!({"a": 1, "b": {"x": 1, "y": [1, 2]}, "c": "keep", "d": {"e": 1}});
        for patch in [
            json!({"b": {"y": null, "z": {"n": 1}}, "a": null, "new": [1], "d": 5}),
            json!({"c": {"now": "an object"}, "f": null}),
            json!({}),
            json!(["not", "an", "object"]),
            json!(null),
        ] {
            let mut by_ref = target.clone();
            merge(&mut by_ref, &patch);
            let mut by_value = target.clone();
            merge_owned(&mut by_value, patch.clone());
            assert_eq!(
                serde_json::to_string(&by_value).unwrap(),
                serde_json::to_string(&by_ref).unwrap(),
                "patch {patch}"
            );
        }
    }

    #[test]
    fn strategic_merges_containers_by_name() {
        let mut t = json!({"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}});
        let p = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                                  "containers": [{"name": "b", "image": "b:2"}]}});
        strategic(&mut t, &p).unwrap();
        assert_eq!(t["spec"]["containers"][0]["image"], "a:1");
        assert_eq!(t["spec"]["containers"][1]["image"], "b:2");
        assert!(t["spec"].get("$setElementOrder/containers").is_none());
    }

    #[test]
    fn strategic_deletes_items_and_fields() {
        let mut t = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
                           "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let p = json!({"metadata": {"labels": {"a": null}, "$deleteFromPrimitiveList/finalizers": ["x"]},
                       "spec": {"containers": [{"name": "a", "$patch": "delete"}]}});
        strategic(&mut t, &p).unwrap();
        assert_eq!(t["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(t["metadata"]["finalizers"], json!(["y"]));
        assert_eq!(t["spec"]["containers"], json!([{"name": "b"}]));
    }

    #[test]
    fn strategic_replaces_unknown_lists() {
        let mut t = json!({"args": ["a", "b"]});
        strategic(&mut t, &json!({"args": ["c"]})).unwrap();
        assert_eq!(t["args"], json!(["c"]));
    }

    #[test]
    fn json_patch_test_failure_is_invalid() {
        let mut t = json!({"metadata": {"finalizers": ["f"]}});
        let p = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "other"}]);
        assert_eq!(json(&mut t, &p).unwrap_err().code, 422);
    }

    #[test]
    fn unknown_content_type_is_rejected() {
        assert_eq!(
            PatchKind::from_content_type("text/plain").unwrap_err().code,
            415
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml; charset=utf-8").unwrap(),
            PatchKind::Apply
        );
    }
}
