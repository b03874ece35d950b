//! Node maintenance through the manager: a scheduled node is tainted and
//! the Instance with pods there runs its maintenance plan and answers; a
//! Down node is cordoned and drained through the Eviction API, a budget in
//! the way is reported and respected, and a manager stopped mid-drain goes
//! on where it stopped; `up` releases the node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kudo_api::maintenance::{MAINTENANCE_TAINT, WINDOW_ANNOTATION};
use kudo_api::{ExecutionStatus as S, MaintenanceResponse, MaintenanceSchedule};
use kudo_e2e::{Env, fixture, plan_status};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

async fn nodes(env: &Env, names: &[&str]) {
    for name in names {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        env.api_all::<Node>()
            .create(&PostParams::default(), &node)
            .await
            .unwrap();
    }
}

async fn node_of(env: &Env, pod: &str) -> String {
    for _ in 0..240 {
        if let Some(p) = env.api::<Pod>().get_opt(pod).await.unwrap()
            && let Some(node) = p.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty())
        {
            return node;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("pod {pod} was never scheduled");
}

/// Installs the fixture as Instance `db` and waits for its deploy.
async fn deployed(env: &Env, params: &[(&str, &str)]) {
    env.install_deployed(fixture("maint-op"), "db", params, T)
        .await
        .unwrap();
}

/// Writes the `default` schedule's spec (creating it when missing).
async fn schedule(env: &Env, spec: serde_json::Value) {
    let api = env.api_all::<MaintenanceSchedule>();
    let object: MaintenanceSchedule =
        serde_json::from_value(json!({"metadata": {"name": "default"}, "spec": spec})).unwrap();
    match api.get_opt("default").await.unwrap() {
        None => {
            api.create(&PostParams::default(), &object).await.unwrap();
        }
        Some(_) => {
            let patch = json!({"spec": spec});
            api.patch("default", &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    }
}

async fn wait_schedule(
    env: &Env,
    what: &str,
    done: impl Fn(&MaintenanceSchedule) -> bool,
) -> MaintenanceSchedule {
    let api = env.api_all::<MaintenanceSchedule>();
    for _ in 0..240 {
        if let Some(s) = api.get_opt("default").await.unwrap()
            && done(&s)
        {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let s = api.get_opt("default").await.unwrap();
    panic!(
        "schedule never reached {what}: {}",
        serde_json::to_string_pretty(&s).unwrap()
    );
}

async fn wait_node(env: &Env, name: &str, what: &str, done: impl Fn(&Node) -> bool) -> Node {
    for _ in 0..240 {
        let node = env.api_all::<Node>().get(name).await.unwrap();
        if done(&node) {
            return node;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let node = env.api_all::<Node>().get(name).await.unwrap();
    panic!("node {name} never {what}: {node:?}");
}

fn taint(node: &Node) -> Option<(String, String)> {
    node.spec.as_ref()?.taints.as_ref()?.iter().find_map(|t| {
        (t.key == MAINTENANCE_TAINT)
            .then(|| (t.value.clone().unwrap_or_default(), t.effect.clone()))
    })
}

fn cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

fn answer(s: &MaintenanceSchedule, instance: &str) -> Option<MaintenanceResponse> {
    s.status
        .as_ref()?
        .instances
        .iter()
        .find(|i| i.name == instance)
        .map(|i| i.response)
}

async fn pods_on(env: &Env, node: &str) -> Vec<String> {
    env.api::<Pod>()
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_taints_asks_drains_respecting_budgets_and_releases() {
    if kudo_e2e::cluster::skip_on_real_cluster("creates and drains Nodes") {
        return;
    }
    let mut env = Env::start().await.unwrap();
    nodes(&env, &["n1", "n2", "n3"]).await;
    deployed(&env, &[("REPLICAS", "2")]).await;
    let node = node_of(&env, "db-db-0").await;
    // Whole seconds, as metav1.Time keeps them.
    let start = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + 3600).unwrap();
    let window = json!({"nodes": [{"name": node}], "unavailability": {"start": start.to_string(), "duration": "1h"}});

    // Scheduled: Draining — tainted, annotated, told, answered.
    schedule(&env, json!({"windows": [window]})).await;
    let tainted = wait_node(&env, &node, "tainted", |n| taint(n).is_some()).await;
    assert_eq!(
        taint(&tainted),
        Some(("draining".into(), "PreferNoSchedule".into()))
    );
    assert!(!cordoned(&tainted));
    let annotation = &tainted.metadata.annotations.clone().unwrap()[WINDOW_ANNOTATION];
    assert!(annotation.starts_with(&start.to_string()), "{annotation}");
    let inst = env
        .wait_for("db", "maintenance answered", T, |i| {
            i.status
                .as_ref()
                .and_then(|s| s.maintenance.as_ref())
                .is_some_and(|m| m.response == MaintenanceResponse::Accepted)
        })
        .await
        .unwrap();
    assert_eq!(plan_status(&inst, "maintenance"), Some(S::Complete));
    let recorded = env.api::<ConfigMap>().get("db-maintenance").await.unwrap();
    assert_eq!(recorded.data.unwrap()["nodes"], node);
    let s = wait_schedule(&env, "the answer", |s| {
        answer(s, "db") == Some(MaintenanceResponse::Accepted)
    })
    .await;
    let status = s.status.unwrap();
    assert_eq!((status.draining, status.down), (1, 0));
    assert!(status.next_window.is_some());

    // Down, with a budget that allows no disruption: cordoned, refused
    // evictions reported with the budget.
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "db-budget"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "maint"}}}
    }))
    .unwrap();
    env.api::<PodDisruptionBudget>()
        .create(&PostParams::default(), &pdb)
        .await
        .unwrap();
    schedule(&env, json!({"windows": [window], "down": [{"name": node}]})).await;
    let down = wait_node(&env, &node, "cordoned", cordoned).await;
    assert_eq!(taint(&down), Some(("down".into(), "NoSchedule".into())));
    let s = wait_schedule(&env, "a blocked eviction", |s| {
        s.status
            .as_ref()
            .is_some_and(|st| st.nodes.iter().any(|n| !n.blocked.is_empty()))
    })
    .await;
    let entry = s.status.unwrap().nodes.remove(0);
    assert!(entry.pods_left.unwrap() > 0);
    let blocked = &entry.blocked[0];
    assert_eq!(
        blocked.budget.as_deref(),
        Some(format!("{}/db-budget", env.ns).as_str())
    );
    assert!(
        !pods_on(&env, &node).await.is_empty(),
        "the budget is respected"
    );

    // A pod that claims a DaemonSet that does not exist is drained too.
    let claims: Pod = serde_json::from_value(json!({
        "metadata": {"name": "claims-a-daemonset", "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "no-such-daemonset",
            "uid": "00000000-0000-0000-0000-000000000000", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    env.api::<Pod>()
        .create(&PostParams::default(), &claims)
        .await
        .unwrap();

    // The manager stops mid-drain; the budget goes; the next manager drains.
    env.stop_controller().await.unwrap();
    env.api::<PodDisruptionBudget>()
        .delete("db-budget", &DeleteParams::default())
        .await
        .unwrap();
    env.start_controller();
    let s = wait_schedule(&env, "drained", |s| {
        s.status
            .as_ref()
            .is_some_and(|st| st.nodes.iter().all(|n| n.pods_left == Some(0)))
    })
    .await;
    assert_eq!(s.status.unwrap().down, 1);
    assert!(pods_on(&env, &node).await.is_empty());
    for pod in ["db-db-0", "db-db-1"] {
        let elsewhere = node_of(&env, pod).await;
        assert_ne!(elsewhere, node, "{pod} came back on the Down node");
    }

    // Up: uncordoned, untainted, out of the schedule, the Instance's notice gone.
    schedule(&env, json!({"windows": [], "down": []})).await;
    let released = wait_node(&env, &node, "released", |n| {
        !cordoned(n) && taint(n).is_none()
    })
    .await;
    assert!(
        released
            .metadata
            .annotations
            .unwrap_or_default()
            .keys()
            .all(|k| !k.starts_with("kudo.dev/maintenance"))
    );
    wait_schedule(&env, "empty", |s| {
        s.status.as_ref().is_some_and(|st| st.nodes.is_empty())
    })
    .await;
    env.wait_for("db", "maintenance cleared", T, |i| {
        i.status.as_ref().is_some_and(|s| s.maintenance.is_none())
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_maintenance_plan_is_declined_with_its_message() {
    if kudo_e2e::cluster::skip_on_real_cluster("creates Nodes") {
        return;
    }
    let env = Env::start().await.unwrap();
    nodes(&env, &["n1"]).await;
    deployed(&env, &[("REPLICAS", "1"), ("DECLINE", "true")]).await;
    schedule(
        &env,
        json!({"windows": [{"nodes": [{"name": "n1"}],
            "unavailability": {"start": "2030-01-01T00:00:00Z", "duration": "2h"}}]}),
    )
    .await;
    let s = wait_schedule(&env, "declined", |s| {
        answer(s, "db") == Some(MaintenanceResponse::Declined)
    })
    .await;
    let affected = &s.status.unwrap().instances[0];
    assert!(
        affected.message.contains("db-prepare"),
        "{}",
        affected.message
    );
    let inst = env.instances().get("db").await.unwrap();
    assert_eq!(plan_status(&inst, "maintenance"), Some(S::FatalError));
    assert!(
        inst.status.unwrap().auto_suppression.is_none(),
        "a declined maintenance suppresses nothing"
    );
}
