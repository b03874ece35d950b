//! The sandbox serves the built-in versions Kubernetes 1.32 serves: a
//! version removed by then is unknown, as on a real cluster, and a kind
//! served in two versions (HorizontalPodAutoscaler) is reachable in both.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::discovery::Discovery;
use serde_json::json;

use crate::{code, start};

fn api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

#[tokio::test]
async fn removed_versions_are_not_served_and_their_successors_are() {
    let (_sb, client) = start().await;
    let old = api(
        &client,
        "policy",
        "v1beta1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
    );
    let pdb: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb"}, "spec": {"maxUnavailable": 1}
    }))
    .unwrap();
    let err = old.create(&PostParams::default(), &pdb).await.unwrap_err();
    assert_eq!(code(&err), 404);
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let groups: Vec<(String, Vec<String>)> = discovery
        .groups()
        .map(|g| {
            (
                g.name().to_string(),
                g.versions().map(str::to_string).collect(),
            )
        })
        .collect();
    let versions = |name: &str| {
        groups
            .iter()
            .find(|(g, _)| g == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(versions("policy"), ["v1"]);
    assert_eq!(versions("autoscaling"), ["v2", "v1"]);
    for group in ["extensions", "settings.k8s.io"] {
        assert!(versions(group).is_empty(), "{group} is served");
    }
    for (group, kind, plural) in [
        ("networking.k8s.io", "IngressClass", "ingressclasses"),
        ("storage.k8s.io", "CSIDriver", "csidrivers"),
        ("node.k8s.io", "RuntimeClass", "runtimeclasses"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema", "flowschemas"),
    ] {
        let gvk = GroupVersionKind::gvk(group, "v1", kind);
        let all: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        );
        all.list(&Default::default()).await.unwrap();
    }
}

#[tokio::test]
async fn a_horizontal_pod_autoscaler_is_reachable_in_v1_and_v2() {
    let (_sb, client) = start().await;
    let v1 = api(
        &client,
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
    );
    let hpa: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 80}
    }))
    .unwrap();
    v1.create(&PostParams::default(), &hpa).await.unwrap();
    let v2 = api(
        &client,
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
    );
    let got = v2.get("web").await.unwrap();
    assert_eq!(
        got.types.map(|t| t.api_version).as_deref(),
        Some("autoscaling/v2")
    );
}
