use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::{code, configmap, namespace, start};

fn owned_by(name: &str, owner: &ConfigMap) -> ConfigMap {
    let mut cm = configmap(name, "1");
    cm.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.name_any(),
            uid: owner.uid().unwrap(),
            ..Default::default()
        },
    ]);
    cm
}

#[tokio::test]
async fn finalizer_keeps_object_until_removed() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut cm = configmap("a", "1");
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let marked = api.get("a").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    let p = json!({"metadata": {"finalizers": null}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    assert_eq!(code(&api.get("a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn background_deletion_garbage_collects_dependents() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = api
        .create(&PostParams::default(), &configmap("owner", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(code(&api.get("child").await.unwrap_err()), 404);
}

#[tokio::test]
async fn orphan_deletion_leaves_dependents() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = api
        .create(&PostParams::default(), &configmap("owner", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let child = api.get("child").await.unwrap();
    assert!(
        child
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let owner = api
        .create(&PostParams::default(), &configmap("owner", "1"))
        .await
        .unwrap();
    let mut child = owned_by("child", &owner);
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &child).await.unwrap();
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = api.get("owner").await.unwrap();
    assert!(
        waiting
            .finalizers()
            .iter()
            .any(|f| f == "foregroundDeletion")
    );
    assert!(
        api.get("child")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let p = json!({"metadata": {"finalizers": null}});
    api.patch("child", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    assert_eq!(code(&api.get("owner").await.unwrap_err()), 404);
}

#[tokio::test]
async fn namespace_deletion_removes_contents() {
    let (_sb, client) = start().await;
    namespace(&client, "team").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    cms.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let nss: Api<Namespace> = Api::all(client);
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    assert_eq!(code(&cms.get("a").await.unwrap_err()), 404);
    assert_eq!(code(&nss.get("team").await.unwrap_err()), 404);
}

#[tokio::test]
async fn terminating_namespace_refuses_new_content() {
    let (_sb, client) = start().await;
    namespace(&client, "team").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let mut held = configmap("held", "1");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    let nss: Api<Namespace> = Api::all(client);
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    let ns = nss.get("team").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let err = cms
        .create(&PostParams::default(), &configmap("new", "1"))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 403);
    let p = json!({"metadata": {"finalizers": null}});
    cms.patch("held", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(code(&nss.get("team").await.unwrap_err()), 404);
}

#[tokio::test]
async fn delete_preconditions_are_checked() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    assert_eq!(code(&api.delete("a", &dp).await.unwrap_err()), 409);
}
