//! The webhook on 127.0.0.1 of a sandbox, as `kudo-manager dev` runs it.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use kudo_api::OperatorVersion;
use kudo_manager::identity::WriteAs;
use kudo_manager::metrics::Metrics;
use kudo_manager::webhook::{ReviewChecks, serve_local};
use tokio::sync::oneshot;

/// Creates the kudo.dev CRDs and waits until they are served.
pub async fn install_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kudo_api::crds::all() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    // Wait until the new kinds are served.
    let ovs: Api<OperatorVersion> = Api::namespaced(client.clone(), "default");
    for _ in 0..50 {
        if ovs.list(&Default::default()).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("kudo.dev CRDs were not served in time");
}

/// The webhook on 127.0.0.1, registered by URL as `kudo-manager dev` does,
/// with the manager's checks (whoever writes an Instance must be allowed
/// to act as `kudo-instance`): its address, the sender that stops it and
/// its task.
pub async fn start_webhook(
    client: &kube::Client,
    certs: &Path,
    metrics: &Metrics,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), kudo_manager::webhook::WebhookError>>,
) {
    let (stop, stopped) = oneshot::channel::<()>();
    let (ready_tx, ready_rx) = oneshot::channel::<SocketAddr>();
    let webhook = tokio::spawn({
        let client = client.clone();
        let metrics = metrics.clone();
        let dir = certs.to_path_buf();
        async move {
            serve_local(
                client,
                0,
                &dir,
                kudo_manager::webhook::Observers {
                    metrics: Some(metrics),
                    readiness: None,
                },
                ReviewChecks {
                    write_as: Some(WriteAs::default()),
                    ..ReviewChecks::default()
                },
                async {
                    let _ = stopped.await;
                },
                move |addr| {
                    let _ = ready_tx.send(addr);
                },
            )
            .await
        }
    });
    let addr = tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .unwrap()
        .unwrap();
    (addr, stop, webhook)
}

/// Creates OperatorVersion `{operator}-0.1.0` in `default`: one parameter,
/// `GREETING`, written into a ConfigMap by `configmap.yaml` (line 6).
pub async fn create_greeting_operator_version(client: &kube::Client, operator: &str) {
    let ov: OperatorVersion = serde_json::from_value(serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
        "metadata": {"name": format!("{operator}-0.1.0"), "namespace": "default"},
        "spec": {
            "operator": {"name": operator}, "version": "0.1.0",
            "parameters": [{"name": "GREETING", "default": "hi"}],
            "templates": {"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-greeting\ndata:\n  greeting: {{ .Params.GREETING }}\n"},
            "tasks": [{"name": "app", "kind": "Apply", "spec": {"resources": ["configmap.yaml"]}}],
            "plans": {"deploy": {"strategy": "serial", "phases": [
                {"name": "main", "strategy": "serial", "steps": [{"name": "app", "tasks": ["app"]}]}
            ]}}
        }
    }))
    .unwrap();
    Api::<OperatorVersion>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &ov)
        .await
        .unwrap();
}
