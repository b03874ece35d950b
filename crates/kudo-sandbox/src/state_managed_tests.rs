//! Tests of `metadata.managedFields`: which manager a write makes the owner
//! of which fields, as a client reads it back.

use serde_json::json;

use super::*;
use crate::managed_fields::Shown;

const APPLIED: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"1"}},"data":{"k":"v","other":"x"}}"#;

fn cm(s: &State) -> ResourceInfo {
    s.registry.find("", "v1", "configmaps").cloned().unwrap()
}

/// The object a client gets back from a write, with its managedFields.
fn shown(res: &ResourceInfo, written: (Value, Owners)) -> Value {
    let (obj, owners) = written;
    let api_version = res.api_version("v1");
    serde_json::to_value(Shown {
        obj: &obj,
        api_version: &api_version,
        kind: &res.kind,
        owners: &owners,
    })
    .unwrap()
}

fn patch(
    s: &mut State,
    kind: PatchKind,
    body: &str,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let res = cm(s);
    let p = s.plan_patch(
        &res,
        "v1",
        "default",
        "c",
        false,
        kind,
        body.as_bytes(),
        Some(manager),
        force,
    )?;
    let written = s.commit_owned(p, false).unwrap_or_else(|e| panic!("{e:?}"));
    Ok(shown(&res, written))
}

fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

fn fields_v1<'a>(obj: &'a Value, manager: &str, operation: &str) -> &'a Value {
    let e = entry(obj, manager, operation);
    &e.unwrap_or_else(|| panic!("no {operation} entry for {manager} in {obj}"))["fieldsV1"]
}

#[test]
fn an_apply_shows_an_apply_entry_owning_the_applied_fields() {
    let mut s = State::new(100);
    let out = patch(&mut s, PatchKind::Apply, APPLIED, "a", false).unwrap();
    let entries = out["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(
        (
            &e["manager"],
            &e["operation"],
            &e["apiVersion"],
            &e["fieldsType"]
        ),
        (
            &json!("a"),
            &json!("Apply"),
            &json!("v1"),
            &json!("FieldsV1")
        )
    );
    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(e.get("subresource").is_none());
    assert_eq!(
        e["fieldsV1"],
        json!({"f:data": {"f:k": {}, "f:other": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
    );
}

#[test]
fn a_merge_patch_by_another_manager_moves_the_changed_field_to_its_update_entry() {
    let mut s = State::new(100);
    patch(&mut s, PatchKind::Apply, APPLIED, "a", false).unwrap();
    let out = patch(
        &mut s,
        PatchKind::Merge,
        r#"{"data":{"k":"w"}}"#,
        "b",
        false,
    )
    .unwrap();
    assert_eq!(
        fields_v1(&out, "b", "Update"),
        &json!({"f:data": {"f:k": {}}})
    );
    assert_eq!(
        fields_v1(&out, "a", "Apply"),
        &json!({"f:data": {"f:other": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
    );
}

#[test]
fn changing_a_field_the_applier_never_set_leaves_its_entry_unchanged() {
    let mut s = State::new(100);
    let applied = patch(&mut s, PatchKind::Apply, APPLIED, "a", false).unwrap();
    let out = patch(
        &mut s,
        PatchKind::Merge,
        r#"{"data":{"new":"n"}}"#,
        "b",
        false,
    )
    .unwrap();
    assert_eq!(entry(&out, "a", "Apply"), entry(&applied, "a", "Apply"));
    assert_eq!(
        fields_v1(&out, "b", "Update"),
        &json!({"f:data": {"f:new": {}}})
    );
}

#[test]
fn a_forced_apply_takes_the_field_back() {
    let mut s = State::new(100);
    patch(&mut s, PatchKind::Apply, APPLIED, "a", false).unwrap();
    patch(
        &mut s,
        PatchKind::Merge,
        r#"{"data":{"k":"w"}}"#,
        "b",
        false,
    )
    .unwrap();
    let err = patch(&mut s, PatchKind::Apply, APPLIED, "a", false).unwrap_err();
    assert_eq!(err.code, 409);
    assert!(err.message.contains(r#"conflict with "b": .data.k"#));
    let out = patch(&mut s, PatchKind::Apply, APPLIED, "a", true).unwrap();
    assert_eq!(out["data"]["k"], "v");
    assert_eq!(
        fields_v1(&out, "a", "Apply"),
        &json!({"f:data": {"f:k": {}, "f:other": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
    );
    assert!(entry(&out, "b", "Update").is_none());
}

#[test]
fn a_create_makes_its_manager_the_update_owner_of_what_it_set() {
    let mut s = State::new(100);
    let res = cm(&s);
    let body = json!({"metadata": {"name": "c", "annotations": {"x": "y"}}, "data": {"k": "v"}});
    let p = s
        .plan_create(&res, "v1", "default", body, "kubectl-create")
        .unwrap();
    let out = shown(&res, s.commit_owned(p, false).unwrap());
    assert_eq!(
        fields_v1(&out, "kubectl-create", "Update"),
        &json!({"f:data": {"f:k": {}}, "f:metadata": {"f:annotations": {"f:x": {}}}})
    );
}

#[test]
fn status_writes_get_an_entry_of_their_own_marked_with_the_subresource() {
    let mut s = State::new(100);
    let res = s
        .registry
        .find("apps", "v1", "deployments")
        .cloned()
        .unwrap();
    let body = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}});
    let p = s.plan_create(&res, "v1", "default", body, "ctl").unwrap();
    s.commit_owned(p, false).unwrap();
    let status = br#"{"status":{"replicas":1}}"#;
    let p = s
        .plan_patch(
            &res,
            "v1",
            "default",
            "web",
            true,
            PatchKind::Merge,
            status,
            Some("ctl"),
            false,
        )
        .unwrap();
    let out = shown(&res, s.commit_owned(p, false).unwrap());
    let entries = out["metadata"]["managedFields"].as_array().unwrap();
    let status_entry = entries
        .iter()
        .find(|e| e["subresource"] == "status")
        .unwrap();
    assert_eq!(status_entry["manager"], "ctl");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:replicas": {}}})
    );
    let main = entries
        .iter()
        .find(|e| e.get("subresource").is_none())
        .unwrap();
    assert!(main["fieldsV1"]["f:spec"]["f:replicas"].is_object());
}
