//! Every cluster command through the binary against kudo-sandbox (no
//! manager: the tests write status themselves where a manager would).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{fixture_arg, run_with, transcript};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kudo_api::Instance;
use kudo_sandbox::Sandbox;
use serde_json::json;

const INSTANCE: &str = "demo-instance";

async fn sandbox_with_crds() -> Sandbox {
    let sandbox = Sandbox::start().await.unwrap();
    let output = run_with(sandbox.kubeconfig_path(), &["init", "--crd-only"]);
    assert!(output.status.success(), "{}", transcript(&output));
    sandbox
}

fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = run_with(kubeconfig, args);
    assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    transcript(&output)
}

fn fails(kubeconfig: &Path, args: &[&str], code: i32) -> String {
    let output = run_with(kubeconfig, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{args:?}: {}",
        transcript(&output)
    );
    transcript(&output)
}

async fn instance(sandbox: &Sandbox) -> Instance {
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.get(INSTANCE).await.unwrap()
}

async fn write_status(sandbox: &Sandbox, status: serde_json::Value) {
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.patch_status(
        INSTANCE,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

fn running_deploy_status() -> serde_json::Value {
    json!({
        "activePlan": {"name": "deploy", "uid": "deploy-run-1", "status": "IN_PROGRESS", "trigger": "create"},
        "planStatus": {
            "deploy": {
                "name": "deploy", "status": "IN_PROGRESS", "uid": "deploy-run-1",
                "lastUpdatedTimestamp": "2026-11-21T10:00:05Z", "startedAt": "2026-11-21T10:00:00Z",
                "phases": [{
                    "name": "main", "status": "IN_PROGRESS",
                    "steps": [
                        {"name": "config", "status": "COMPLETE", "startedAt": "2026-11-21T10:00:00Z", "finishedAt": "2026-11-21T10:00:01Z"},
                        {"name": "app", "status": "IN_PROGRESS", "message": "waiting for Deployment default/demo-instance-web", "startedAt": "2026-11-21T10:00:01Z",
                         "tasks": [{"name": "app", "status": "IN_PROGRESS", "message": "Deployment default/demo-instance-web: 1 of 2 replicas ready"}]}
                    ]
                }]
            },
            "backup": {"name": "backup", "status": "NEVER_RUN"}
        },
        "blockers": [{"kind": "MaintenanceWindow", "message": "maintenance window Mon-Fri 22:00-04:00 Europe/Berlin is closed", "until": "2026-11-23T21:00:00Z", "plan": "deploy"}],
        "history": [
            {"plan": "deploy", "uid": "deploy-run-1", "trigger": "create", "started": "2026-11-21T10:00:00Z"}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_get_update_trigger_operate_rollback_upgrade_uninstall() {
    let sandbox = sandbox_with_crds().await;
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    let demo = fixture_arg("demo");

    insta::assert_snapshot!("get-instances-empty", ok(kc, &["get", "instances"]));

    // Parameters are checked before anything is written.
    insta::assert_snapshot!(
        "install-invalid-parameters",
        fails(
            kc,
            &[
                "install",
                &demo,
                "-p",
                "REPLICAS=many",
                "-p",
                "NOPE=1",
                "-p",
                "LOG_LEVEL=TRACE"
            ],
            1
        )
    );
    insta::assert_snapshot!(
        "get-operators-before-install",
        ok(kc, &["get", "operators"])
    );

    insta::assert_snapshot!("install", ok(kc, &["install", &demo, "-p", "REPLICAS=2"]));
    let created = instance(&sandbox).await;
    assert_eq!(
        created.spec.operator_version.name.as_deref(),
        Some("demo-1.0.0-0.1.0")
    );
    assert_eq!(created.spec.parameter("REPLICAS"), Some("2"));
    insta::assert_snapshot!("install-again", fails(kc, &["install", &demo], 1));

    insta::assert_snapshot!("get-instances", ok(kc, &["get", "instances"]));
    insta::assert_snapshot!("get-operators", ok(kc, &["get", "operators"]));
    insta::assert_snapshot!("get-operatorversions", ok(kc, &["get", "operatorversions"]));
    insta::assert_snapshot!("get-all", ok(kc, &["get", "all"]));
    let yaml = ok(kc, &["get", "instances", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: List") && yaml.contains("name: demo-instance"),
        "{yaml}"
    );
    assert!(!yaml.contains("managedFields"), "{yaml}");
    let json_out = ok(kc, &["get", "all", "-o", "json"]);
    assert!(
        json_out.contains("\"kind\": \"OperatorVersion\""),
        "{json_out}"
    );

    insta::assert_snapshot!(
        "plan-status-never-run",
        ok(kc, &["plan", "status", "--instance", INSTANCE])
    );
    write_status(&sandbox, running_deploy_status()).await;
    insta::assert_snapshot!(
        "plan-status-running",
        ok(kc, &["plan", "status", "--instance", INSTANCE])
    );
    insta::assert_snapshot!(
        "plan-history",
        ok(kc, &["plan", "history", "--instance", INSTANCE])
    );
    insta::assert_snapshot!(
        "plan-status-yaml",
        ok(
            kc,
            &["plan", "status", "--instance", INSTANCE, "-o", "yaml"]
        )
    );
    insta::assert_snapshot!(
        "plan-status-missing-instance",
        fails(kc, &["plan", "status", "--instance", "nope"], 1)
    );

    // update: a merge patch of spec.parameters; immutables are refused locally.
    insta::assert_snapshot!(
        "update",
        ok(
            kc,
            &[
                "update",
                "--instance",
                INSTANCE,
                "-p",
                "REPLICAS=3",
                "-p",
                "GREETING=hi"
            ]
        )
    );
    let updated = instance(&sandbox).await;
    assert_eq!(updated.spec.parameter("REPLICAS"), Some("3"));
    assert_eq!(updated.spec.parameter("GREETING"), Some("hi"));
    insta::assert_snapshot!(
        "update-immutable",
        fails(
            kc,
            &["update", "--instance", INSTANCE, "-p", "STORAGE_CLASS=fast"],
            1
        )
    );
    insta::assert_snapshot!(
        "update-without-parameters",
        fails(kc, &["update", "--instance", INSTANCE], 2)
    );

    // trigger: planExecution with a fresh uid.
    insta::assert_snapshot!(
        "plan-trigger",
        ok(
            kc,
            &[
                "plan",
                "trigger",
                "--name",
                "backup",
                "--instance",
                INSTANCE,
                "--break-glass"
            ]
        )
    );
    let triggered = instance(&sandbox).await;
    let execution = triggered.spec.plan_execution.clone().unwrap();
    assert_eq!(execution.plan_name.as_deref(), Some("backup"));
    assert_eq!(execution.break_glass, Some(true));
    assert_eq!(execution.uid.unwrap().len(), 36);
    insta::assert_snapshot!(
        "plan-trigger-unknown-plan",
        fails(
            kc,
            &["plan", "trigger", "--name", "nope", "--instance", INSTANCE],
            1
        )
    );

    // Plan operations append to spec.planOperations.
    insta::assert_snapshot!(
        "plan-pause",
        ok(
            kc,
            &[
                "plan",
                "pause",
                "--instance",
                INSTANCE,
                "--plan",
                "deploy",
                "--phase",
                "main",
                "--step",
                "app",
                "--reason",
                "investigating"
            ]
        )
    );
    ok(
        kc,
        &[
            "plan",
            "force-complete",
            "--instance",
            INSTANCE,
            "--phase",
            "main",
            "--step",
            "app",
        ],
    );
    let operated = instance(&sandbox).await;
    let ops = &operated.spec.plan_operations;
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0].action, kudo_api::PlanAction::Pause);
    assert_eq!(ops[0].step.as_deref(), Some("app"));
    assert_eq!(ops[0].reason.as_deref(), Some("investigating"));
    assert_eq!(ops[0].requested_by.as_deref(), Some("kudo-sandbox"));
    assert_eq!(ops[1].action, kudo_api::PlanAction::ForceComplete);
    assert_ne!(ops[0].id, ops[1].id);
    insta::assert_snapshot!(
        "plan-restart-unknown-phase",
        fails(
            kc,
            &[
                "plan",
                "restart",
                "--instance",
                INSTANCE,
                "--plan",
                "deploy",
                "--phase",
                "nope"
            ],
            1
        )
    );

    // suppress / suppress clear.
    insta::assert_snapshot!(
        "suppress-without-reason",
        fails(kc, &["suppress", "--instance", INSTANCE], 2)
    );
    let text = ok(
        kc,
        &[
            "suppress",
            "--instance",
            INSTANCE,
            "--reason",
            "release freeze",
            "--until",
            "2099-01-01T00:00:00Z",
        ],
    );
    insta::assert_snapshot!("suppress", text);
    let suppressed = instance(&sandbox).await;
    assert_eq!(suppressed.spec.suppressions.len(), 1);
    assert_eq!(suppressed.spec.suppressions[0].reason, "release freeze");
    insta::assert_snapshot!(
        "suppress-clear",
        ok(kc, &["suppress", "clear", "--instance", INSTANCE])
    );
    let cleared = instance(&sandbox).await;
    assert!(cleared.spec.suppressions.is_empty());
    assert_eq!(
        cleared.spec.plan_operations.last().map(|o| o.action),
        Some(kudo_api::PlanAction::ClearSuppression)
    );

    // rollback: refused without a last successful config, then restores it.
    insta::assert_snapshot!(
        "rollback-nothing",
        fails(kc, &["rollback", "--instance", INSTANCE], 1)
    );
    write_status(
        &sandbox,
        json!({"lastSuccessful": {"operatorVersion": "demo-1.0.0-0.1.0", "parameters": {"REPLICAS": "2"}, "plan": "deploy"}}),
    )
    .await;
    insta::assert_snapshot!("rollback", ok(kc, &["rollback", "--instance", INSTANCE]));
    let rolled = instance(&sandbox).await;
    assert_eq!(
        rolled.spec.parameters,
        Some(std::collections::BTreeMap::from([(
            "REPLICAS".to_string(),
            "2".to_string()
        )]))
    );

    // upgrade: the version must grow.
    insta::assert_snapshot!(
        "upgrade-same-version",
        fails(kc, &["upgrade", &demo, "--instance", INSTANCE], 1)
    );
    insta::assert_snapshot!(
        "upgrade",
        ok(
            kc,
            &[
                "upgrade",
                &fixture_arg("demo-v2"),
                "--instance",
                INSTANCE,
                "-p",
                "LOG_LEVEL=DEBUG"
            ]
        )
    );
    let upgraded = instance(&sandbox).await;
    assert_eq!(
        upgraded.spec.operator_version.name.as_deref(),
        Some("demo-1.0.0-0.2.0")
    );
    assert_eq!(upgraded.spec.parameter("LOG_LEVEL"), Some("DEBUG"));

    // uninstall.
    insta::assert_snapshot!(
        "uninstall",
        ok(
            kc,
            &[
                "uninstall",
                "--instance",
                INSTANCE,
                "--wait",
                "--wait-timeout",
                "20s"
            ]
        )
    );
    insta::assert_snapshot!(
        "uninstall-missing",
        fails(kc, &["uninstall", "--instance", INSTANCE], 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_flag_and_create_namespace() {
    let sandbox = sandbox_with_crds().await;
    let kc = sandbox.kubeconfig_path();
    let demo = fixture_arg("demo");
    let values = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        values.path(),
        "REPLICAS: 4\nGREETING: from a file\nLOG_LEVEL: INFO\n",
    )
    .unwrap();
    let file = values.path().display().to_string();
    let text = ok(
        kc,
        &[
            "install",
            &demo,
            "-n",
            "shop",
            "--create-namespace",
            "--instance",
            "web",
            "-P",
            &file,
            "-p",
            "LOG_LEVEL=DEBUG",
        ],
    );
    insta::assert_snapshot!("install-create-namespace", text);
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "shop");
    let web = api.get("web").await.unwrap();
    assert_eq!(web.spec.parameter("REPLICAS"), Some("4"));
    assert_eq!(web.spec.parameter("GREETING"), Some("from a file"));
    assert_eq!(
        web.spec.parameter("LOG_LEVEL"),
        Some("DEBUG"),
        "-p wins over -P"
    );
    insta::assert_snapshot!(
        "get-instances-other-namespace",
        ok(kc, &["get", "instances", "-n", "shop"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_cluster_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n",
    )
    .unwrap();
    let output = run_with(
        &kubeconfig,
        &["get", "instances", "--request-timeout", "2s"],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        common::stderr(&output).contains("listing instances"),
        "{}",
        transcript(&output)
    );
    let missing = run_with(&dir.path().join("nope"), &["get", "instances"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        common::stderr(&missing).contains("cannot load kubeconfig"),
        "{}",
        transcript(&missing)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_plan_operations_are_not_lost() {
    let sandbox = sandbox_with_crds().await;
    let kc = sandbox.kubeconfig_path().to_path_buf();
    ok(&kc, &["install", &fixture_arg("demo")]);
    // Each command reads, appends and writes with a resourceVersion
    // precondition; a 409 makes it read again, so no entry is lost.
    let workers: Vec<_> = (0..6)
        .map(|i| {
            let kc = kc.clone();
            std::thread::spawn(move || {
                let reason = format!("worker {i}");
                ok(
                    &kc,
                    &[
                        "plan",
                        "restart",
                        "--instance",
                        INSTANCE,
                        "--plan",
                        "deploy",
                        "--phase",
                        "main",
                        "--reason",
                        &reason,
                    ],
                )
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let reasons: std::collections::BTreeSet<String> = instance(&sandbox)
        .await
        .spec
        .plan_operations
        .iter()
        .filter_map(|o| o.reason.clone())
        .collect();
    assert_eq!(reasons.len(), 6, "{reasons:?}");
}
