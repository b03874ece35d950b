use super::*;
use serde_json::json;

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
}

#[test]
fn put_assigns_increasing_resource_versions() {
    let mut s = Store::new(10);
    let a = s.put("", "configmaps", cm("a"), Owners::new());
    let b = s.put("", "configmaps", cm("b"), Owners::new());
    assert!(object_rv(&b) > object_rv(&a));
    assert_eq!(s.list("", "configmaps", Some("default")).count(), 2);
}

#[test]
fn changes_since_returns_only_newer_events() {
    let mut s = Store::new(10);
    let a = s.put("", "configmaps", cm("a"), Owners::new());
    s.put("", "configmaps", cm("b"), Owners::new());
    s.remove("", "configmaps", "default", "a");
    let since = s.changes_since(object_rv(&a)).unwrap();
    let kinds: Vec<_> = since.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, vec![EventKind::Added, EventKind::Deleted]);
}

#[test]
fn evicted_events_make_old_versions_expire() {
    let mut s = Store::new(2);
    let first = s.put("", "configmaps", cm("a"), Owners::new());
    for i in 0..5 {
        s.put("", "configmaps", cm(&format!("x{i}")), Owners::new());
    }
    assert!(s.changes_since(object_rv(&first)).is_err());
    assert!(s.changes_since(s.resource_version() - 1).is_ok());
}

#[test]
fn list_prefix_stays_in_the_namespace_and_prefix() {
    let mut s = Store::new(10);
    for name in ["web-a", "web-b", "webx", "api-a"] {
        s.put("", "configmaps", cm(name), Owners::new());
    }
    let mut other = cm("web-c");
    other["metadata"]["namespace"] = json!("other");
    s.put("", "configmaps", other, Owners::new());
    let names: Vec<String> = s
        .list_prefix("", "configmaps", "default", "web-")
        .map(|x| ns_name(&x.value).1)
        .collect();
    assert_eq!(names, ["web-a", "web-b"]);
}

#[test]
fn owners_find_their_dependents_until_the_dependents_go_or_drop_them() {
    let mut s = Store::new(10);
    let mut owner = cm("owner");
    owner["metadata"]["uid"] = json!("u-owner");
    s.put("", "configmaps", owner, Owners::new());
    let mut dep = cm("dep");
    dep["metadata"]["ownerReferences"] = json!([{"uid": "u-owner"}]);
    s.put("", "configmaps", dep.clone(), Owners::new());
    assert!(s.address_of("u-owner").is_some());
    assert_eq!(
        s.dependents_of("u-owner"),
        [(
            "".into(),
            "configmaps".into(),
            "default".into(),
            "dep".into()
        )]
    );
    dep["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    s.put("", "configmaps", dep, Owners::new());
    assert!(!s.has_dependents("u-owner"), "the reference was dropped");
    s.remove("", "configmaps", "default", "owner");
    assert!(s.address_of("u-owner").is_none());
}

#[test]
fn snapshot_round_trips_objects_and_version() {
    let mut s = Store::new(10);
    s.put("", "configmaps", cm("a"), Owners::new());
    let snap = serde_json::to_string(&s.snapshot()).unwrap();
    let mut t = Store::new(10);
    t.restore(serde_json::from_str(&snap).unwrap());
    assert_eq!(t.resource_version(), s.resource_version());
    assert!(t.get("", "configmaps", "default", "a").is_some());
}
