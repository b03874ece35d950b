//! End-to-end tests of the sandbox through an ordinary kube::Client and the
//! kubectl binary. One test binary keeps link time down.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod access_review;
mod admission;
mod crd;
mod crud;
mod exec;
mod faults;
mod kubectl;
mod lifecycle;
mod managed_fields;
mod nodes;
mod patch;
mod persist;
mod pods;
mod requests;
mod versions;
mod watch;
mod workloads;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Client;
use kube::api::{Api, PostParams};
use kudo_sandbox::Sandbox;
use serde_json::json;

/// A sandbox and a client for it.
pub async fn start() -> (Sandbox, Client) {
    let sandbox = Sandbox::start().await.unwrap();
    let client = sandbox.client().unwrap();
    (sandbox, client)
}

/// A ConfigMap with one data key.
pub fn configmap(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"key": value},
    }))
    .unwrap()
}

/// Creates a namespace.
pub async fn namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// The API error code of a kube error.
pub fn code(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}
