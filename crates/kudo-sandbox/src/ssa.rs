//! Server-side apply with per-field-manager ownership.
//!
//! Ownership is tracked as a set of leaf field paths per manager entry. Lists of
//! objects that all carry a key field (`name`, `type`, ...) are associative
//! and tracked per item; other lists are atomic leaves.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::objects::now_rfc3339;
use crate::owners::{FieldPath, Manager, Op, Owned, Owners};

mod diff;

use diff::{Diff, diff_scoped};

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

pub(crate) fn parse_item_segment(seg: &str) -> Option<(&str, &str)> {
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
    for (k, v) in m.iter().filter(|(k, _)| in_scope(k, scope)) {
        collect_leaves(v, &mut vec![k.clone()], &mut out);
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
    let me = Manager::new(manager, Op::Apply, scope == Scope::Status);
    let new_paths = owned_paths(config, scope);
    let mut obj = current
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let differing: Vec<&FieldPath> = new_paths
        .iter()
        .filter(|p| value_at(&obj, p) != value_at(config, p))
        .collect();
    let mut conflicts = Vec::new();
    for path in &differing {
        for (other, owned) in owners.iter() {
            if *other != me && owned.fields.contains(*path) {
                conflicts.push(Conflict {
                    manager: other.name.clone(),
                    field: dotted(path),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    // Shared ownership when values agree; forced takeover otherwise.
    for (other, owned) in owners.iter_mut() {
        if *other != me {
            for path in &differing {
                owned.remove(path);
            }
        }
    }
    let previous = owners
        .get(&me)
        .map(|o| o.fields.clone())
        .unwrap_or_default();
    for path in previous.difference(&new_paths) {
        let owned_elsewhere = owners
            .iter()
            .any(|(m, o)| *m != me && o.fields.contains(path));
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
    // An apply that changes neither values nor the set keeps its time, so
    // that a repeated apply is recognised as changing nothing.
    if differing.is_empty() && *previous == new_paths {
        return Ok(obj);
    }
    owners.insert(me, Owned::new(new_paths));
    owners.retain(|_, o| !o.fields.is_empty());
    Ok(obj)
}

/// Ownership of an object created by a non-apply write: all of it, by `manager`.
pub fn track_create(obj: &Value, manager: &str, scope: Scope) -> Owners {
    let fields = owned_paths(obj, scope);
    let mut owners = Owners::new();
    if !fields.is_empty() {
        owners.insert(
            Manager::new(manager, Op::Update, scope == Scope::Status),
            Owned::new(fields),
        );
    }
    owners
}

/// Records a non-apply write: changed fields move to `manager`'s Update
/// entry, removed fields are forgotten.
pub fn track_update(old: &Value, new: &Value, manager: &str, scope: Scope, owners: &mut Owners) {
    let Diff { changed, removed } = diff_scoped(old, new, scope);
    if changed.is_empty() && removed.is_empty() {
        return;
    }
    let me = Manager::new(manager, Op::Update, scope == Scope::Status);
    let mut mine_removed = false;
    for (key, owned) in owners.iter_mut() {
        let before = owned.fields.len();
        for path in &removed {
            owned.remove(path);
        }
        if *key == me {
            mine_removed = owned.fields.len() != before;
        } else {
            for path in &changed {
                owned.remove(path);
            }
        }
    }
    if !changed.is_empty() || mine_removed {
        let entry = owners.entry(me).or_default();
        if changed.iter().any(|p| !entry.fields.contains(p)) {
            Arc::make_mut(&mut entry.fields).extend(changed);
        }
        entry.time = now_rfc3339();
    }
    owners.retain(|_, o| !o.fields.is_empty());
}

/// Top-level fields a write in `scope` may own.
fn in_scope(key: &str, scope: Scope) -> bool {
    match (key, scope) {
        ("apiVersion" | "kind" | "metadata", _) => false,
        ("status", Scope::Status) => true,
        (_, Scope::Status) => false,
        ("status", Scope::MainWithoutStatus) => false,
        _ => true,
    }
}

#[cfg(test)]
#[path = "ssa_tests.rs"]
mod tests;
