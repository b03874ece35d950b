//! What `get`, `plan status` and `plan history` print as kubectl users
//! expect it (no manager: the test writes the status a manager would):
//! Ready beside a COMPLETE plan, the last result of a plan that ran
//! before, a superseded run, singular kinds and names, `-A`, `-o wide`
//! and `-o name`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fails_text as fails, fixture_arg, ok_text as ok};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kudo_api::Instance;
use kudo_sandbox::Sandbox;
use serde_json::json;

async fn write_status(sandbox: &Sandbox, namespace: &str, name: &str, status: serde_json::Value) {
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), namespace);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

/// deploy COMPLETE but its Deployment not ready, backup run before, a
/// superseded run in history.
fn complete_but_not_ready() -> serde_json::Value {
    json!({
        "activePlan": {"name": "deploy", "uid": "d2", "status": "COMPLETE", "trigger": "parameter REPLICAS"},
        "planStatus": {
            "deploy": {
                "name": "deploy", "status": "COMPLETE", "uid": "d2",
                "lastUpdatedTimestamp": "2026-11-21T10:05:00Z",
                "phases": [{"name": "main", "status": "COMPLETE", "steps": [
                    {"name": "config", "status": "COMPLETE"},
                    {"name": "app", "status": "COMPLETE"}
                ]}]
            },
            "backup": {
                "name": "backup", "status": "COMPLETE", "uid": "b1",
                "lastUpdatedTimestamp": "2026-11-21T09:00:00Z",
                "phases": [{"name": "backup", "status": "COMPLETE", "steps": [{"name": "backup", "status": "COMPLETE"}]}]
            }
        },
        "conditions": [{
            "type": "Ready", "status": "False", "reason": "ResourceNotReady",
            "message": "Deployment default/demo-instance-web: progress deadline exceeded",
            "lastTransitionTime": "2026-11-21T10:06:00Z"
        }],
        "history": [
            {"plan": "backup", "uid": "b1", "trigger": "manual", "started": "2026-11-21T09:00:00Z",
             "finished": "2026-11-21T09:00:10Z", "result": "COMPLETE"},
            {"plan": "deploy", "uid": "d1", "trigger": "parameter REPLICAS", "started": "2026-11-21T10:00:00Z",
             "finished": "2026-11-21T10:01:00Z", "message": "restarted by a new request (parameter REPLICAS)"},
            {"plan": "deploy", "uid": "d2", "trigger": "parameter REPLICAS", "started": "2026-11-21T10:01:00Z",
             "finished": "2026-11-21T10:05:00Z", "result": "COMPLETE"}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_last_results_and_superseded_runs_are_shown() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);
    ok(kc, &["install", &fixture_arg("demo")]);
    write_status(
        &sandbox,
        "default",
        "demo-instance",
        complete_but_not_ready(),
    )
    .await;

    insta::assert_snapshot!(
        "plan-status-complete-not-ready",
        ok(kc, &["plan", "status", "--instance", "demo-instance"])
    );
    insta::assert_snapshot!(
        "plan-history-superseded",
        ok(kc, &["plan", "history", "--instance", "demo-instance"])
    );
    insta::assert_snapshot!("get-instances-ready", ok(kc, &["get", "instances"]));
    insta::assert_snapshot!(
        "get-instance-wide",
        ok(kc, &["get", "instance", "demo-instance", "-o", "wide"])
    );
}

/// deploy run by a channel move, a newer version available but held.
fn moved_by_a_channel() -> serde_json::Value {
    json!({
        "activePlan": {"name": "deploy", "uid": "u2", "status": "COMPLETE", "trigger": "upgrade"},
        "planStatus": {
            "deploy": {
                "name": "deploy", "status": "COMPLETE", "uid": "u2",
                "lastUpdatedTimestamp": "2026-11-21T10:05:00Z",
                "phases": [{"name": "main", "status": "COMPLETE", "steps": [
                    {"name": "config", "status": "COMPLETE"},
                    {"name": "app", "status": "COMPLETE"}
                ]}]
            }
        },
        "history": [
            {"plan": "deploy", "uid": "u1", "trigger": "create", "started": "2026-11-21T09:00:00Z",
             "finished": "2026-11-21T09:00:10Z", "result": "COMPLETE"},
            {"plan": "deploy", "uid": "u2", "trigger": "upgrade", "started": "2026-11-21T10:00:00Z",
             "finished": "2026-11-21T10:05:00Z", "result": "COMPLETE",
             "reason": "recall of 0.1.0: CVE-2026-1 (→ 0.2.0)"}
        ],
        "upgrades": {
            "installed": "0.2.0",
            "available": "0.3.0",
            "operatorVersion": "demo-1.0.0-0.2.0",
            "lastChange": "recall of 0.1.0: CVE-2026-1 (→ 0.2.0)",
            "reason": "channel stable: 0.2.0 → 0.3.0: waiting for approval (kubectl kudo upgrade approve --instance demo-instance 0.3.0)"
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_move_shows_its_reason_and_the_installed_and_available_versions() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);
    ok(kc, &["install", &fixture_arg("demo")]);
    write_status(&sandbox, "default", "demo-instance", moved_by_a_channel()).await;
    insta::assert_snapshot!(
        "plan-status-channel-move",
        ok(kc, &["plan", "status", "--instance", "demo-instance"])
    );
    insta::assert_snapshot!(
        "plan-history-channel-move",
        ok(kc, &["plan", "history", "--instance", "demo-instance"])
    );
    insta::assert_snapshot!("get-instances-channel-move", ok(kc, &["get", "instances"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_takes_kubectl_kinds_names_namespaces_and_formats() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);
    ok(kc, &["install", &fixture_arg("demo")]);
    ok(
        kc,
        &[
            "install",
            &fixture_arg("demo"),
            "--instance",
            "web",
            "-n",
            "team-a",
            "--create-namespace",
        ],
    );

    insta::assert_snapshot!("get-all-namespaces", ok(kc, &["get", "inst", "-A"]));
    insta::assert_snapshot!(
        "get-instances-name",
        ok(kc, &["get", "instances", "-A", "-o", "name"])
    );
    insta::assert_snapshot!("get-ov", ok(kc, &["get", "ov", "-n", "team-a"]));
    insta::assert_snapshot!(
        "get-instance-missing",
        fails(kc, &["get", "instance", "nope"], 1)
    );
    let yaml = ok(kc, &["get", "instance", "demo-instance", "-o", "yaml"]);
    assert!(
        yaml.starts_with("apiVersion: kudo.dev/v1beta1\nkind: Instance\n"),
        "{yaml}"
    );
    insta::assert_snapshot!(
        "get-all-with-a-name",
        fails(kc, &["get", "all", "demo-instance"], 2)
    );
    insta::assert_snapshot!(
        "suppress-clear-nothing",
        ok(kc, &["suppress", "clear", "--instance", "demo-instance"])
    );
}
