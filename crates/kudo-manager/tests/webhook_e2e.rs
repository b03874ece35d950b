//! End to end through kudo-sandbox and the real kubectl: the webhook runs on
//! 127.0.0.1 with its own CA, registered by URL as `kudo-manager dev` does.
//! A running plan is simulated by writing Instance status through the
//! status subresource (what the controller would do).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kudo_api::{Instance, MaintenanceSchedule, OperatorVersion};
use kudo_certs::LOCAL_WEBHOOK_CONFIGURATION_NAME;
use kudo_manager::metrics::Metrics;
use kudo_sandbox::Sandbox;
use serde_json::{Value, json};
use support::admission::operator_version_list;
use support::local_webhook::{create_greeting_operator_version, install_crds, start_webhook};

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn status(plan_state: &str, node_2: &str) -> Value {
    json!({
        "status": {
            "activePlan": {"name": "deploy", "uid": "deploy-1", "status": plan_state, "trigger": "create"},
            "planStatus": {"deploy": {"name": "deploy", "status": plan_state, "uid": "deploy-1", "phases": [
                {"name": "nodes", "status": plan_state, "steps": [
                    {"name": "node-1", "status": "COMPLETE"},
                    {"name": "node-2", "status": node_2},
                    {"name": "node-3", "status": if plan_state == "COMPLETE" { "COMPLETE" } else { "PENDING" }},
                ]},
            ]}},
            "appliedParameters": {"CLUSTER_NAME": "zk-prod", "MEMORY": "1Gi"},
            "appliedOperatorVersion": "zookeeper-0.3.0",
        }
    })
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_is_refused_while_a_plan_runs_and_allowed_after_it_completes() {
    if !kubectl_available() {
        eprintln!("kubectl not found; skipping the kubectl end-to-end test");
        return;
    }
    let sandbox = Sandbox::start().await.unwrap();
    let client = sandbox.client().unwrap();
    install_crds(&client).await;
    let ovs: Api<OperatorVersion> = Api::namespaced(client.clone(), "default");
    for ov in operator_version_list() {
        ovs.create(&PostParams::default(), &ov).await.unwrap();
    }

    let certs = tempfile::tempdir().unwrap();
    let manager_metrics = Metrics::new();
    let (addr, stop, webhook) = start_webhook(&client, certs.path(), &manager_metrics).await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let registered = configs.get(LOCAL_WEBHOOK_CONFIGURATION_NAME).await.unwrap();
    let url = registered.webhooks.unwrap()[0]
        .client_config
        .url
        .clone()
        .unwrap();
    assert_eq!(
        url,
        format!(
            "https://127.0.0.1:{}/validate-kudo-dev-v1beta1-instance",
            addr.port()
        )
    );

    // Creating an Instance of a missing OperatorVersion is refused by the webhook.
    let instances: Api<Instance> = Api::namespaced(client.clone(), "default");
    let mut zk: Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "zk", "namespace": "default"},
        "spec": {"operatorVersion": {"name": "zookeeper-9.9.9"},
                 "parameters": {"CLUSTER_NAME": "zk-prod", "MEMORY": "1Gi"}}
    }))
    .unwrap();
    let refused = instances
        .create(&PostParams::default(), &zk)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("zookeeper-9.9.9"), "{refused}");
    zk.spec.operator_version.name = Some("zookeeper-0.3.0".to_string());
    instances.create(&PostParams::default(), &zk).await.unwrap();

    // deploy is running, stuck on node-2.
    instances
        .patch_status(
            "zk",
            &PatchParams::default(),
            &Patch::Merge(status("IN_PROGRESS", "IN_PROGRESS")),
        )
        .await
        .unwrap();

    let kubeconfig = sandbox.kubeconfig_path().to_path_buf();
    let update = [
        "patch",
        "instance",
        "zk",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"parameters":{"LOG_LEVEL":"DEBUG"}}}"#,
    ];
    let out = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        move || kubectl(&kubeconfig, &update)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("kubectl said: {stderr}");
    assert!(
        !out.status.success(),
        "kubectl patch should be refused; stderr: {stderr}"
    );
    assert!(stderr.contains("denied the request"), "{stderr}");
    assert!(
        stderr.contains(r#"plan "deploy" is IN_PROGRESS (phase "nodes", step "node-2")"#),
        "{stderr}"
    );
    assert!(
        stderr.contains("kubectl kudo plan cancel --instance zk"),
        "{stderr}"
    );
    // A manual trigger of another plan is refused the same way.
    let trigger = [
        "patch",
        "instance",
        "zk",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"planExecution":{"planName":"backup","uid":"backup-1"}}}"#,
    ];
    let out = tokio::task::spawn_blocking({
        let kubeconfig = kubeconfig.clone();
        move || kubectl(&kubeconfig, &trigger)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "manual trigger should be refused; stderr: {stderr}"
    );
    assert!(
        stderr.contains(r#"a manual run of plan "backup" cannot start"#),
        "{stderr}"
    );
    let unchanged = instances.get("zk").await.unwrap();
    assert_eq!(unchanged.spec.plan_execution, None);
    assert_eq!(unchanged.spec.parameter("LOG_LEVEL"), None);

    // deploy completes; the same update now goes through.
    instances
        .patch_status(
            "zk",
            &PatchParams::default(),
            &Patch::Merge(status("COMPLETE", "COMPLETE")),
        )
        .await
        .unwrap();
    let out = tokio::task::spawn_blocking(move || kubectl(&kubeconfig, &update))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl patch after completion failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let updated = instances.get("zk").await.unwrap();
    assert_eq!(updated.spec.parameter("LOG_LEVEL"), Some("DEBUG"));

    // The manager's /metrics counted the reviews: the missing OV, the
    // parameter update and the manual trigger were denied; creates and the
    // later update were allowed.
    let rendered = manager_metrics.render();
    let count = |verdict: &str| -> u64 {
        let prefix = format!("kudo_manager_webhook_reviews_total{{verdict=\"{verdict}\"}} ");
        rendered
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    assert_eq!(count("denied"), 3, "{rendered}");
    assert!(count("allowed") >= 2, "{rendered}");
    assert_eq!(count("failed"), 0, "{rendered}");
    assert!(
        rendered.contains("kudo_manager_webhook_review_duration_seconds_count"),
        "{rendered}"
    );

    // Clean shutdown removes the registration.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), webhook)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        configs
            .get_opt(LOCAL_WEBHOOK_CONFIGURATION_NAME)
            .await
            .unwrap()
            .is_none()
    );
    sandbox.stop().await;
}

/// The cluster-scoped MaintenanceSchedule reaches the webhook through its own
/// rule: an invalid or second schedule is refused and nothing is stored; the
/// one valid schedule is stored, and an update breaking a rule is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_schedules_are_validated_and_a_refused_one_changes_nothing() {
    let sandbox = Sandbox::start().await.unwrap();
    let client = sandbox.client().unwrap();
    install_crds(&client).await;
    let certs = tempfile::tempdir().unwrap();
    let (_, stop, webhook) = start_webhook(&client, certs.path(), &Metrics::new()).await;

    let schedules: Api<MaintenanceSchedule> = Api::all(client.clone());
    let schedule = |name: &str, windows: Value, down: Value| -> MaintenanceSchedule {
        serde_json::from_value(json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "MaintenanceSchedule",
            "metadata": {"name": name},
            "spec": {"windows": windows, "down": down}
        }))
        .unwrap()
    };
    let window = |nodes: Value| json!({"nodes": nodes, "unavailability": {"start": "2026-12-01T02:00:00Z", "duration": "1h"}});
    let post = PostParams::default();

    let twice = schedule(
        "default",
        json!([
            window(json!([{"name": "n1"}])),
            window(json!([{"name": "n1"}]))
        ]),
        json!([]),
    );
    let refused = schedules.create(&post, &twice).await.unwrap_err();
    let message = refused.to_string();
    assert!(
        message.contains("spec.windows[1].nodes[0]: node n1"),
        "{message}"
    );
    assert!(message.contains("denied the request"), "{message}");

    let other = schedule(
        "weekend",
        json!([window(json!([{"name": "n1"}]))]),
        json!([]),
    );
    let refused = schedules.create(&post, &other).await.unwrap_err();
    assert!(
        refused.to_string().contains("one schedule per cluster"),
        "{refused}"
    );
    assert!(
        schedules
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let valid = schedule(
        "default",
        json!([window(json!([{"name": "n1"}, {"ip": "10.0.0.2"}]))]),
        json!([{"name": "n1"}]),
    );
    schedules.create(&post, &valid).await.unwrap();

    // Dropping the Down node from the windows is refused; the stored spec stays.
    let drop_down = json!({"spec": {"windows": [window(json!([{"ip": "10.0.0.2"}]))]}});
    let refused = schedules
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(&drop_down),
        )
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("spec.down[0]: node n1 is Down"),
        "{refused}"
    );
    assert_eq!(schedules.get("default").await.unwrap().spec, valid.spec);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(15), webhook)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    sandbox.stop().await;
}

