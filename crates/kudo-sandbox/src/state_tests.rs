//! Tests of write planning, commit and deletion side effects.

use super::*;

pub(super) fn state() -> State {
    State::new(1000)
}

pub(super) fn res(s: &State, g: &str, v: &str, p: &str) -> ResourceInfo {
    s.registry.find(g, v, p).cloned().unwrap()
}

pub(super) fn create(s: &mut State, r: &ResourceInfo, ns: &str, body: Value) -> Value {
    let p = s
        .plan_create(r, r.preferred_version(), ns, body, "creator")
        .unwrap();
    s.commit(p, false).unwrap()
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "c", "finalizers": ["x/y"]}}),
    );
    let p = s
        .plan_delete(&cm, "v1", "default", "c", &DeleteOptions::default())
        .unwrap();
    let marked = s.commit(p, false).unwrap();
    assert!(is_deleting(&marked));
    let p = s
        .plan_patch(
            &cm,
            "v1",
            "default",
            "c",
            false,
            PatchKind::Merge,
            br#"{"metadata":{"finalizers":null}}"#,
            None,
            false,
        )
        .unwrap();
    s.commit(p, false).unwrap();
    assert!(s.store.get("", "configmaps", "default", "c").is_none());
}

#[test]
fn background_deletion_collects_dependents() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let owner = create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "owner"}}),
    );
    let uid = objects::uid(&owner).to_string();
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "dep", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
    );
    let p = s
        .plan_delete(&cm, "v1", "default", "owner", &DeleteOptions::default())
        .unwrap();
    s.commit(p, false).unwrap();
    assert!(s.store.get("", "configmaps", "default", "dep").is_none());
}

#[test]
fn orphan_deletion_keeps_dependents_without_owner_reference() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let owner = create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "owner"}}),
    );
    let uid = objects::uid(&owner).to_string();
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "dep", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
    );
    let opts = DeleteOptions {
        propagation: Propagation::Orphan,
        ..Default::default()
    };
    let p = s.plan_delete(&cm, "v1", "default", "owner", &opts).unwrap();
    s.commit(p, false).unwrap();
    let dep = s.store.get("", "configmaps", "default", "dep").unwrap();
    assert!(dep.value["metadata"].get("ownerReferences").is_none());
}

#[test]
fn foreground_deletion_waits_for_dependents_with_finalizers() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let owner = create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "owner"}}),
    );
    let uid = objects::uid(&owner).to_string();
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "dep", "finalizers": ["hold"], "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
    );
    let opts = DeleteOptions {
        propagation: Propagation::Foreground,
        ..Default::default()
    };
    let p = s.plan_delete(&cm, "v1", "default", "owner", &opts).unwrap();
    let marked = s.commit(p, false).unwrap();
    assert!(finalizers(&marked).contains(&FOREGROUND_FINALIZER.to_string()));
    assert!(s.store.get("", "configmaps", "default", "owner").is_some());
    let p = s
        .plan_patch(
            &cm,
            "v1",
            "default",
            "dep",
            false,
            PatchKind::Merge,
            br#"{"metadata":{"finalizers":[]}}"#,
            None,
            false,
        )
        .unwrap();
    s.commit(p, false).unwrap();
    assert!(s.store.get("", "configmaps", "default", "dep").is_none());
    assert!(s.store.get("", "configmaps", "default", "owner").is_none());
}

#[test]
fn namespace_deletion_removes_contents_then_namespace() {
    let mut s = state();
    let nsr = res(&s, "", "v1", "namespaces");
    let cm = res(&s, "", "v1", "configmaps");
    create(&mut s, &nsr, "", json!({"metadata": {"name": "team"}}));
    create(&mut s, &cm, "team", json!({"metadata": {"name": "c"}}));
    let p = s
        .plan_delete(&nsr, "v1", "", "team", &DeleteOptions::default())
        .unwrap();
    s.commit(p, false).unwrap();
    assert!(s.store.get("", "configmaps", "team", "c").is_none());
    assert!(s.store.get("", "namespaces", "", "team").is_none());
}

