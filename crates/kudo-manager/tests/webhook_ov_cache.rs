//! The webhook reads OperatorVersions from its watch-fed cache: a review
//! of an Instance whose OperatorVersion is cached makes no API request
//! (counted in the sandbox's request log), and one the cache does not have
//! yet is read live, so a just-created OperatorVersion is still seen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kube::Api;
use kube::api::PostParams;
use kube::runtime::reflector;
use kudo_api::OperatorVersion;
use kudo_manager::webhook::{CachedOperatorVersions, Reviewer};
use kudo_sandbox::Sandbox;
use serde_json::Value;
use support::admission::{fixture, operator_version_list};

async fn sandbox_with_operator_versions() -> Sandbox {
    let sandbox = Sandbox::builder()
        .request_log(10_000)
        .start()
        .await
        .unwrap();
    let client = sandbox.client().unwrap();
    kudo_manager::install::install_crds(&client).await.unwrap();
    let api: Api<OperatorVersion> = Api::namespaced(client, "default");
    for mut ov in operator_version_list() {
        ov.metadata.resource_version = None;
        api.create(&PostParams::default(), &ov).await.unwrap();
    }
    sandbox
}

async fn allowed(reviewer: &Reviewer<CachedOperatorVersions>, body: &[u8]) -> bool {
    let answer: Value = serde_json::from_slice(&reviewer.review_to_json(body).await).unwrap();
    answer["response"]["allowed"] == Value::Bool(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_of_cached_operator_versions_make_no_api_request() {
    let sandbox = sandbox_with_operator_versions().await;
    let source = CachedOperatorVersions::start(sandbox.client().unwrap());
    let reviewer = Reviewer::new(source, Duration::from_secs(3));
    let body = fixture("allow/create-valid.json");
    // The first review may come before the watch listed (a live read).
    for _ in 0..100 {
        if allowed(&reviewer, &body).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let from = sandbox.next_request_seq();
    for _ in 0..50 {
        assert!(allowed(&reviewer, &body).await);
    }
    // An upgrade reads two OperatorVersions, both cached.
    let upgrade = fixture("allow/upgrade-idle-instance.json");
    for _ in 0..10 {
        assert!(allowed(&reviewer, &upgrade).await);
    }
    let made: Vec<_> = sandbox
        .requests_since(from)
        .into_iter()
        .filter(|r| r.path.contains("operatorversions"))
        .collect();
    assert!(made.is_empty(), "reviews asked the API server: {made:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_version_missing_from_the_cache_is_read_live() {
    let sandbox = sandbox_with_operator_versions().await;
    // A cache that has not seen anything yet.
    let (empty, _writer) = reflector::store::<OperatorVersion>();
    let source = CachedOperatorVersions::with_store(empty, sandbox.client().unwrap());
    let reviewer = Reviewer::new(source, Duration::from_secs(3));
    let from = sandbox.next_request_seq();
    assert!(allowed(&reviewer, &fixture("allow/create-valid.json")).await);
    let reads = sandbox
        .requests_since(from)
        .into_iter()
        .filter(|r| r.path.contains("operatorversions"))
        .count();
    assert_eq!(reads, 1, "one live read on a miss");

    // A failed live read is an error answer, never an allow.
    sandbox.stop().await;
    let answer: Value = serde_json::from_slice(
        &reviewer
            .review_to_json(&fixture("allow/create-valid.json"))
            .await,
    )
    .unwrap();
    assert_eq!(answer["response"]["allowed"], Value::Bool(false));
    assert_eq!(answer["response"]["status"]["code"], 500, "{answer}");
}

/// An update of the idle fixture Instance `zk` that only adds a
/// `restartPod` operation for `pod`.
fn restart_pod_review(pod: &str) -> Vec<u8> {
    let mut review: Value =
        serde_json::from_slice(&fixture("allow/update-param-on-idle-instance.json")).unwrap();
    let request = &mut review["request"];
    request["object"]["spec"] = request["oldObject"]["spec"].clone();
    request["object"]["spec"]["planOperations"] = serde_json::json!([{
        "id": "op-1", "action": "restartPod", "pod": pod, "podUid": "u-1",
        "requestedBy": "alice"
    }]);
    serde_json::to_vec(&review).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_operation_must_name_a_pod_of_the_instance_and_a_refusal_does_not_say_whose_it_is() {
    use k8s_openapi::api::core::v1::Pod;
    let sandbox = sandbox_with_operator_versions().await;
    let pods: Api<Pod> = Api::namespaced(sandbox.client().unwrap(), "default");
    for (name, instance) in [
        ("zk-0", Some("zk")),
        ("kafka-0", Some("kafka")),
        ("stranger", None),
    ] {
        let labels = instance.map(|i| serde_json::json!({"kudo.dev/instance": i}));
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let reviewer = Reviewer::new(
        CachedOperatorVersions::start(sandbox.client().unwrap()),
        Duration::from_secs(3),
    );
    let answer = |pod: &'static str| {
        let reviewer = reviewer.clone();
        async move {
            let json = reviewer.review_to_json(&restart_pod_review(pod)).await;
            serde_json::from_slice::<Value>(&json).unwrap()["response"].clone()
        }
    };
    assert_eq!(answer("zk-0").await["allowed"], Value::Bool(true));
    // A pod of another Instance, one of none and a missing one get one
    // refusal, naming neither the owner nor whether the pod exists.
    let mut refusals = Vec::new();
    for pod in ["kafka-0", "stranger", "nope"] {
        let refused = answer(pod).await;
        assert_eq!(refused["allowed"], Value::Bool(false), "{pod}: {refused}");
        assert_eq!(refused["status"]["code"], 403, "{pod}: {refused}");
        let message = refused["status"]["message"].as_str().unwrap();
        refusals.push(message.replace(pod, "POD"));
    }
    assert_eq!(
        refusals,
        ["pod POD in namespace default is not a pod of Instance zk"; 3]
    );
}
