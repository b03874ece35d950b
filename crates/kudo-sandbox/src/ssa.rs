//! Server-side apply with per-field-manager ownership.
//!
//! Ownership is tracked as a set of leaf field paths per manager. Lists of
//! objects that all carry a key field (`name`, `type`, ...) are associative
//! and tracked per item; other lists are atomic leaves.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::store::{FieldPath, Owners};

/// Which part of an object a write may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything except `status` (resources with a status subresource).
    MainWithoutStatus,
    /// Everything (resources without a status subresource).
    Main,
    /// Only `status`.
    Status,
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The other manager.
    pub manager: String,
    /// Dotted path of the field.
    pub field: String,
}

const LIST_KEYS: [&str; 6] = ["name", "type", "mountPath", "containerPort", "port", "uid"];

fn list_key(items: &[Value]) -> Option<&'static str> {
    if items.is_empty() || !items.iter().all(Value::is_object) {
        return None;
    }
    LIST_KEYS.into_iter().find(|k| {
        items
            .iter()
            .all(|i| i.get(*k).is_some_and(|v| v.is_string() || v.is_number()))
    })
}

fn item_segment(key: &str, item: &Value) -> String {
    let id = match &item[key] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    format!("[{key}={id}]")
}

fn parse_item_segment(seg: &str) -> Option<(&str, &str)> {
    seg.strip_prefix('[')?.strip_suffix(']')?.split_once('=')
}

fn item_matches(item: &Value, key: &str, id: &str) -> bool {
    match item.get(key) {
        Some(Value::String(s)) => s == id,
        Some(Value::Number(n)) => id.parse::<f64>().ok() == n.as_f64(),
        Some(_) => false,
        None => false,
    }
}

fn collect_leaves(v: &Value, prefix: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                prefix.push(k.clone());
                collect_leaves(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => match list_key(items) {
            Some(key) => {
                for item in items {
                    prefix.push(item_segment(key, item));
                    collect_leaves(item, prefix, out);
                    prefix.pop();
                }
            }
            None => {
                out.insert(prefix.clone());
            }
        },
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// Leaf paths of the parts of `obj` a write in `scope` may own.
pub fn owned_paths(obj: &Value, scope: Scope) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    let Some(m) = obj.as_object() else {
        return out;
    };
    for (k, v) in m {
        let include = match (k.as_str(), scope) {
            ("apiVersion" | "kind", _) => false,
            ("status", Scope::Status) => true,
            (_, Scope::Status) => false,
            ("status", Scope::MainWithoutStatus) => false,
            ("metadata", _) => false,
            _ => true,
        };
        if include {
            collect_leaves(v, &mut vec![k.clone()], &mut out);
        }
    }
    if scope != Scope::Status {
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            if let Some(v) = obj["metadata"].get(field) {
                collect_leaves(v, &mut vec!["metadata".into(), field.into()], &mut out);
            }
        }
    }
    out
}

