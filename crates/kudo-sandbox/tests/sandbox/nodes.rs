//! Node maintenance: scheduling onto Nodes, taints and cordons, evictions
//! checked against PodDisruptionBudgets (through kube-rs and kubectl).

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams, PostParams};
use kudo_sandbox::Sandbox;
use serde_json::json;

use crate::pods::{eventually, fast, ready, ready_pods, statefulset, uid};

async fn node(client: &kube::Client, name: &str, spec: serde_json::Value) {
    let n: Node =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &n)
        .await
        .unwrap();
}

fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .unwrap()
        .node_name
        .clone()
        .unwrap_or_default()
}

fn parallel(name: &str, replicas: i32) -> StatefulSet {
    statefulset(name, replicas, json!({"podManagementPolicy": "Parallel"}))
}

#[tokio::test]
async fn scheduling_avoids_unschedulable_and_tainted_nodes_and_prefers_untainted() {
    let (_sb, client) = fast().await;
    node(&client, "cordoned", json!({"unschedulable": true})).await;
    let taint = json!({"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]});
    node(&client, "tainted", taint).await;
    let prefer = json!({"taints": [{"key": "old", "effect": "PreferNoSchedule"}]});
    node(&client, "preferred-not", prefer).await;
    node(&client, "clean", json!({})).await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &parallel("db", 2))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let placed = ready_pods(&pods, "db", 2).await;
    assert_eq!(
        placed.iter().map(node_of).collect::<Vec<_>>(),
        ["clean", "clean"]
    );
    let scheduled = placed[0]
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap();
    assert!(
        scheduled
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );

    // Cordon the clean node: a new pod goes to the only node left.
    Api::<Node>::all(client.clone())
        .patch(
            "clean",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    pods.delete("db-1", &DeleteParams::default()).await.unwrap();
    let moved = eventually("db-1 on another node", async || {
        pods.get_opt("db-1")
            .await
            .unwrap()
            .filter(|p| ready(p) && node_of(p) != "clean")
    })
    .await;
    assert_eq!(node_of(&moved), "preferred-not");
}

#[tokio::test]
async fn without_a_schedulable_node_pods_stay_pending_until_one_appears() {
    let (_sb, client) = fast().await;
    node(&client, "only", json!({"unschedulable": true})).await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &parallel("db", 1))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pending = eventually("an unschedulable pod", async || {
        let p = pods.get_opt("db-0").await.unwrap()?;
        let conds = p.status.as_ref()?.conditions.clone()?;
        conds
            .into_iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    })
    .await;
    assert_eq!(pending.reason.as_deref(), Some("Unschedulable"));
    assert!(
        pending
            .message
            .as_deref()
            .unwrap()
            .starts_with("0/1 nodes are available: 1 node(s) were unschedulable."),
        "{pending:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let p = pods.get("db-0").await.unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    Api::<Node>::all(client.clone())
        .patch(
            "only",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": null}})),
        )
        .await
        .unwrap();
    let running = ready_pods(&pods, "db", 1).await;
    assert_eq!(node_of(&running[0]), "only");
}

#[tokio::test]
async fn a_no_execute_taint_moves_pods_that_do_not_tolerate_it() {
    let (_sb, client) = fast().await;
    node(&client, "a", json!({})).await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &parallel("db", 1))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let before = ready_pods(&pods, "db", 1).await.remove(0);
    node(&client, "b", json!({})).await;
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}});
    Api::<Node>::all(client.clone())
        .patch("a", &PatchParams::default(), &Patch::Merge(taint))
        .await
        .unwrap();
    let after = eventually("db-0 on b", async || {
        pods.get_opt("db-0")
            .await
            .unwrap()
            .filter(|p| ready(p) && node_of(p) == "b")
    })
    .await;
    assert_ne!(uid(&after), uid(&before));
}