/// A parameter value that would add an object to the rendered YAML never
/// reaches the cluster: the API server asks the webhook, which renders the
/// value into the templates and refuses it, naming parameter, template and
/// line. Nothing is stored; a harmless value is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_value_that_adds_an_object_is_refused_before_it_is_stored() {
    let sandbox = Sandbox::start().await.unwrap();
    let client = sandbox.client().unwrap();
    install_crds(&client).await;
    create_greeting_operator_version(&client, "inject").await;
    let certs = tempfile::tempdir().unwrap();
    let (_, stop, webhook) = start_webhook(&client, certs.path(), &Metrics::new()).await;

    let instances: Api<Instance> = Api::namespaced(client.clone(), "default");
    let inst = |greeting: &str| -> Instance {
        serde_json::from_value(json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": "inj", "namespace": "default"},
            "spec": {"operatorVersion": {"name": "inject-0.1.0"},
                     "parameters": {"GREETING": greeting}}
        }))
        .unwrap()
    };
    let evil = "hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwn\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: default";
    let refused = instances
        .create(&PostParams::default(), &inst(evil))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(
            "parameter GREETING starts a new YAML document in configmap.yaml:6; quote it or use toYaml"
        ),
        "{refused}"
    );
    assert!(instances.get_opt("inj").await.unwrap().is_none());

    // Stored when harmless; an update smuggling a key is refused.
    instances
        .create(&PostParams::default(), &inst("hello"))
        .await
        .unwrap();
    let refused = instances
        .patch(
            "inj",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parameters": {"GREETING": "x\nimmutable: true"}}})),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("parameter GREETING adds"), "{refused}");
    let _ = stop.send(());
    webhook.await.unwrap().unwrap();
    sandbox.stop().await;
}
