use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{code, configmap, start};

#[tokio::test]
async fn merge_patch_sets_and_removes_fields() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let p = json!({"data": {"key": null, "other": "x"}, "metadata": {"labels": {"l": "v"}}});
    let out = api
        .patch("a", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert!(!data.contains_key("key"));
    assert_eq!(data["other"], "x");
    assert_eq!(out.metadata.labels.unwrap()["l"], "v");
}

#[tokio::test]
async fn json_patch_test_operation_guards_the_change() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let ok: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/key", "value": "1"},
        {"op": "replace", "path": "/data/key", "value": "2"},
    ]))
    .unwrap();
    let out = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(ok))
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["key"], "2");
    let stale: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/key", "value": "1"}])).unwrap();
    let err = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(stale))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 422);
}

fn deployment(containers: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}
    })
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name() {
    let (_sb, client) = start().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let d: Deployment = serde_json::from_value(deployment(
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
    ))
    .unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let p =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}});
    let out = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(&p))
        .await
        .unwrap();
    let cs = out.spec.template.spec.unwrap().containers;
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[1].image.as_deref(), Some("b:2"));
}

#[tokio::test]
async fn server_side_apply_removes_fields_dropped_from_config() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let pp = PatchParams::apply("manager-a");
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k1": "v", "k2": "v"}});
    api.patch("a", &pp, &Patch::Apply(&first)).await.unwrap();
    let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k1": "v"}});
    let out = api.patch("a", &pp, &Patch::Apply(&second)).await.unwrap();
    assert_eq!(out.data.unwrap().keys().collect::<Vec<_>>(), vec!["k1"]);
    assert!(out.metadata.labels.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn server_side_apply_conflicts_unless_forced() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cfg = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": v}});
    api.patch("a", &PatchParams::apply("one"), &Patch::Apply(&cfg("1")))
        .await
        .unwrap();
    let err = api
        .patch("a", &PatchParams::apply("two"), &Patch::Apply(&cfg("2")))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 409);
    assert!(s.message.contains("conflict with \"one\""), "{}", s.message);
    let out = api
        .patch(
            "a",
            &PatchParams::apply("two").force(),
            &Patch::Apply(&cfg("2")),
        )
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "2");
}

#[tokio::test]
async fn status_subresource_separates_spec_and_status() {
    let (_sb, client) = start().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let d: Deployment =
        serde_json::from_value(deployment(json!([{"name": "a", "image": "a:1"}]))).unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let main = json!({"spec": {"replicas": 4}, "status": {"replicas": 99}});
    let out = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&main))
        .await
        .unwrap();
    assert_eq!(out.spec.replicas, Some(4));
    assert_ne!(out.status.as_ref().and_then(|s| s.replicas), Some(99));
    let status = json!({"spec": {"replicas": 1}, "status": {"replicas": 7}});
    let out = api
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(out.spec.replicas, Some(4));
    assert_eq!(out.status.unwrap().replicas, Some(7));
}

#[tokio::test]
async fn writes_that_change_nothing_keep_the_resource_version_and_emit_no_event() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};

    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"key": "1"}});
    let ssa = PatchParams::apply("tester");
    let first = api.patch("a", &ssa, &Patch::Apply(&cm)).await.unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let again = api.patch("a", &ssa, &Patch::Apply(&cm)).await.unwrap();
    let merged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"key": "1"}})),
        )
        .await
        .unwrap();
    let replaced = api
        .replace("a", &PostParams::default(), &merged)
        .await
        .unwrap();
    for out in [&again, &merged, &replaced] {
        assert_eq!(out.metadata.resource_version.as_deref(), Some(rv.as_str()));
    }
    // The first event the watch delivers is the real change that follows.
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"key": "2"}})),
    )
    .await
    .unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Modified(c)) => {
            assert_eq!(c.data.unwrap()["key"], "2");
        }
        other => panic!("expected the MODIFIED event of the real change, got {other:?}"),
    }
}
