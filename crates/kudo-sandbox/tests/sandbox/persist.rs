use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kudo_sandbox::Sandbox;
use serde_json::json;

use crate::configmap;

#[tokio::test]
async fn restarted_sandbox_keeps_objects_and_crds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    let sb = Sandbox::builder().persist_to(&file).start().await.unwrap();
    let client = sb.client().unwrap();
    Api::<ConfigMap>::default_namespaced(client.clone())
        .create(&PostParams::default(), &configmap("kept", "1"))
        .await
        .unwrap();
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]}
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let rv_before = sb.resource_version();
    sb.stop().await;

    let sb = Sandbox::builder().persist_to(&file).start().await.unwrap();
    let client = sb.client().unwrap();
    let kept = Api::<ConfigMap>::default_namespaced(client.clone())
        .get("kept")
        .await
        .unwrap();
    assert_eq!(kept.data.unwrap()["key"], "1");
    assert!(sb.resource_version() >= rv_before);
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    assert!(
        widgets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
