//! `upgrade approve` through the binary against kudo-sandbox (no manager):
//! it writes a person's approval into `spec.upgrades.approved`, the
//! version offered in status when none is named, and refuses what it
//! cannot approve.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fails_text, fixture_arg, ok_text, run_with, transcript};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kudo_api::Instance;
use kudo_api::upgrades::Approval;
use kudo_sandbox::Sandbox;
use serde_json::json;

const INSTANCE: &str = "demo-instance";

/// A sandbox with the demo package installed as `demo-instance`.
async fn installed() -> Sandbox {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let output = run_with(&kc, &["init", "--crd-only"]);
    assert!(output.status.success(), "{}", transcript(&output));
    ok_text(&kc, &["install", &fixture_arg("demo")]);
    sandbox
}

fn instances(sandbox: &Sandbox) -> Api<Instance> {
    Api::namespaced(sandbox.client().unwrap(), "default")
}

async fn merge(sandbox: &Sandbox, patch: serde_json::Value, status: bool) {
    let api = instances(sandbox);
    let params = PatchParams::default();
    if status {
        api.patch_status(INSTANCE, &params, &Patch::Merge(patch))
            .await
            .unwrap();
    } else {
        api.patch(INSTANCE, &params, &Patch::Merge(patch))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_writes_the_offered_version_into_spec_and_refuses_what_it_cannot_approve() {
    let sandbox = installed().await;
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let approve = ["upgrade", "approve", "--instance", INSTANCE];

    let untracked = fails_text(&kc, &approve, 1);
    assert!(untracked.contains("tracks no channel"), "{untracked}");

    merge(
        &sandbox,
        json!({"spec": {"upgrades": {"repository": "main", "approval": "Manual"}}}),
        false,
    )
    .await;
    let nothing_offered = fails_text(&kc, &approve, 1);
    assert!(
        nothing_offered.contains("no available version yet"),
        "{nothing_offered}"
    );

    merge(
        &sandbox,
        json!({"status": {"upgrades": {"installed": "0.1.0", "available": "0.2.0"}}}),
        true,
    )
    .await;
    let said = ok_text(&kc, &approve);
    assert!(said.contains("0.2.0 approved"), "{said}");
    let policy = instances(&sandbox)
        .get(INSTANCE)
        .await
        .unwrap()
        .spec
        .upgrades
        .unwrap();
    assert_eq!(policy.approved.as_deref(), Some("0.2.0"));
    assert_eq!(policy.approval, Approval::Manual);
    assert_eq!(policy.repository, "main", "the rest of spec.upgrades stays");

    let named = [&approve[..], &["0.3.1"]].concat();
    ok_text(&kc, &named);
    let approved = instances(&sandbox).get(INSTANCE).await.unwrap();
    assert_eq!(
        approved.spec.upgrades.unwrap().approved.as_deref(),
        Some("0.3.1")
    );

    let bad = [&approve[..], &["latest"]].concat();
    let refused = fails_text(&kc, &bad, 2);
    assert!(refused.contains("\"latest\" is not a version"), "{refused}");
}