#[test]
fn creating_in_a_missing_namespace_is_not_found() {
    let s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let err = s
        .plan_create(&cm, "v1", "nope", json!({"metadata": {"name": "c"}}), "m")
        .unwrap_err();
    assert_eq!(err.code, 404);
    assert!(err.message.contains("namespaces \"nope\""));
}

#[test]
fn stale_plan_is_not_committed() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(&mut s, &cm, "default", json!({"metadata": {"name": "c"}}));
    let p1 = s
        .plan_patch(
            &cm,
            "v1",
            "default",
            "c",
            false,
            PatchKind::Merge,
            br#"{"data":{"a":"1"}}"#,
            None,
            false,
        )
        .unwrap();
    let p2 = s
        .plan_patch(
            &cm,
            "v1",
            "default",
            "c",
            false,
            PatchKind::Merge,
            br#"{"data":{"b":"1"}}"#,
            None,
            false,
        )
        .unwrap();
    s.commit(p1, false).unwrap();
    assert!(matches!(s.commit(p2, false), Err(CommitError::Stale)));
}

#[test]
fn crd_creation_registers_and_deletion_removes_instances() {
    let mut s = state();
    let crd_res = res(
        &s,
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
    );
    let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": true, "storage": true}]}});
    let created = create(&mut s, &crd_res, "", crd);
    assert_eq!(created["status"]["conditions"][1]["type"], "Established");
    let w = res(&s, "example.com", "v1", "widgets");
    create(
        &mut s,
        &w,
        "default",
        json!({"metadata": {"name": "w"}, "spec": {"size": 1}}),
    );
    let p = s
        .plan_delete(
            &crd_res,
            "v1",
            "",
            "widgets.example.com",
            &DeleteOptions::default(),
        )
        .unwrap();
    s.commit(p, false).unwrap();
    assert!(s.registry.find("example.com", "v1", "widgets").is_none());
    assert!(
        s.store
            .get("example.com", "widgets", "default", "w")
            .is_none()
    );
}

#[test]
fn events_api_events_are_mirrored_as_core_events() {
    let mut s = state();
    let ev = res(&s, "events.k8s.io", "v1", "events");
    create(
        &mut s,
        &ev,
        "default",
        json!({"metadata": {"name": "e1"}, "reason": "Applied", "note": "step done",
        "type": "Normal", "reportingController": "kudo", "regarding": {"kind": "Instance", "name": "i"}}),
    );
    let core = s.store.get("", "events", "default", "e1").unwrap();
    assert_eq!(core.value["involvedObject"]["name"], "i");
    assert_eq!(core.value["message"], "step done");
}

fn patch(s: &mut State, kind: PatchKind, body: &[u8], manager: &str) -> Value {
    let cm = res(s, "", "v1", "configmaps");
    let p = s
        .plan_patch(
            &cm,
            "v1",
            "default",
            "c",
            false,
            kind,
            body,
            Some(manager),
            true,
        )
        .unwrap();
    s.commit(p, false).unwrap()
}

const APPLIED: &[u8] = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"1"}},"data":{"k":"v"}}"#;

#[test]
fn server_side_apply_that_changes_nothing_keeps_the_resource_version() {
    let mut s = state();
    let first = patch(&mut s, PatchKind::Apply, APPLIED, "m");
    let again = patch(&mut s, PatchKind::Apply, APPLIED, "m");
    assert_eq!(object_rv(&again), object_rv(&first));
    assert!(s.store.changes_since(object_rv(&first)).unwrap().is_empty());
    let changed = patch(
        &mut s,
        PatchKind::Apply,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"w"}}"#,
        "m",
    );
    assert!(object_rv(&changed) > object_rv(&first));
}