/// The value at a path, if present.
pub fn value_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path {
        cur = match (cur, parse_item_segment(seg)) {
            (Value::Array(items), Some((k, id))) => {
                items.iter().find(|i| item_matches(i, k, id))?
            }
            (Value::Object(m), _) => m.get(seg)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Removes the field at a path, then removes parents left empty (list items
/// left with only their key field count as empty).
fn remove_path(obj: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let Some(parent) = value_at_mut(obj, parents) else {
        return;
    };
    match (parent, parse_item_segment(last)) {
        (Value::Array(items), Some((k, id))) => items.retain(|i| !item_matches(i, k, id)),
        (Value::Object(m), _) => {
            m.remove(last);
        }
        _ => return,
    }
    if parents.len() > 1 {
        let empty = match value_at(obj, parents) {
            Some(Value::Object(m)) => {
                m.is_empty()
                    || parse_item_segment(&parents[parents.len() - 1])
                        .is_some_and(|(k, _)| m.len() == 1 && m.contains_key(k))
            }
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if empty {
            remove_path(obj, parents);
        }
    }
}

fn value_at_mut<'a>(obj: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = obj;
    for seg in path {
        cur = match (cur, parse_item_segment(seg)) {
            (Value::Array(items), Some((k, id))) => {
                items.iter_mut().find(|i| item_matches(i, k, id))?
            }
            (Value::Object(m), _) => m.get_mut(seg)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Deep-merges an applied configuration into an object: maps merge,
/// associative lists merge per item, other lists and scalars are replaced.
fn merge_config(target: &mut Value, config: &Value) {
    match (target, config) {
        (Value::Object(tm), Value::Object(cm)) => {
            for (k, cv) in cm {
                match tm.get_mut(k) {
                    Some(tv) if !cv.is_null() => merge_config(tv, cv),
                    _ => {
                        tm.insert(k.clone(), cv.clone());
                    }
                }
            }
        }
        (Value::Array(tl), Value::Array(cl)) => match list_key(cl) {
            Some(key) if list_key(tl).is_some() || tl.is_empty() => {
                let mut merged: Vec<Value> = Vec::with_capacity(cl.len());
                for citem in cl {
                    let mut item = tl
                        .iter()
                        .find(|t| t.get(key) == citem.get(key))
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Map::new()));
                    merge_config(&mut item, citem);
                    merged.push(item);
                }
                // Items the config does not mention stay, after the applied ones.
                for t in tl.iter() {
                    if !cl.iter().any(|c| c.get(key) == t.get(key)) {
                        merged.push(t.clone());
                    }
                }
                *tl = merged;
            }
            _ => *tl = cl.clone(),
        },
        (t, c) => *t = c.clone(),
    }
}

fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|s| {
            if s.starts_with('[') {
                s.clone()
            } else {
                format!(".{s}")
            }
        })
        .collect()
}

/// Applies `config` for `manager` onto `current` (None when creating).
/// Returns the new object or the conflicts with other managers.
pub fn apply(
    current: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    scope: Scope,
    owners: &mut Owners,
) -> Result<Value, Vec<Conflict>> {
    let new_paths = owned_paths(config, scope);
    let mut obj = current
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut conflicts = Vec::new();
    for path in &new_paths {
        let differs = value_at(&obj, path) != value_at(config, path);
        if !differs {
            continue;
        }
        for (other, set) in owners.iter() {
            if other != manager && set.contains(path) {
                conflicts.push(Conflict {
                    manager: other.clone(),
                    field: dotted(path),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    for (other, set) in owners.iter_mut() {
        if other != manager {
            // Shared ownership when values agree; forced takeover otherwise.
            set.retain(|p| !new_paths.contains(p) || value_at(&obj, p) == value_at(config, p));
        }
    }
    let previous = owners.get(manager).cloned().unwrap_or_default();
    for path in previous.difference(&new_paths) {
        let owned_elsewhere = owners
            .iter()
            .any(|(m, set)| m != manager && set.contains(path));
        if !owned_elsewhere {
            remove_path(&mut obj, path);
        }
    }
    let mut filtered = config.clone();
    if let Some(m) = filtered.as_object_mut() {
        match scope {
            Scope::Status => m.retain(|k, _| k == "status"),
            Scope::MainWithoutStatus => {
                m.remove("status");
            }
            Scope::Main => {}
        }
    }
    if current.is_none() {
        // Created: the object is the applied configuration itself.
        obj = filtered;
    } else {
        merge_config(&mut obj, &filtered);
    }
    owners.insert(manager.to_string(), new_paths);
    owners.retain(|_, set| !set.is_empty());
    Ok(obj)
}

/// Records a non-apply write: changed fields move to `manager`, removed
/// fields are forgotten.
pub fn track_update(old: &Value, new: &Value, manager: &str, scope: Scope, owners: &mut Owners) {
    if owners.is_empty() {
        return;
    }
    let old_paths = owned_paths(old, scope);
    let new_paths = owned_paths(new, scope);
    let changed: BTreeSet<FieldPath> = new_paths
        .iter()
        .filter(|p| value_at(old, p) != value_at(new, p))
        .cloned()
        .collect();
    for set in owners.values_mut() {
        set.retain(|p| !changed.contains(p) && (new_paths.contains(p) || !old_paths.contains(p)));
    }
    if !changed.is_empty() {
        owners
            .entry(manager.to_string())
            .or_default()
            .extend(changed);
    }
    owners.retain(|_, set| !set.is_empty());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removing_a_field_from_the_config_removes_it() {
        let mut owners = Owners::new();
        let first = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v", "old": "o"}});
        let obj = apply(None, &first, "m", false, Scope::Main, &mut owners).unwrap();
        let second = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let obj = apply(Some(&obj), &second, "m", false, Scope::Main, &mut owners).unwrap();
        assert_eq!(obj["data"], json!({"k": "v"}));
        assert_eq!(obj["metadata"]["labels"], json!({"x": "1"}));
    }

    #[test]
    fn another_managers_field_conflicts_unless_forced() {
        let mut owners = Owners::new();
        let a = apply(
            None,
            &json!({"data": {"k": "a"}}),
            "one",
            false,
            Scope::Main,
            &mut owners,
        )
        .unwrap();
        let err = apply(
            Some(&a),
            &json!({"data": {"k": "b"}}),
            "two",
            false,
            Scope::Main,
            &mut owners,
        )
        .unwrap_err();
        assert_eq!(err[0].manager, "one");
        assert_eq!(err[0].field, ".data.k");
        let b = apply(
            Some(&a),
            &json!({"data": {"k": "b"}}),
            "two",
            true,
            Scope::Main,
            &mut owners,
        )
        .unwrap();
        assert_eq!(b["data"]["k"], "b");
        assert!(!owners.contains_key("one"));
    }

    #[test]
    fn field_still_owned_by_another_manager_is_kept() {
        let mut owners = Owners::new();
        let cfg = json!({"data": {"k": "v"}});
        let o = apply(None, &cfg, "one", false, Scope::Main, &mut owners).unwrap();
        let o = apply(Some(&o), &cfg, "two", false, Scope::Main, &mut owners).unwrap();
        let o = apply(Some(&o), &json!({}), "one", false, Scope::Main, &mut owners).unwrap();
        assert_eq!(o["data"]["k"], "v");
    }

    #[test]
    fn containers_merge_by_name_and_removed_items_go() {
        let mut owners = Owners::new();
        let c1 = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
        let o = apply(None, &c1, "m", false, Scope::Main, &mut owners).unwrap();
        let c2 = json!({"spec": {"containers": [{"name": "a", "image": "2"}]}});
        let o = apply(Some(&o), &c2, "m", false, Scope::Main, &mut owners).unwrap();
        assert_eq!(
            o["spec"]["containers"],
            json!([{"name": "a", "image": "2"}])
        );
    }

    #[test]
    fn main_scope_ignores_status_in_config() {
        let mut owners = Owners::new();
        let o = apply(
            None,
            &json!({"spec": {"a": 1}, "status": {"x": 1}}),
            "m",
            false,
            Scope::MainWithoutStatus,
            &mut owners,
        )
        .unwrap();
        assert!(o.get("status").is_none());
    }

    #[test]
    fn update_by_other_manager_takes_ownership() {
        let mut owners = Owners::new();
        let o = apply(
            None,
            &json!({"data": {"k": "a"}}),
            "one",
            false,
            Scope::Main,
            &mut owners,
        )
        .unwrap();
        let updated = json!({"data": {"k": "edited"}});
        track_update(&o, &updated, "editor", Scope::Main, &mut owners);
        let err = apply(
            Some(&updated),
            &json!({"data": {"k": "a"}}),
            "one",
            false,
            Scope::Main,
            &mut owners,
        )
        .unwrap_err();
        assert_eq!(err[0].manager, "editor");
    }
}
