//! `pod restart` and `pod replace` through the binary, with the real
//! manager and webhook on kudo-sandbox (which runs StatefulSet pods and
//! their volume claims as a cluster does): the pod comes back with a new
//! uid, a replace also gives it new claims, a foreign pod is refused, and an
//! operation written while the manager is down is carried out once when it
//! is back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run_with, stderr, stdout, transcript};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Api;
use kudo_api::{ExecutionStatus as S, Instance};
use kudo_sandbox::Sandbox;

const INSTANCE: &str = "zk";

fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = run_with(kubeconfig, args);
    assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    stdout(&output)
}

fn zookeeper() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../operators/zookeeper");
    dir.to_string_lossy().into_owned()
}

async fn uid<K>(api: &Api<K>, name: &str) -> Option<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .unwrap()
        .and_then(|o| o.meta().uid.clone())
}

/// Waits until the recovery plan of the Instance is COMPLETE with a run
/// whose trigger contains `needle`.
async fn recovered(instances: &Api<Instance>, needle: &str) -> Instance {
    for _ in 0..240 {
        let inst = instances.get(INSTANCE).await.unwrap();
        let status = inst.status.clone().unwrap_or_default();
        let done = status.history.iter().any(|r| {
            r.plan == "recovery" && r.trigger.contains(needle) && r.result == Some(S::Complete)
        });
        if done {
            return inst;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let inst = instances.get(INSTANCE).await.unwrap();
    panic!(
        "no completed recovery for {needle:?}; status:\n{}",
        serde_json::to_string_pretty(&inst.status).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pods_are_restarted_and_replaced_once_and_foreign_pods_refused() {
    let sandbox = Sandbox::builder().start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);
    let manager = common::Manager::start(&sandbox);
    ok(
        kc,
        &[
            "install",
            &zookeeper(),
            "--instance",
            INSTANCE,
            "-p",
            "NODE_COUNT=3",
            "--wait",
        ],
    );
    let client = sandbox.client().unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let instances: Api<Instance> = Api::namespaced(client.clone(), "default");

    // Restart: same name, new pod.
    let before = uid(&pods, "zk-zookeeper-0").await.expect("pod 0 runs");
    let out = ok(
        kc,
        &[
            "pod",
            "restart",
            "--instance",
            INSTANCE,
            "zk-zookeeper-0",
            "--reason",
            "stuck",
        ],
    );
    assert!(
        out.contains("restart of pod zk-zookeeper-0 requested"),
        "{out}"
    );
    let inst = recovered(&instances, "pod zk-zookeeper-0: restart requested by").await;
    let after = uid(&pods, "zk-zookeeper-0").await.expect("pod 0 is back");
    assert_ne!(after, before);
    let status = ok(kc, &["plan", "status", "--instance", INSTANCE]);
    assert!(status.contains("Pod default/zk-zookeeper-0"), "{status}");
    let history = ok(kc, &["plan", "history", "--instance", INSTANCE]);
    assert!(history.contains("recovery"), "{history}");
    assert_eq!(
        inst.status.unwrap().operations.last().unwrap().result,
        "restart of pod zk-zookeeper-0 started in plan recovery"
    );

    // Replace asks first; without a terminal it needs --yes.
    let refused = run_with(
        kc,
        &["pod", "replace", "--instance", INSTANCE, "zk-zookeeper-1"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", transcript(&refused));
    assert!(
        stderr(&refused).contains("pass --yes"),
        "{}",
        transcript(&refused)
    );
    let pod_before = uid(&pods, "zk-zookeeper-1").await.unwrap();
    let claim_before = uid(&claims, "data-zk-zookeeper-1")
        .await
        .expect("claim of pod 1");
    ok(
        kc,
        &[
            "pod",
            "replace",
            "--instance",
            INSTANCE,
            "zk-zookeeper-1",
            "--yes",
        ],
    );
    recovered(&instances, "pod zk-zookeeper-1: replace requested by").await;
    assert_ne!(uid(&pods, "zk-zookeeper-1").await.unwrap(), pod_before);
    let claim_after = uid(&claims, "data-zk-zookeeper-1")
        .await
        .expect("a new claim");
    assert_ne!(claim_after, claim_before, "fresh storage");
    assert!(
        uid(&claims, "data-zk-zookeeper-0").await.is_some(),
        "other claims stay"
    );

    // A pod of no Instance (or of another one) is refused by the CLI.
    let stranger: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stranger"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&Default::default(), &stranger).await.unwrap();
    let foreign = run_with(kc, &["pod", "restart", "--instance", INSTANCE, "stranger"]);
    assert_eq!(foreign.status.code(), Some(2), "{}", transcript(&foreign));
    assert!(
        stderr(&foreign).contains("does not belong to Instance zk"),
        "{}",
        transcript(&foreign)
    );

    // Written while the manager is down: carried out once when it is back.
    manager.stop().await;
    let before = uid(&pods, "zk-zookeeper-2").await.unwrap();
    ok(
        kc,
        &["pod", "restart", "--instance", INSTANCE, "zk-zookeeper-2"],
    );
    // No manager runs: nothing can have acted.
    assert_eq!(
        uid(&pods, "zk-zookeeper-2").await.unwrap(),
        before,
        "nobody acted yet"
    );
    let manager = common::Manager::start(&sandbox);
    recovered(&instances, "pod zk-zookeeper-2: restart requested by").await;
    let after = uid(&pods, "zk-zookeeper-2").await.unwrap();
    assert_ne!(after, before);
    // A witness: once a later restart of another pod is carried out, the
    // manager has reconciled after the first one was done.
    ok(
        kc,
        &["pod", "restart", "--instance", INSTANCE, "zk-zookeeper-1"],
    );
    recovered(&instances, "pod zk-zookeeper-1: restart requested by").await;
    assert_eq!(
        uid(&pods, "zk-zookeeper-2").await.unwrap(),
        after,
        "deleted once only"
    );
    manager.stop().await;
}
