//! `init`: dry-run output, install, idempotence, upgrade, uninstall —
//! against kudo-sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture_arg, run, run_with, transcript};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::DeleteParams;
use kudo_sandbox::Sandbox;
use serde_json::Value;

/// `kind namespace/name` of every document of a multi-document YAML text.
fn documents(text: &str) -> Vec<String> {
    text.split("---\n")
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| {
            let value: Value = serde_saphyr::from_str(doc).unwrap();
            let ns = value["metadata"]["namespace"]
                .as_str()
                .map(|n| format!("{n}/"))
                .unwrap_or_default();
            format!(
                "{} {ns}{}",
                value["kind"].as_str().unwrap(),
                value["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn dry_run_prints_every_object_as_yaml() {
    let output = run(&["init", "--dry-run"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let text = common::stdout(&output);
    insta::assert_snapshot!("init-dry-run-objects", documents(&text).join("\n"));
    assert!(
        text.contains("caBundle:"),
        "the webhook trusts the generated CA"
    );
}

#[test]
fn dry_run_with_cert_manager_and_broad_rbac_in_another_namespace() {
    let output = run(&[
        "init",
        "--dry-run",
        "--cert-manager",
        "--broad-rbac",
        "-n",
        "ops",
    ]);
    assert!(output.status.success(), "{}", transcript(&output));
    let text = common::stdout(&output);
    insta::assert_snapshot!(
        "init-dry-run-cert-manager-objects",
        documents(&text).join("\n")
    );
    assert!(
        text.contains("cert-manager.io/inject-ca-from: ops/"),
        "{text}"
    );
    assert!(!text.contains("caBundle"), "cert-manager fills caBundle");
}

#[test]
fn dry_run_json_is_a_list() {
    let output = run(&["init", "--dry-run", "-o", "json"]);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["kind"], "List");
    // Five CRDs (MaintenanceSchedule and OperatorRepository included) and the kudo-instance
    // ClusterRole, then the ten install objects and the webhook.
    assert_eq!(value["items"].as_array().unwrap().len(), 17);
}

#[test]
fn output_without_dry_run_is_a_usage_error() {
    let output = run(&["init", "-o", "yaml"]);
    assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_is_idempotent_keeps_its_ca_and_uninstall_waits_for_instances() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let client = sandbox.client().unwrap();

    // An Instance created before the webhook exists.
    let output = run_with(&kc, &["init", "--crd-only"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let output = run_with(&kc, &["install", &fixture_arg("demo")]);
    assert!(output.status.success(), "{}", transcript(&output));

    let first = run_with(&kc, &["init"]);
    assert!(first.status.success(), "{}", transcript(&first));
    insta::assert_snapshot!("init-first", transcript(&first));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kudo-system");
    let ca_before = secrets.get("kudo-webhook-ca").await.unwrap().data.unwrap()["ca.crt"].clone();

    let again = run_with(&kc, &["init"]);
    assert!(again.status.success(), "{}", transcript(&again));
    insta::assert_snapshot!("init-again", transcript(&again));

    let upgrade = run_with(
        &kc,
        &["init", "--upgrade", "--wait", "--wait-timeout", "30s"],
    );
    assert!(upgrade.status.success(), "{}", transcript(&upgrade));
    // Whether the first poll already sees the Deployment available depends
    // on timing; the progress line in between is not part of the contract.
    insta::assert_snapshot!("init-upgrade", without_progress(&transcript(&upgrade)));
    let ca_after = secrets.get("kudo-webhook-ca").await.unwrap().data.unwrap()["ca.crt"].clone();
    assert_eq!(
        ca_before, ca_after,
        "upgrade issues a new serving cert from the same CA"
    );
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let webhook = webhooks
        .get("kudo-manager-instance-admission")
        .await
        .unwrap();
    let bundle = webhook.webhooks.unwrap()[0]
        .client_config
        .ca_bundle
        .clone()
        .unwrap();
    assert_eq!(bundle.0, ca_after.0);

    let refused = run_with(&kc, &["init", "--uninstall"]);
    assert_eq!(refused.status.code(), Some(1));
    insta::assert_snapshot!("init-uninstall-refused", transcript(&refused));

    // No manager answers the webhook here: drop it to delete the Instance.
    webhooks
        .delete("kudo-manager-instance-admission", &DeleteParams::default())
        .await
        .unwrap();
    let output = run_with(&kc, &["uninstall", "--instance", "demo-instance"]);
    assert!(output.status.success(), "{}", transcript(&output));

    // A MaintenanceSchedule needs the running manager to let go of it.
    let schedules: Api<kudo_api::MaintenanceSchedule> = Api::all(client.clone());
    let nightly: kudo_api::MaintenanceSchedule = serde_json::from_value(serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "MaintenanceSchedule",
        "metadata": {"name": "nightly"}, "spec": {}
    }))
    .unwrap();
    schedules
        .create(&kube::api::PostParams::default(), &nightly)
        .await
        .unwrap();
    let refused = run_with(&kc, &["init", "--uninstall"]);
    assert_eq!(refused.status.code(), Some(1), "{}", transcript(&refused));
    assert!(
        transcript(&refused).contains(
            "1 MaintenanceSchedule(s) still exist: nightly; delete them first with `kubectl \
             delete maintenanceschedules --all` while the manager runs"
        ),
        "{}",
        transcript(&refused)
    );
    schedules
        .delete("nightly", &DeleteParams::default())
        .await
        .unwrap();

    let removed = run_with(
        &kc,
        &["init", "--uninstall", "--wait", "--wait-timeout", "30s"],
    );
    assert!(removed.status.success(), "{}", transcript(&removed));
    insta::assert_snapshot!("init-uninstall", without_progress(&transcript(&removed)));
    assert!(secrets.get_opt("kudo-webhook-ca").await.unwrap().is_none());
}

/// The transcript without `--wait` progress lines (`waiting for ... [Ns]`),
/// and without the stderr heading when they were all it had (how many
/// there are depends on how long pods take to terminate).
fn without_progress(text: &str) -> String {
    let progress = regex::Regex::new(r"^waiting for .* \[\d+s\]$").unwrap();
    let kept: String = text
        .lines()
        .filter(|line| !progress.is_match(line))
        .map(|line| format!("{line}\n"))
        .collect();
    kept.replace("--- stderr ---\n--- exit", "--- exit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_wait_stops_early_when_the_manager_image_cannot_be_pulled() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Patch, PatchParams, PostParams};

    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let client = sandbox.client().unwrap();
    let output = run_with(&kc, &["init"]);
    assert!(output.status.success(), "{}", transcript(&output));
    // The sandbox runs no pods: keep the Deployment unavailable and write
    // the pod a kubelet would report for an image it cannot pull.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "kudo-system");
    let fail = serde_json::json!({"metadata": {"annotations": {"sandbox.kudo.dev/fail": "true"}}});
    deployments
        .patch(
            "kudo-manager",
            &PatchParams::default(),
            &Patch::Merge(&fail),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kudo-system");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "kudo-manager-abc", "labels": {"app": "kudo-manager", "control-plane": "controller-manager"}},
        "spec": {"containers": [{"name": "manager", "image": "kudo-rs/kudo-manager:0.1.0"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = serde_json::json!({"status": {"phase": "Pending", "containerStatuses": [{
        "name": "manager", "image": "kudo-rs/kudo-manager:0.1.0", "imageID": "", "ready": false,
        "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}
    }]}});
    pods.patch_status(
        "kudo-manager-abc",
        &PatchParams::default(),
        &Patch::Merge(&status),
    )
    .await
    .unwrap();

    // With five minutes to wait, only the early stop can end it this way.
    let output = run_with(&kc, &["init", "--wait", "--wait-timeout", "5m"]);

    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    let text = transcript(&output);
    assert!(
        text.contains(
            "Deployment kudo-system/kudo-manager does not become available: the manager image \
             kudo-rs/kudo-manager:0.1.0 cannot be pulled (ImagePullBackOff: Back-off pulling image)"
        ) && text.contains("make image IMAGE=kudo-rs/kudo-manager:0.1.0"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_returns_once_the_crds_are_served() {
    // A real API server establishes a new CRD a moment after creating it;
    // the next command must find the kinds.
    let sandbox = Sandbox::builder()
        .crd_establish_delay(std::time::Duration::from_millis(1500))
        .start()
        .await
        .unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let output = run_with(&kc, &["init", "--crd-only"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let ov: kudo_api::OperatorVersion = serde_json::from_value(serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
        "metadata": {"name": "op-0.1.0", "namespace": "default"},
        "spec": {"operator": {"name": "op"}, "version": "0.1.0"}
    }))
    .unwrap();
    Api::<kudo_api::OperatorVersion>::namespaced(sandbox.client().unwrap(), "default")
        .create(&kube::api::PostParams::default(), &ov)
        .await
        .expect("the OperatorVersion kind is served when init returns");
}