/// A client that reports 429 at once (kube's default retries it for seconds).
fn no_retry_client(sb: &Sandbox) -> kube::Client {
    let mut config = sb.kube_config().unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

async fn budget(client: &kube::Client, spec: serde_json::Value) -> Api<PodDisruptionBudget> {
    let api: Api<PodDisruptionBudget> = Api::default_namespaced(client.clone());
    let pdb =
        serde_json::from_value(json!({"metadata": {"name": "db-budget"}, "spec": spec})).unwrap();
    api.create(&PostParams::default(), &pdb).await.unwrap();
    api
}

#[tokio::test]
async fn eviction_blocked_by_a_budget_is_429_naming_it_and_succeeds_once_it_allows() {
    let sb = Sandbox::builder()
        .ready_delay(Duration::from_millis(1000))
        .start()
        .await
        .unwrap();
    let client = no_retry_client(&sb);
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &parallel("db", 3))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let before = ready_pods(&pods, "db", 3).await;
    let pdbs = budget(
        &client,
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}),
    )
    .await;
    let status = eventually("budget status", async || {
        let s = pdbs.get("db-budget").await.unwrap().status?;
        (s.disruptions_allowed == Some(1)).then_some(s)
    })
    .await;
    assert_eq!(
        (
            status.current_healthy,
            status.desired_healthy,
            status.expected_pods
        ),
        (Some(3), Some(2), Some(3))
    );

    let ok = pods.evict("db-0", &EvictParams::default()).await.unwrap();
    assert_eq!(
        ok.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    // Terminating for the kubelet's delay, as a real pod for its grace period.
    let evicted = pods.get("db-0").await.unwrap();
    assert_eq!(uid(&evicted), uid(&before[0]));
    assert!(evicted.metadata.deletion_timestamp.is_some());

    // db-0 is not back (Ready) yet: the budget allows nothing.
    let refused = pods
        .evict("db-1", &EvictParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(s) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(
        s.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &s.details.as_ref().unwrap().causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    assert_eq!(
        cause.message,
        "The disruption budget db-budget needs 2 healthy pods and has 2 currently"
    );
    assert!(pods.get_opt("db-1").await.unwrap().is_some());

    ready_pods(&pods, "db", 3).await;
    eventually("db-1 evicted", async || {
        pods.evict("db-1", &EvictParams::default()).await.ok()
    })
    .await;
    let missing = pods
        .evict("nope", &EvictParams::default())
        .await
        .unwrap_err();
    assert_eq!(crate::code(&missing), 404);
}

#[tokio::test]
async fn min_available_percentages_count_against_the_controllers_scale() {
    let (sb, _) = fast().await;
    let client = no_retry_client(&sb);
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &parallel("db", 2))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    ready_pods(&pods, "db", 2).await;
    let pdbs = budget(
        &client,
        json!({"minAvailable": "100%", "selector": {"matchLabels": {"app": "db"}}}),
    )
    .await;
    eventually("budget status", async || {
        let s = pdbs.get("db-budget").await.unwrap().status?;
        (s.desired_healthy == Some(2) && s.current_healthy == Some(2)).then_some(s)
    })
    .await;
    let refused = pods
        .evict("db-0", &EvictParams::default())
        .await
        .unwrap_err();
    assert_eq!(crate::code(&refused), 429);
    pdbs.patch(
        "db-budget",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"minAvailable": "50%"}})),
    )
    .await
    .unwrap();
    pods.evict("db-0", &EvictParams::default()).await.unwrap();
}

#[tokio::test]
async fn impersonated_callers_need_create_on_pods_eviction() {
    let (sb, admin) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(admin.clone());
    sets.create(&PostParams::default(), &parallel("db", 1))
        .await
        .unwrap();
    ready_pods(&Api::default_namespaced(admin.clone()), "db", 1).await;
    let mut config = sb.kube_config().unwrap();
    config.auth_info.impersonate = Some("system:serviceaccount:default:drainer".into());
    let drainer = kube::Client::try_from(config).unwrap();
    let pods: Api<Pod> = Api::default_namespaced(drainer);
    let refused = pods
        .evict("db-0", &EvictParams::default())
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &refused else {
        panic!("{refused:?}")
    };
    assert_eq!(s.code, 403);
    assert!(
        s.message
            .contains("cannot create resource \"pods/eviction\""),
        "{}",
        s.message
    );
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    Api::<Role>::default_namespaced(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "evict"},
            "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    Api::<RoleBinding>::default_namespaced(admin)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "evict"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "evict"},
            "subjects": [{"kind": "ServiceAccount", "name": "drainer", "namespace": "default"}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    pods.evict("db-0", &EvictParams::default()).await.unwrap();
}
