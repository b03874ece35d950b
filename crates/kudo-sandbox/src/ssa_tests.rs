//! Tests of server-side apply and update tracking.

use super::*;
use serde_json::json;

fn names(owners: &Owners) -> Vec<(&str, Op)> {
    owners.keys().map(|m| (m.name.as_str(), m.op)).collect()
}

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
    assert_eq!(names(&owners), [("two", Op::Apply)]);
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
    let c1 =
        json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
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

fn fields(owners: &Owners, name: &str, op: Op) -> Vec<String> {
    owners
        .iter()
        .filter(|(m, _)| m.name == name && m.op == op)
        .flat_map(|(_, o)| o.fields.iter().map(|p| p.join(".")))
        .collect()
}

#[test]
fn the_same_manager_applying_and_updating_holds_two_entries_that_conflict() {
    let mut owners = Owners::new();
    let cfg = json!({"data": {"a": "1"}});
    let o = apply(None, &cfg, "m", false, Scope::Main, &mut owners).unwrap();
    let updated = json!({"data": {"a": "1", "b": "2"}});
    track_update(&o, &updated, "m", Scope::Main, &mut owners);
    assert_eq!(names(&owners), [("m", Op::Apply), ("m", Op::Update)]);
    assert_eq!(fields(&owners, "m", Op::Update), ["data.b"]);
    let err = apply(
        Some(&updated),
        &json!({"data": {"a": "1", "b": "3"}}),
        "m",
        false,
        Scope::Main,
        &mut owners,
    )
    .unwrap_err();
    assert_eq!(
        (err[0].manager.as_str(), err[0].field.as_str()),
        ("m", ".data.b")
    );
}

#[test]
fn applying_status_keeps_the_managers_main_fields() {
    let mut owners = Owners::new();
    let o = apply(
        None,
        &json!({"spec": {"x": 1}}),
        "m",
        false,
        Scope::MainWithoutStatus,
        &mut owners,
    )
    .unwrap();
    let status = json!({"status": {"ready": true}});
    apply(Some(&o), &status, "m", false, Scope::Status, &mut owners).unwrap();
    assert_eq!(owners.len(), 2);
    assert!(owners.keys().any(|m| m.status));
    assert_eq!(fields(&owners, "m", Op::Apply), ["spec.x", "status.ready"]);
}

#[test]
fn an_update_of_one_list_item_moves_only_that_items_changed_field() {
    let mut owners = Owners::new();
    let cfg =
        json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
    let o = apply(None, &cfg, "m", false, Scope::Main, &mut owners).unwrap();
    let mut edited = o.clone();
    edited["spec"]["containers"][1]["image"] = json!("2");
    edited["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    track_update(&o, &edited, "editor", Scope::Main, &mut owners);
    assert_eq!(
        fields(&owners, "editor", Op::Update),
        ["spec.containers.[name=b].image"]
    );
    assert_eq!(
        fields(&owners, "m", Op::Apply),
        [
            "spec.containers.[name=a].name",
            "spec.containers.[name=b].name"
        ]
    );
}

#[test]
fn a_repeated_apply_keeps_the_entry_and_its_time() {
    let mut owners = Owners::new();
    let cfg = json!({"data": {"a": "1"}});
    let o = apply(None, &cfg, "m", false, Scope::Main, &mut owners).unwrap();
    let before = owners.clone();
    for entry in owners.values_mut() {
        entry.time = "2000-01-01T00:00:00Z".into();
    }
    let stamped = owners.clone();
    apply(Some(&o), &cfg, "m", false, Scope::Main, &mut owners).unwrap();
    assert_eq!(owners, stamped);
    assert_eq!(owners.len(), before.len());
}

#[test]
fn a_write_that_changes_nothing_leaves_ownership_alone() {
    let mut owners = track_create(&json!({"data": {"a": "1"}}), "maker", Scope::Main);
    let before = owners.clone();
    let same = json!({"data": {"a": "1"}});
    track_update(&same, &same, "other", Scope::Main, &mut owners);
    assert_eq!(owners, before);
    assert_eq!(fields(&owners, "maker", Op::Update), ["data.a"]);
}

#[test]
fn a_manager_rewriting_its_own_field_keeps_sharing_the_stored_field_set() {
    let stored = track_create(&json!({"data": {"a": "1", "b": "2"}}), "m", Scope::Main);
    let mut owners = stored.clone();
    let (old, new) = (
        json!({"data": {"a": "1", "b": "2"}}),
        json!({"data": {"a": "9", "b": "2"}}),
    );
    track_update(&old, &new, "m", Scope::Main, &mut owners);
    let (before, after) = (
        stored.values().next().unwrap(),
        owners.values().next().unwrap(),
    );
    assert!(Arc::ptr_eq(&before.fields, &after.fields));
}
