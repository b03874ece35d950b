//! Simulated pods: StatefulSet pods and claims, Deployments through
//! ReplicaSets, and the switch that turns them off.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kudo_sandbox::{FAIL_ANNOTATION, Sandbox};
use serde_json::{Value, json};

/// A sandbox whose pods start after 20 ms.
pub async fn fast() -> (Sandbox, kube::Client) {
    let sb = Sandbox::builder()
        .ready_delay(Duration::from_millis(20))
        .start()
        .await
        .unwrap();
    let client = sb.client().unwrap();
    (sb, client)
}

/// Polls `f` until it gives a value (10 s at most).
pub async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn ready(p: &Pod) -> bool {
    let st = p.status.as_ref();
    st.and_then(|s| s.phase.as_deref()) == Some("Running")
        && st
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn uid<K: kube::Resource>(o: &K) -> String {
    o.meta().uid.clone().unwrap()
}

/// A StatefulSet `name` of `replicas` pods labelled app=`name`, with a
/// `data` claim template; `extra` is merged into its spec.
pub fn statefulset(name: &str, replicas: i32, extra: Value) -> StatefulSet {
    let mut v = json!({"metadata": {"name": name},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}, "annotations": {"note": "kept"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"disk": "yes"}},
                     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}});
    if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(v).unwrap()
}

/// Waits until pods `<name>-0..n` are Running and Ready; returns them.
pub async fn ready_pods(pods: &Api<Pod>, name: &str, n: usize) -> Vec<Pod> {
    eventually(&format!("{n} ready pods of {name}"), async || {
        let mut out = Vec::new();
        for i in 0..n {
            match pods.get_opt(&format!("{name}-{i}")).await.unwrap() {
                Some(p) if ready(&p) && p.metadata.deletion_timestamp.is_none() => out.push(p),
                _ => return None,
            }
        }
        Some(out)
    })
    .await
}

#[tokio::test]
async fn statefulset_pods_and_claims_appear() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let set = sets
        .create(&PostParams::default(), &statefulset("db", 3, json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client);
    for (i, pod) in ready_pods(&pods, "db", 3).await.iter().enumerate() {
        let name = format!("db-{i}");
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels["app"], "db");
        assert_eq!(pod.metadata.annotations.clone().unwrap()["note"], "kept");
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.api_version.as_str(),
                owner.uid.as_str()
            ),
            ("StatefulSet", "apps/v1", uid(&set).as_str())
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some(name.as_str()));
        assert_eq!(spec.node_name, None, "no Node objects: no node");
        let claim_name = format!("data-{name}");
        let volume = &spec.volumes.as_ref().unwrap()[0];
        assert_eq!(volume.name, "data");
        assert_eq!(
            volume.persistent_volume_claim.as_ref().unwrap().claim_name,
            claim_name
        );
        let status = pod.status.as_ref().unwrap();
        assert!(status.container_statuses.as_ref().unwrap()[0].ready);
        let claim = claims.get(&claim_name).await.unwrap();
        assert_eq!(claim.metadata.labels.unwrap()["disk"], "yes");
        assert_eq!(claim.metadata.owner_references, None, "claims are kept");
        assert_eq!(claim.status.unwrap().phase.as_deref(), Some("Bound"));
    }
}

#[tokio::test]
async fn a_deleted_pod_comes_back_with_a_new_uid() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &statefulset("db", 2, json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client);
    let before = ready_pods(&pods, "db", 2).await;
    let claim_before = uid(&claims.get("data-db-1").await.unwrap());
    pods.delete("db-1", &DeleteParams::default()).await.unwrap();
    let after = ready_pods(&pods, "db", 2).await;
    assert_ne!(uid(&after[1]), uid(&before[1]), "db-1 was made anew");
    assert_eq!(uid(&after[0]), uid(&before[0]), "db-0 was left alone");
    assert_eq!(uid(&claims.get("data-db-1").await.unwrap()), claim_before);
}

#[tokio::test]
async fn a_deleted_pod_terminates_first_unless_forced() {
    let sb = Sandbox::builder()
        .ready_delay(Duration::from_millis(1000))
        .start()
        .await
        .unwrap();
    let client = sb.client().unwrap();
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &statefulset("db", 1, json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client);
    let first = uid(&ready_pods(&pods, "db", 1).await[0]);
    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    let terminating = pods.get("db-0").await.unwrap();
    assert_eq!(uid(&terminating), first);
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    let second = uid(&ready_pods(&pods, "db", 1).await[0]);
    assert_ne!(second, first);
    let force = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("db-0", &force).await.unwrap();
    let after = pods.get_opt("db-0").await.unwrap();
    assert!(after.is_none_or(|p| uid(&p) != second), "gone at once");
}

#[tokio::test]
async fn a_deleted_claim_and_pod_come_back_with_new_uids() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &statefulset("db", 1, json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client);
    let pod_before = uid(&ready_pods(&pods, "db", 1).await[0]);
    let claim_before = uid(&claims.get("data-db-0").await.unwrap());
    // The replace order: the claim first. It stays, Terminating, while the
    // pod mounts it (PVC protection), as on a real cluster.
    claims
        .delete("data-db-0", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let held = claims.get("data-db-0").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(uid(&held), claim_before);
    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    let pod_after = ready_pods(&pods, "db", 1).await;
    assert_ne!(uid(&pod_after[0]), pod_before);
    let claim_after = claims.get("data-db-0").await.unwrap();
    assert_ne!(uid(&claim_after), claim_before);
    assert!(claim_after.metadata.deletion_timestamp.is_none());
}