#[test]
fn apply_by_a_new_manager_with_equal_values_is_stored_for_its_ownership() {
    let mut s = state();
    let first = patch(&mut s, PatchKind::Apply, APPLIED, "m");
    let shared = patch(&mut s, PatchKind::Apply, APPLIED, "other");
    assert!(object_rv(&shared) > object_rv(&first));
    let stored = s.store.get("", "configmaps", "default", "c").unwrap();
    assert!(stored.owners.keys().any(|m| m.name == "other"));
}

#[test]
fn merge_and_json_patches_that_change_nothing_keep_the_resource_version() {
    let mut s = state();
    let first = patch(&mut s, PatchKind::Apply, APPLIED, "m");
    let merged = patch(&mut s, PatchKind::Merge, br#"{"data":{"k":"v"}}"#, "editor");
    assert_eq!(object_rv(&merged), object_rv(&first));
    let json = patch(
        &mut s,
        PatchKind::Json,
        br#"[{"op":"replace","path":"/data/k","value":"v"}]"#,
        "editor",
    );
    assert_eq!(object_rv(&json), object_rv(&first));
    let edited = patch(&mut s, PatchKind::Merge, br#"{"data":{"k":"x"}}"#, "editor");
    assert!(object_rv(&edited) > object_rv(&first));
}

#[test]
fn put_of_the_unchanged_object_keeps_the_resource_version() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let first = create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "c"}, "data": {"k": "v"}}),
    );
    let p = s
        .plan_replace(&cm, "v1", "default", "c", false, first.clone(), "editor")
        .unwrap();
    let same = s.commit(p, false).unwrap();
    assert_eq!(same, first);
}

#[test]
fn status_write_that_changes_nothing_keeps_the_generation_and_version() {
    let mut s = state();
    let deploy = res(&s, "apps", "v1", "deployments");
    create(
        &mut s,
        &deploy,
        "default",
        json!({"metadata": {"name": "d"}, "spec": {"replicas": 1}}),
    );
    let write_status = |s: &mut State| {
        let p = s
            .plan_patch(
                &deploy,
                "v1",
                "default",
                "d",
                true,
                PatchKind::Merge,
                br#"{"status":{"replicas":1}}"#,
                Some("ctl"),
                false,
            )
            .unwrap();
        s.commit(p, false).unwrap()
    };
    let first = write_status(&mut s);
    let again = write_status(&mut s);
    assert_eq!(again["metadata"], first["metadata"]);
}

#[test]
fn dependents_of_non_controller_owners_go_when_their_last_owner_goes() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    let mut uids = Vec::new();
    for name in ["parent-a", "parent-b"] {
        let owner = create(&mut s, &cm, "default", json!({"metadata": {"name": name}}));
        uids.push(objects::uid(&owner).to_string());
    }
    let reference = |name: &str, uid: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid,
               "controller": false, "blockOwnerDeletion": true})
    };
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "child", "ownerReferences": [
            reference("parent-a", &uids[0]), reference("parent-b", &uids[1])]}}),
    );
    let delete = |s: &mut State, name: &str| {
        let p = s
            .plan_delete(&cm, "v1", "default", name, &DeleteOptions::default())
            .unwrap();
        s.commit(p, false).unwrap();
    };
    delete(&mut s, "parent-a");
    assert!(
        s.store.get("", "configmaps", "default", "child").is_some(),
        "one owner is still there"
    );
    delete(&mut s, "parent-b");
    assert!(s.store.get("", "configmaps", "default", "child").is_none());
}

#[test]
fn deleting_an_object_already_being_deleted_again_changes_nothing() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "held", "finalizers": ["x/y"]}}),
    );
    let delete = |s: &mut State| {
        let p = s
            .plan_delete(&cm, "v1", "default", "held", &DeleteOptions::default())
            .unwrap();
        s.commit(p, false).unwrap()
    };
    let marked = delete(&mut s);
    assert!(is_deleting(&marked));
    let again = delete(&mut s);
    assert_eq!(again, marked);
    assert!(
        s.store
            .changes_since(object_rv(&marked))
            .unwrap()
            .is_empty()
    );
}
