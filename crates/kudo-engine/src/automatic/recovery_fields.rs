//! Drift of one object, judged from server-side-apply managed fields: a
//! field kudo-manager owned when it last applied the object and owns no
//! longer was taken by another field manager (an update that changed it,
//! or a forced apply). Fields kudo-manager never set are never drift.

use std::collections::BTreeSet;

use kudo_api::AppliedObject;
use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kudo_api::names::FIELD_MANAGER;
use serde_json::Value;

use crate::model::{Drift, DriftCause};

/// Fields named in a drift (the rest are counted, not listed).
const NAMED_FIELDS: usize = 3;

/// The leaf paths of a `fieldsV1` tree (`f:spec` → `f:replicas` → `{}`).
pub fn leaves(fields: &Value) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let mut path = Vec::new();
    collect(fields, &mut path, &mut out);
    out
}

fn collect(node: &Value, path: &mut Vec<String>, out: &mut BTreeSet<Vec<String>>) {
    match node.as_object() {
        Some(children) if !children.is_empty() => {
            for (key, child) in children {
                path.push(key.clone());
                collect(child, path, out);
                path.pop();
            }
        }
        _ if !path.is_empty() => {
            out.insert(path.clone());
        }
        _ => {}
    }
}

/// The fields kudo-manager's apply owns in these managed fields.
pub fn our_fields(entries: &[ManagedFieldsEntry]) -> Option<&Value> {
    entries
        .iter()
        .find(|e| is_ours(e))
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| &f.0)
}

/// Whether a managed-fields entry is kudo-manager's own apply (the one
/// drift is judged by; a cache of owned objects needs no other).
pub fn is_ours(e: &ManagedFieldsEntry) -> bool {
    e.manager.as_deref() == Some(FIELD_MANAGER)
        && e.operation.as_deref() == Some("Apply")
        && e.subresource.as_deref().unwrap_or_default().is_empty()
}

/// Whether `object` drifted: `live` is its metadata (`None`: it is gone),
/// `recorded` the fields kudo-manager owned right after it last applied it.
pub fn judge(object: &AppliedObject, recorded: &Value, live: Option<&ObjectMeta>) -> Option<Drift> {
    let Some(live) = live else {
        return Some(Drift {
            object: object.clone(),
            cause: DriftCause::Deleted,
        });
    };
    let entries = live.managed_fields.as_deref().unwrap_or_default();
    let now = our_fields(entries).map(leaves).unwrap_or_default();
    let lost: Vec<Vec<String>> = leaves(recorded)
        .into_iter()
        .filter(|p| !now.contains(p))
        .collect();
    if lost.is_empty() {
        return None;
    }
    let taker = entries
        .iter()
        .filter(|e| !is_ours(e))
        .find(|e| {
            let theirs = e
                .fields_v1
                .as_ref()
                .map(|f| leaves(&f.0))
                .unwrap_or_default();
            lost.iter()
                .any(|p| theirs.iter().any(|t| t.starts_with(p) || p.starts_with(t)))
        })
        .and_then(|e| e.manager.clone());
    let mut fields: Vec<String> = lost.iter().take(NAMED_FIELDS).map(|p| display(p)).collect();
    fields.dedup();
    if lost.len() > NAMED_FIELDS {
        fields.push(format!("{} more", lost.len() - NAMED_FIELDS));
    }
    Some(Drift {
        object: object.clone(),
        cause: DriftCause::Changed {
            manager: taker,
            fields,
        },
    })
}

/// `[f:spec, f:replicas]` → `.spec.replicas`; list items by their key
/// (`k:{"name":"web"}` → `[name=web]`), set values as `[value]`.
fn display(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        if let Some(field) = seg.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(key) = seg.strip_prefix("k:") {
            let shown = serde_json::from_str::<serde_json::Map<String, Value>>(key)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| match v {
                            Value::String(s) => format!("{k}={s}"),
                            other => format!("{k}={other}"),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_else(|_| key.to_string());
            out.push_str(&format!("[{shown}]"));
        } else if let Some(v) = seg.strip_prefix("v:") {
            out.push_str(&format!("[{v}]"));
        } else if let Some(i) = seg.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
        // "." marks the item itself: the path so far names it.
    }
    if out.is_empty() { ".".to_string() } else { out }
}

#[cfg(test)]
mod tests {
    use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use serde_json::json;

    use super::*;

    fn object() -> AppliedObject {
        AppliedObject {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        }
    }

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        }
    }

    fn meta(entries: Vec<ManagedFieldsEntry>) -> ObjectMeta {
        ObjectMeta {
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        }
    }

    fn applied() -> Value {
        json!({"f:metadata": {"f:labels": {"f:app": {}}},
               "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                   "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    }

    #[test]
    fn a_missing_object_is_deleted_drift() {
        let d = judge(&object(), &applied(), None).unwrap();
        assert_eq!(d.to_string(), "Deployment ns/web deleted");
    }

    #[test]
    fn fields_still_owned_are_no_drift_whatever_others_own() {
        let live = meta(vec![
            entry(FIELD_MANAGER, "Apply", applied()),
            entry(
                "kubectl-edit",
                "Update",
                json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
            ),
            entry(
                "kube-controller-manager",
                "Update",
                json!({"f:status": {"f:replicas": {}}}),
            ),
        ]);
        assert_eq!(judge(&object(), &applied(), Some(&live)), None);
    }

    #[test]
    fn a_field_taken_by_another_manager_is_drift_naming_field_and_manager() {
        let mut ours = applied();
        ours["f:spec"].as_object_mut().unwrap().remove("f:replicas");
        let live = meta(vec![
            entry(FIELD_MANAGER, "Apply", ours),
            entry(
                "kubectl-scale",
                "Update",
                json!({"f:spec": {"f:replicas": {}}}),
            ),
        ]);
        let d = judge(&object(), &applied(), Some(&live)).unwrap();
        assert_eq!(
            d.to_string(),
            "Deployment ns/web: .spec.replicas changed by kubectl-scale"
        );
    }

    #[test]
    fn a_list_item_field_is_shown_by_its_key() {
        let mut ours = applied();
        ours["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
            .as_object_mut()
            .unwrap()
            .remove("f:image");
        let live = meta(vec![entry(FIELD_MANAGER, "Apply", ours)]);
        let d = judge(&object(), &applied(), Some(&live)).unwrap();
        assert_eq!(
            d.to_string(),
            "Deployment ns/web: .spec.template.spec.containers[name=web].image changed"
        );
    }

    #[test]
    fn an_object_recreated_by_someone_else_lost_every_field() {
        let live = meta(vec![entry("kubectl-create", "Update", applied())]);
        let DriftCause::Changed { manager, fields } =
            judge(&object(), &applied(), Some(&live)).unwrap().cause
        else {
            panic!("expected changed fields");
        };
        assert_eq!(manager.as_deref(), Some("kubectl-create"));
        assert_eq!(fields.len(), 4, "three named and a count: {fields:?}");
        assert_eq!(fields[3], "2 more");
    }

    #[test]
    fn our_update_entries_and_status_entries_do_not_count_as_our_apply() {
        let mut status = entry(FIELD_MANAGER, "Apply", applied());
        status.subresource = Some("status".into());
        let live = meta(vec![entry(FIELD_MANAGER, "Update", applied()), status]);
        assert!(judge(&object(), &applied(), Some(&live)).is_some());
    }
}
