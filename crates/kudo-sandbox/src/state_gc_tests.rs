//! Tests of the garbage collector's look at owner references a write adds.

use super::tests::{create, res, state};
use super::*;

fn reference(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid})
}

#[test]
fn an_object_written_for_a_gone_owner_is_collected() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "late", "ownerReferences": [reference("owner", "gone-uid")]}}),
    );
    assert!(s.store.get("", "configmaps", "default", "late").is_none());
}

#[test]
fn an_owner_recreated_under_the_same_name_does_not_keep_its_predecessors_dependents() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "owner"}}),
    );
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "dep", "ownerReferences": [reference("owner", "earlier-uid")]}}),
    );
    assert!(s.store.get("", "configmaps", "default", "dep").is_none());
}

#[test]
fn a_reference_to_a_gone_owner_is_dropped_while_another_owner_lives() {
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
        json!({"metadata": {"name": "dep", "ownerReferences": [
            reference("owner", &uid), reference("other", "gone-uid")]}}),
    );
    let dep = s.store.get("", "configmaps", "default", "dep").unwrap();
    assert_eq!(
        dep.value["metadata"]["ownerReferences"],
        json!([reference("owner", &uid)])
    );
}

#[test]
fn a_dependent_of_a_living_owner_stays() {
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
        json!({"metadata": {"name": "dep", "ownerReferences": [reference("owner", &uid)]}}),
    );
    assert!(s.store.get("", "configmaps", "default", "dep").is_some());
}

#[test]
fn an_owner_of_a_kind_the_server_does_not_serve_is_left_alone() {
    let mut s = state();
    let cm = res(&s, "", "v1", "configmaps");
    create(
        &mut s,
        &cm,
        "default",
        json!({"metadata": {"name": "dep", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "Unknown", "name": "x", "uid": "u"}]}}),
    );
    assert!(s.store.get("", "configmaps", "default", "dep").is_some());
}
