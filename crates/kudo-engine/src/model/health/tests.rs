use serde_json::json;

use super::*;

fn progressing(h: &Health) -> &str {
    match h {
        Health::Progressing(m) => m,
        other => panic!("expected Progressing, got {other:?}"),
    }
}

#[test]
fn configmap_is_healthy_immediately() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    assert_eq!(evaluate(&cm), Health::Healthy);
}

#[test]
fn crd_waits_for_established() {
    let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"}, "status": {"conditions": [{"type": "Established", "status": "False"}]}});
    assert!(
        progressing(&evaluate(&crd)).starts_with("CustomResourceDefinition foos.example.com: ")
    );
    crd["status"]["conditions"][0]["status"] = json!("True");
    assert_eq!(evaluate(&crd), Health::Healthy);
}

#[test]
fn deployment_waits_for_available_replicas() {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 2},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1}});
    assert_eq!(
        progressing(&evaluate(&d)),
        "Deployment default/web: 1 of 2 updated replicas available"
    );
    d["status"]["availableReplicas"] = json!(2);
    assert_eq!(evaluate(&d), Health::Healthy);
}

#[test]
fn deployment_with_unobserved_generation_is_progressing() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 3},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}});
    assert!(progressing(&evaluate(&d)).contains("generation 3"));
}

#[test]
fn deployment_without_status_is_progressing() {
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 1}, "spec": {"replicas": 1}});
    assert!(matches!(evaluate(&d), Health::Progressing(_)));
}

#[test]
fn rolling_statefulset_needs_matching_revisions() {
    let mut s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "zk", "namespace": "default", "generation": 1},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1,
                   "currentRevision": "zk-1", "updateRevision": "zk-2"}});
    assert!(progressing(&evaluate(&s)).contains("new revision"));
    s["status"]["currentRevision"] = json!("zk-2");
    assert_eq!(evaluate(&s), Health::Healthy);
}

#[test]
fn ondelete_statefulset_is_healthy_when_ready() {
    let s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "zk", "namespace": "default", "generation": 1},
        "spec": {"replicas": 3, "updateStrategy": {"type": "OnDelete"}},
        "status": {"observedGeneration": 1, "readyReplicas": 3, "currentRevision": "a", "updateRevision": "b"}});
    assert_eq!(evaluate(&s), Health::Healthy);
}

#[test]
fn statefulset_with_partition_counts_only_pods_above_it() {
    let s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "zk", "namespace": "default", "generation": 1},
        "spec": {"replicas": 3, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}},
        "status": {"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1,
                   "currentRevision": "a", "updateRevision": "b"}});
    assert_eq!(evaluate(&s), Health::Healthy);
}

#[test]
fn statefulset_not_ready_is_progressing() {
    let s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "zk", "namespace": "default", "generation": 1},
        "spec": {"replicas": 3}, "status": {"observedGeneration": 1, "readyReplicas": 1}});
    assert_eq!(
        progressing(&evaluate(&s)),
        "StatefulSet default/zk: 1 of 3 replicas ready"
    );
}

#[test]
fn daemonset_waits_for_available_pods() {
    let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system", "generation": 1},
        "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 2}});
    assert!(progressing(&evaluate(&ds)).contains("2 of 3 pods available"));
    ds["status"]["numberAvailable"] = json!(3);
    assert_eq!(evaluate(&ds), Health::Healthy);
}

#[test]
fn job_with_several_completions_needs_all_of_them() {
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "init", "namespace": "default"},
        "spec": {"completions": 3}, "status": {"succeeded": 1}});
    assert!(progressing(&evaluate(&j)).contains("1 of 3"));
    j["status"]["succeeded"] = json!(3);
    assert_eq!(evaluate(&j), Health::Healthy);
}

#[test]
fn failed_job_is_failed_with_its_message() {
    let j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "init", "namespace": "default"},
        "status": {"conditions": [{"type": "Failed", "status": "True", "message": "Job has reached the specified backoff limit"}]}});
    assert_eq!(
        evaluate(&j),
        Health::Failed(
            "Job default/init: Job failed: Job has reached the specified backoff limit".into()
        )
    );
}

#[test]
fn child_instance_is_healthy_when_its_plan_completes() {
    let mut i = json!({"apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "child", "namespace": "default", "generation": 1},
        "status": {"observedGeneration": 1, "activePlan": {"name": "deploy", "status": "IN_PROGRESS"}}});
    assert!(progressing(&evaluate(&i)).contains("deploy is IN_PROGRESS"));
    i["status"]["activePlan"]["status"] = json!("COMPLETE");
    assert_eq!(evaluate(&i), Health::Healthy);
    i["status"]["activePlan"]["status"] = json!("FATAL_ERROR");
    assert!(matches!(evaluate(&i), Health::Failed(m) if m.contains("plan deploy failed")));
}

