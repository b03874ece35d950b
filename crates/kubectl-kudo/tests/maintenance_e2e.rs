//! Node maintenance end to end: the binary, the real manager and its
//! webhook on kudo-sandbox (which schedules pods onto Nodes and evicts them
//! as a cluster does). `maintenance schedule` taints the node and the
//! zookeeper Instance with a pod there runs its maintenance plan and
//! answers Accepted; `down` cordons and drains through the Eviction API, a
//! budget that allows no disruption is reported and respected, and after
//! the manager is stopped mid-drain the next one finishes it; `up`
//! releases the node. A failing maintenance plan answers Declined.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run_with, stdout, transcript};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kudo_api::maintenance::MAINTENANCE_TAINT;
use kudo_api::{ExecutionStatus as S, Instance, MaintenanceResponse};
use kudo_sandbox::Sandbox;
use serde_json::json;

fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = run_with(kubeconfig, args);
    assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    stdout(&output)
}

fn package(relative: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    dir.to_string_lossy().into_owned()
}

async fn nodes(client: &kube::Client, names: &[&str]) {
    for name in names {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        Api::<Node>::all(client.clone())
            .create(&PostParams::default(), &node)
            .await
            .unwrap();
    }
}

/// Polls `check` every 250 ms for up to a minute.
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..240 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("never: {what}");
}

fn taint(node: &Node) -> Option<String> {
    node.spec.as_ref()?.taints.as_ref()?.iter().find_map(|t| {
        (t.key == MAINTENANCE_TAINT)
            .then(|| format!("{}:{}", t.value.clone().unwrap_or_default(), t.effect))
    })
}

fn cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

fn answer(inst: &Instance) -> Option<MaintenanceResponse> {
    Some(inst.status.as_ref()?.maintenance.as_ref()?.response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schedule_tells_down_drains_respecting_budgets_across_a_restart_and_up_releases() {
    let sandbox = Sandbox::builder().start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    let client = sandbox.client().unwrap();
    ok(kc, &["init", "--crd-only"]);
    nodes(&client, &["n1", "n2", "n3"]).await;
    let manager = common::Manager::start(&sandbox);
    let zookeeper = package("../../operators/zookeeper");
    ok(
        kc,
        &[
            "install",
            &zookeeper,
            "--instance",
            "zk",
            "-p",
            "NODE_COUNT=3",
            "--wait",
        ],
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let node_api: Api<Node> = Api::all(client.clone());
    let instances: Api<Instance> = Api::namespaced(client.clone(), "default");
    let node = eventually("pod 0 is placed", async || {
        pods.get_opt("zk-zookeeper-0")
            .await
            .unwrap()
            .and_then(|p| p.spec?.node_name)
    })
    .await;

    // An invalid schedule is refused and writes nothing.
    let refused = run_with(
        kc,
        &[
            "maintenance",
            "schedule",
            &node,
            &node,
            "--start",
            "now",
            "--duration",
            "1h",
        ],
    );
    assert!(!refused.status.success());
    assert!(
        transcript(&refused).contains("spec.windows[0].nodes[1]"),
        "{}",
        transcript(&refused)
    );

    // Scheduled: the node is tainted, the Instance told; its plan answers.
    ok(
        kc,
        &[
            "maintenance",
            "schedule",
            &node,
            "--start",
            "now",
            "--duration",
            "1h",
        ],
    );
    let tainted = eventually("tainted", async || {
        let n = node_api.get(&node).await.unwrap();
        taint(&n).map(|_| n)
    })
    .await;
    assert_eq!(
        taint(&tainted).as_deref(),
        Some("draining:PreferNoSchedule")
    );
    let inst = eventually("answered", async || {
        let i = instances.get("zk").await.unwrap();
        (answer(&i) == Some(MaintenanceResponse::Accepted)).then_some(i)
    })
    .await;
    let plan = inst.status.as_ref().unwrap().plan_status["maintenance"].status;
    assert_eq!(plan, Some(S::Complete));
    let status = eventually("the schedule shows the answer", async || {
        let out = ok(kc, &["maintenance", "status"]);
        out.contains("Accepted").then_some(out)
    })
    .await;
    assert!(status.contains("zk") && status.contains(&node), "{status}");
    let plan_status = ok(kc, &["plan", "status", "--instance", "zk"]);
    assert!(
        plan_status.contains(&format!("node {node} scheduled for maintenance")),
        "{plan_status}"
    );
    assert!(plan_status.contains("answered Accepted"), "{plan_status}");

    // Down behind a budget that allows no disruption: cordoned, the
    // eviction held back and the budget named.
    let blocker: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "freeze"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "zookeeper"}}}
    }))
    .unwrap();
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    budgets
        .create(&PostParams::default(), &blocker)
        .await
        .unwrap();
    ok(kc, &["maintenance", "down", &node]);
    eventually("cordoned", async || {
        cordoned(&node_api.get(&node).await.unwrap()).then_some(())
    })
    .await;
    let blocked = eventually("a held-back eviction", async || {
        let out = ok(kc, &["maintenance", "status"]);
        out.contains("default/freeze").then_some(out)
    })
    .await;
    assert!(blocked.contains("zk-zookeeper-0"), "{blocked}");
    assert_eq!(
        pods.get("zk-zookeeper-0")
            .await
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .as_deref(),
        Some(node.as_str()),
        "the budget is respected"
    );

    // The manager stops mid-drain; with the budget gone, the next one drains.
    manager.stop().await;
    budgets
        .delete("freeze", &DeleteParams::default())
        .await
        .unwrap();
    let manager = common::Manager::start(&sandbox);
    // Already Down: --wait follows the drain the new manager finishes.
    ok(kc, &["maintenance", "down", &node, "--wait"]);
    let left: Vec<String> = pods
        .list(&kube::api::ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert!(left.is_empty(), "pods left on {node}: {left:?}");

    // Up: uncordoned, untainted, out of the schedule.
    ok(kc, &["maintenance", "up", &node]);
    eventually("released", async || {
        let n = node_api.get(&node).await.unwrap();
        (!cordoned(&n) && taint(&n).is_none()).then_some(())
    })
    .await;
    let after = ok(kc, &["maintenance", "status", "-o", "json"]);
    let after: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert!(
        after["spec"]["windows"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{after}"
    );
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_maintenance_plan_answers_declined_with_its_message() {
    let sandbox = Sandbox::builder().start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    let client = sandbox.client().unwrap();
    ok(kc, &["init", "--crd-only"]);
    nodes(&client, &["only"]).await;
    let manager = common::Manager::start(&sandbox);
    let fixture = package("../../tests/fixtures/maint-op");
    ok(
        kc,
        &[
            "install",
            &fixture,
            "--instance",
            "db",
            "-p",
            "REPLICAS=1",
            "-p",
            "DECLINE=true",
            "--wait",
        ],
    );
    ok(
        kc,
        &[
            "maintenance",
            "schedule",
            "only",
            "--start",
            "now",
            "--duration",
            "30m",
        ],
    );
    let status = eventually("declined", async || {
        let out = ok(kc, &["maintenance", "status"]);
        out.contains("Declined").then_some(out)
    })
    .await;
    assert!(
        status.contains("db-prepare"),
        "the plan's message is shown: {status}"
    );
    let plan_status = ok(kc, &["plan", "status", "--instance", "db"]);
    assert!(plan_status.contains("answered Declined"), "{plan_status}");
    manager.stop().await;
}