#[tokio::test]
async fn scale_down_removes_the_highest_ordinals_and_keeps_claims() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let parallel = json!({"podManagementPolicy": "Parallel"});
    sets.create(&PostParams::default(), &statefulset("db", 3, parallel))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    ready_pods(&pods, "db", 3).await;
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let names = eventually("one pod left", async || {
        let list = pods
            .list(&ListParams::default().labels("app=db"))
            .await
            .unwrap();
        let names: Vec<String> = list
            .items
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        (names.len() == 1).then_some(names)
    })
    .await;
    assert_eq!(names, ["db-0"]);
    let claims: Api<PersistentVolumeClaim> = Api::default_namespaced(client);
    assert_eq!(
        claims
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );
}

#[tokio::test]
async fn a_failing_statefulset_runs_pods_that_are_not_ready_until_it_recovers() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let mut set = statefulset("db", 2, json!({"podManagementPolicy": "Parallel"}));
    set.metadata.annotations = Some([(FAIL_ANNOTATION.to_string(), "true".to_string())].into());
    sets.create(&PostParams::default(), &set).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client);
    for i in 0..2 {
        let name = format!("db-{i}");
        let pod = eventually("a running pod", async || {
            pods.get_opt(&name)
                .await
                .unwrap()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        })
        .await;
        assert!(!ready(&pod), "{name} must not be Ready");
    }
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {FAIL_ANNOTATION: null}}})),
    )
    .await
    .unwrap();
    ready_pods(&pods, "db", 2).await;
}

#[tokio::test]
async fn ordered_ready_starts_the_next_pod_only_when_the_previous_is_ready() {
    let (_sb, client) = fast().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client);
    // Every pod change from before the set exists, in the order the store made them.
    let from = pods
        .list_metadata(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = pods
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let mut set = statefulset("db", 3, json!({}));
    set.metadata.annotations = Some([(FAIL_ANNOTATION.to_string(), "true".to_string())].into());
    sets.create(&PostParams::default(), &set).await.unwrap();
    // db-0 runs, not Ready while the set fails; then the set recovers and
    // db-0 becomes Ready. db-1 may only appear after that, on the same watch.
    let (mut recovered, mut db0_ready) = (false, false);
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = events.try_next().await.unwrap() {
            let pod = match event {
                WatchEvent::Added(p) | WatchEvent::Modified(p) => p,
                WatchEvent::Error(e) => panic!("watch failed: {e:?}"),
                _ => continue,
            };
            match pod.metadata.name.as_deref() {
                Some("db-0") => {
                    db0_ready = ready(&pod);
                    let running =
                        pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                    if running && !db0_ready && !recovered {
                        recovered = true;
                        sets.patch(
                            "db",
                            &PatchParams::default(),
                            &Patch::Merge(
                                json!({"metadata": {"annotations": {FAIL_ANNOTATION: null}}}),
                            ),
                        )
                        .await
                        .unwrap();
                    }
                }
                Some("db-1") => {
                    assert!(db0_ready, "db-1 was created while db-0 was not Ready");
                    return;
                }
                _ => {}
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("db-1 never appeared");
    assert!(recovered, "db-0 was never Running and not Ready");
}

fn rs_of(p: &Pod) -> String {
    p.metadata.owner_references.as_ref().unwrap()[0]
        .name
        .clone()
}

#[tokio::test]
async fn deployment_pods_come_from_one_replicaset_per_template() {
    let (_sb, client) = fast().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}))
    .unwrap();
    let d = deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let sets: Api<ReplicaSet> = Api::default_namespaced(client);
    let ready_web = async |image: &str| {
        eventually(&format!("2 ready {image} pods"), async || {
            let list = pods
                .list(&ListParams::default().labels("app=web"))
                .await
                .unwrap();
            let all = list.items.iter().all(|p| {
                ready(p) && p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some(image)
            });
            (all && list.items.len() == 2).then_some(list.items)
        })
        .await
    };
    let first = ready_web("nginx:1").await;
    let rs_name = rs_of(&first[0]);
    assert_eq!(rs_of(&first[1]), rs_name);
    let rs = sets.get(&rs_name).await.unwrap();
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs_name, format!("web-{hash}"));
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Deployment", uid(&d).as_str())
    );
    for p in &first {
        let name = p.metadata.name.as_deref().unwrap();
        let suffix = name.strip_prefix(&format!("{rs_name}-")).unwrap();
        assert_eq!(suffix.len(), 5, "{name}");
        assert_eq!(
            p.metadata.labels.as_ref().unwrap()["pod-template-hash"],
            hash
        );
    }
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "nginx:2"}]}}}})),
        )
        .await
        .unwrap();
    let second = ready_web("nginx:2").await;
    assert_ne!(rs_of(&second[0]), rs_name);
    let old = sets.get(&rs_name).await.unwrap();
    assert_eq!(old.spec.replicas, Some(0));
    let new = sets.get(&rs_of(&second[0])).await.unwrap();
    assert_eq!(
        new.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "2"
    );
}

#[tokio::test]
async fn pods_can_be_turned_off() {
    let sb = Sandbox::builder()
        .ready_delay(Duration::from_millis(20))
        .simulate_pods(false)
        .start()
        .await
        .unwrap();
    let client = sb.client().unwrap();
    let sets: Api<StatefulSet> = Api::default_namespaced(client.clone());
    sets.create(&PostParams::default(), &statefulset("db", 2, json!({})))
        .await
        .unwrap();
    eventually("simulated status", async || {
        let s = sets.get("db").await.unwrap();
        (s.status?.ready_replicas == Some(2)).then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    assert!(
        pods.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