#[test]
fn child_instance_with_stale_generation_is_progressing() {
    let i = json!({"apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "child", "namespace": "default", "generation": 2},
        "status": {"observedGeneration": 1, "activePlan": {"name": "deploy", "status": "COMPLETE"}}});
    assert!(matches!(evaluate(&i), Health::Progressing(_)));
}

#[test]
fn pod_needs_running_and_ready() {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}});
    assert!(matches!(evaluate(&p), Health::Progressing(_)));
    p["status"]["conditions"][0]["status"] = json!("True");
    assert_eq!(evaluate(&p), Health::Healthy);
    p["status"]["phase"] = json!("Failed");
    assert!(matches!(evaluate(&p), Health::Failed(_)));
}

#[test]
fn terminating_namespace_is_progressing() {
    let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "status": {"phase": "Terminating"}});
    assert!(matches!(evaluate(&ns), Health::Progressing(_)));
    ns["status"]["phase"] = json!("Active");
    assert_eq!(evaluate(&ns), Health::Healthy);
}

#[test]
fn service_rules_follow_its_type() {
    let ext = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ExternalName"}});
    assert_eq!(evaluate(&ext), Health::Healthy);
    let mut cip =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}});
    assert!(matches!(evaluate(&cip), Health::Progressing(_)));
    cip["spec"]["clusterIP"] = json!("10.0.0.1");
    assert_eq!(evaluate(&cip), Health::Healthy);
    let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}});
    assert!(progressing(&evaluate(&lb)).contains("load balancer"));
}

#[test]
fn custom_resource_follows_its_readiness_rule() {
    let mut cr = json!({"apiVersion": "example.com/v1", "kind": "Db",
        "metadata": {"name": "db", "namespace": "default",
            "annotations": {"kudo.dev/health": "status.phase=Ready; condition=Synced; failed: status.phase=Broken"}},
        "status": {"phase": "Pending"}});
    let msg = progressing(&evaluate(&cr)).to_string();
    assert!(
        msg.contains("status.phase=Ready") && msg.contains("condition=Synced"),
        "{msg}"
    );
    cr["status"] = json!({"phase": "Ready", "conditions": [{"type": "Synced", "status": "True"}]});
    assert_eq!(evaluate(&cr), Health::Healthy);
    cr["status"]["phase"] = json!("Broken");
    assert!(matches!(evaluate(&cr), Health::Failed(_)));
}

#[test]
fn malformed_readiness_rule_fails_with_a_clear_message() {
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Db",
        "metadata": {"name": "db", "annotations": {"kudo.dev/health": "ready"}}});
    assert!(matches!(evaluate(&cr), Health::Failed(m) if m.contains("not of the form")));
}

#[test]
fn custom_resource_without_rule_is_healthy() {
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Db", "metadata": {"name": "db"}});
    assert_eq!(evaluate(&cr), Health::Healthy);
}

#[test]
fn only_kinds_with_a_rule_or_a_custom_rule_need_the_stored_object() {
    let object = |api_version: &str, kind: &str| json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a"}});
    for (api_version, kind) in [
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("v1", "Service"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("kudo.dev/v1beta1", "Instance"),
    ] {
        assert!(
            depends_on_stored_object(&object(api_version, kind)),
            "{kind}"
        );
    }
    let mut cm = object("v1", "ConfigMap");
    assert!(!depends_on_stored_object(&cm));
    assert!(!depends_on_stored_object(&object(
        "example.com/v1",
        "Widget"
    )));
    cm["metadata"]["annotations"] =
        json!({kudo_api::names::HEALTH_ANNOTATION: "{.status.ready} == true"});
    assert!(depends_on_stored_object(&cm));
}

#[test]
fn whatever_does_not_need_the_stored_object_is_healthy_whatever_it_holds() {
    // The apply path skips reading such objects back: their health must not
    // depend on anything the server could add.
    for (api_version, kind) in [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("example.com/v1", "Widget"),
    ] {
        let stored = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "a", "generation": 3},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "phase": "Failed"}});
        assert!(!depends_on_stored_object(&stored));
        assert_eq!(evaluate(&stored), Health::Healthy, "{kind}");
    }
}
