use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use kudo_sandbox::{FAIL_ANNOTATION, Sandbox};
use serde_json::json;

fn pod_template() -> serde_json::Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

async fn fast() -> (Sandbox, kube::Client) {
    let sb = Sandbox::builder()
        .ready_delay(Duration::from_millis(20))
        .start()
        .await
        .unwrap();
    let client = sb.client().unwrap();
    (sb, client)
}

#[tokio::test]
async fn deployment_becomes_available() {
    let (_sb, client) = fast().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": pod_template()}})).unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let ready = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(api, "web", |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref()).is_some_and(|s| {
                s.available_replicas == Some(2) && s.observed_generation == Some(1)
            })
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(ready.status.unwrap().updated_replicas, Some(2));
}

#[tokio::test]
async fn failing_deployment_reports_progress_deadline() {
    let (_sb, client) = fast().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web", "annotations": {FAIL_ANNOTATION: "true"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": pod_template()}})).unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let stuck = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(api, "web", |d: Option<&Deployment>| {
            d.and_then(|d| d.status.as_ref())
                .is_some_and(|s| s.conditions.is_some())
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let conds = stuck.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_.as_deref() == Some("Progressing")
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
    );
}

#[tokio::test]
async fn statefulset_reports_revisions() {
    let (_sb, client) = fast().await;
    let api: Api<StatefulSet> = Api::default_namespaced(client);
    let s: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"},
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "x"}}, "template": pod_template()}})).unwrap();
    api.create(&PostParams::default(), &s).await.unwrap();
    let ready = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(api, "db", |s: Option<&StatefulSet>| {
            s.and_then(|s| s.status.as_ref())
                .is_some_and(|s| s.ready_replicas == Some(3))
        }),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let st = ready.status.unwrap();
    assert_eq!(st.current_revision, st.update_revision);
    assert!(st.current_revision.unwrap().starts_with("db-"));
}

#[tokio::test]
async fn jobs_complete_or_fail_on_request() {
    let (_sb, client) = fast().await;
    let api: Api<Job> = Api::default_namespaced(client);
    for (name, fail) in [("ok", false), ("bad", true)] {
        let mut j = json!({"metadata": {"name": name}, "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        if fail {
            j["metadata"]["annotations"] = json!({FAIL_ANNOTATION: "true"});
        }
        api.create(&PostParams::default(), &serde_json::from_value(j).unwrap())
            .await
            .unwrap();
    }
    let finished = |want: &'static str| {
        move |j: Option<&Job>| {
            j.and_then(|j| j.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == want && c.status == "True"))
        }
    };
    tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(api.clone(), "ok", finished("Complete")),
    )
    .await
    .unwrap()
    .unwrap();
    tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(api, "bad", finished("Failed")),
    )
    .await
    .unwrap()
    .unwrap();
}

#[tokio::test]
async fn a_jobs_pod_template_and_a_workloads_selector_are_immutable() {
    let (_sb, client) = fast().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = |image: &str| -> Job {
        serde_json::from_value(
            json!({"metadata": {"name": "once"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}}}}),
        )
        .unwrap()
    };
    let apply = kube::api::PatchParams::apply("t").force();
    jobs.patch("once", &apply, &kube::api::Patch::Apply(job("busybox")))
        .await
        .unwrap();
    // The same template again, and a label on the Job itself, are fine.
    jobs.patch("once", &apply, &kube::api::Patch::Apply(job("busybox")))
        .await
        .unwrap();
    let err = jobs
        .patch("once", &apply, &kube::api::Patch::Apply(job("busybox:2")))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 422);
    assert!(s.message.contains("field is immutable"), "{}", s.message);

    let sets: Api<StatefulSet> = Api::default_namespaced(client);
    let set = |app: &str| -> StatefulSet {
        serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {
            "serviceName": "s", "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
        .unwrap()
    };
    sets.patch("s", &apply, &kube::api::Patch::Apply(set("a")))
        .await
        .unwrap();
    let err = sets
        .patch("s", &apply, &kube::api::Patch::Apply(set("b")))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "{err:?}"
    );
}
