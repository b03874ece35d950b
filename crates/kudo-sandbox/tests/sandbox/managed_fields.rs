use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::start;

fn fields_of(entries: &[ManagedFieldsEntry], manager: &str, operation: &str) -> Value {
    let entry = entries
        .iter()
        .find(|e| {
            e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some(operation)
        })
        .unwrap_or_else(|| panic!("no {operation} entry for {manager} in {entries:?}"));
    assert_eq!(entry.api_version.as_deref(), Some("v1"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    assert!(entry.time.is_some());
    entry.fields_v1.clone().unwrap().0
}

/// What a client that applied `k` and `other` sees after `b` took `k`.
fn assert_taken_over(entries: &[ManagedFieldsEntry]) {
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(
        fields_of(entries, "a", "Apply"),
        json!({"f:data": {"f:other": {}}})
    );
    assert_eq!(
        fields_of(entries, "b", "Update"),
        json!({"f:data": {"f:k": {}}})
    );
}

#[tokio::test]
async fn managed_fields_show_a_field_taken_over_by_another_manager() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                    "data": {"k": "v", "other": "x"}});
    let applied = api
        .patch("a", &PatchParams::apply("a"), &Patch::Apply(&cm))
        .await
        .unwrap();
    let entries = applied.metadata.managed_fields.unwrap();
    assert_eq!(
        fields_of(&entries, "a", "Apply"),
        json!({"f:data": {"f:k": {}, "f:other": {}}})
    );
    let mut events = api
        .watch_metadata(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap()
        .boxed();

    let by_b = PatchParams {
        field_manager: Some("b".into()),
        ..PatchParams::default()
    };
    let patched = api
        .patch("a", &by_b, &Patch::Merge(json!({"data": {"k": "w"}})))
        .await
        .unwrap();
    assert_taken_over(&patched.metadata.managed_fields.unwrap());
    assert_taken_over(&api.get("a").await.unwrap().metadata.managed_fields.unwrap());
    let meta = api.get_metadata("a").await.unwrap();
    assert_taken_over(&meta.metadata.managed_fields.unwrap());
    let listed = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_taken_over(listed.items[0].metadata.managed_fields.as_ref().unwrap());

    // The initial ADDED, then the MODIFIED of the takeover.
    let mut last = None;
    while let Some(event) = events.try_next().await.unwrap() {
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let done = o
                    .metadata
                    .managed_fields
                    .as_ref()
                    .is_some_and(|m| m.len() == 2);
                last = Some(o);
                if done {
                    break;
                }
            }
            other => panic!("unexpected watch event {other:?}"),
        }
    }
    assert_taken_over(&last.unwrap().metadata.managed_fields.unwrap());
}

#[tokio::test]
async fn updates_without_a_field_manager_are_named_after_the_user_agent() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&Default::default(), &crate::configmap("a", "1"))
        .await
        .unwrap();
    let req = http::Request::patch("/api/v1/namespaces/default/configmaps/a")
        .header("content-type", "application/merge-patch+json")
        .header(
            "user-agent",
            "kubectl-edit/v1.30.0 (linux/amd64) kubernetes/7c48c2b",
        )
        .body(br#"{"data":{"key":"2"}}"#.to_vec())
        .unwrap();
    let out: ConfigMap = client.request(req).await.unwrap();
    let entries = out.metadata.managed_fields.unwrap();
    assert_eq!(
        fields_of(&entries, "kubectl-edit", "Update"),
        json!({"f:data": {"f:key": {}}})
    );
}
