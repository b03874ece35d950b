//! `plan trigger -p/-P`: values for one run, checked before anything is
//! written, carried in spec.planExecution.parameters and shown by `plan
//! status` and `plan history` (against kudo-sandbox, no manager: the test
//! writes the status a manager would).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{fixture_arg, run_with, transcript};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kudo_api::Instance;
use kudo_sandbox::Sandbox;
use serde_json::json;

const INSTANCE: &str = "demo-instance";

fn run(kubeconfig: &Path, args: &[&str], code: i32) -> String {
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

fn trigger<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "plan",
        "trigger",
        "--name",
        "backup",
        "--instance",
        INSTANCE,
    ];
    args.extend_from_slice(extra);
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_trigger_carries_checked_values_for_one_run_and_status_shows_them() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    run(kc, &["init", "--crd-only"], 0);
    run(
        kc,
        &["install", &fixture_arg("demo"), "-p", "REPLICAS=2"],
        0,
    );

    // Checked before anything is written, naming every problem.
    let refused = run(kc, &trigger(&["-p", "NOPE=1"]), 1);
    assert!(
        refused.contains("NOPE") && refused.contains("not declared"),
        "{refused}"
    );
    let refused = run(kc, &trigger(&["-p", "LOG_LEVEL=TRACE"]), 1);
    assert!(
        refused.contains("LOG_LEVEL") && refused.contains("INFO, DEBUG"),
        "{refused}"
    );
    let refused = run(kc, &trigger(&["-p", "REPLICAS"]), 2);
    assert!(refused.contains("KEY=VALUE"), "{refused}");
    assert!(instance(&sandbox).await.spec.plan_execution.is_none());

    // -P file, -p over it; LOG_LEVEL triggers deploy when the Instance's
    // value changes, and may be given to one run of another plan.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.yaml");
    std::fs::write(&file, "GREETING: from-file\nLOG_LEVEL: DEBUG\n").unwrap();
    let said = run(
        kc,
        &trigger(&["-P", file.to_str().unwrap(), "-p", "GREETING=from-flag"]),
        0,
    );
    assert!(
        said.contains("triggered plan backup for instance default/demo-instance with GREETING, LOG_LEVEL for this run only"),
        "{said}"
    );
    let inst = instance(&sandbox).await;
    let execution = inst.spec.plan_execution.clone().unwrap();
    let expected = BTreeMap::from([
        ("GREETING".to_string(), "from-flag".to_string()),
        ("LOG_LEVEL".to_string(), "DEBUG".to_string()),
    ]);
    assert_eq!(execution.parameters.as_ref(), Some(&expected));
    assert_eq!(
        inst.spec.parameter("GREETING"),
        None,
        "the Instance's are untouched"
    );
    assert_eq!(inst.spec.parameter("REPLICAS"), Some("2"));

    // A later trigger without values clears the last run's.
    run(kc, &trigger(&[]), 0);
    let inst = instance(&sandbox).await;
    let execution = inst.spec.plan_execution.clone().unwrap();
    assert_eq!(execution.parameters, None);
    assert_eq!(execution.break_glass, None);

    // What a manager records for the run is shown.
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.patch_status(
        INSTANCE,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "activePlan": {"name": "backup", "uid": "b1", "status": "IN_PROGRESS", "trigger": "manual"},
            "planStatus": {"backup": {"name": "backup", "status": "IN_PROGRESS", "uid": "b1",
                "parameters": {"GREETING": "from-flag"}}},
            "history": [{"plan": "backup", "uid": "b1", "trigger": "manual",
                "started": "2026-11-21T10:00:00Z", "parameters": {"GREETING": "from-flag"}}]
        }})),
    )
    .await
    .unwrap();
    let status = run(kc, &["plan", "status", "--instance", INSTANCE], 0);
    assert!(status.contains("run with GREETING=from-flag"), "{status}");
    let history = run(kc, &["plan", "history", "--instance", INSTANCE], 0);
    assert!(history.contains("manual (GREETING=from-flag)"), "{history}");
}
