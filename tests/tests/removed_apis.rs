//! A package written for a 2020 cluster, with one object of each built-in
//! version removed since, deploys on the sandbox (which serves what
//! Kubernetes 1.32 serves): each object is applied as its successor, said
//! on the step and in one Warning Event. A v1 CRD the API server refuses
//! for want of its API approval annotation fails the step.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ListParams;
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, fixture, plan_status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_with_every_removed_version_deploys_as_their_successors() {
    let env = Env::start().await.unwrap();
    env.install(fixture("legacy-op"), "old", &[]).await.unwrap();
    let done = env
        .wait_for(
            "old",
            "deploy COMPLETE or FATAL_ERROR",
            Duration::from_secs(90),
            |i| matches!(plan_status(i, "deploy"), Some(S::Complete | S::FatalError)),
        )
        .await
        .unwrap();
    let deploy = &done.status.as_ref().unwrap().plan_status["deploy"];
    let text = serde_json::to_string_pretty(deploy).unwrap();
    assert_eq!(plan_status(&done, "deploy"), Some(S::Complete), "{text}");

    // Said on the step.
    let app = deploy.phases[0]
        .steps
        .iter()
        .find(|s| s.name == "app")
        .unwrap();
    for expected in [
        "applied policy/v1beta1 PodDisruptionBudget as policy/v1: policy/v1beta1 was removed in Kubernetes 1.25",
        "applied extensions/v1beta1 Deployment as apps/v1",
        "applied batch/v1beta1 CronJob as batch/v1",
        "applied autoscaling/v2beta2 HorizontalPodAutoscaler as autoscaling/v2",
        "applied rbac.authorization.k8s.io/v1beta1 ClusterRoleBinding as rbac.authorization.k8s.io/v1",
        "applied admissionregistration.k8s.io/v1beta1 ValidatingWebhookConfiguration as admissionregistration.k8s.io/v1",
    ] {
        assert!(
            app.message.contains(expected),
            "{expected}\n in {}",
            app.message
        );
    }
    let crd = deploy.phases[0]
        .steps
        .iter()
        .find(|s| s.name == "crd")
        .unwrap();
    assert!(
        crd.message.contains("applied apiextensions.k8s.io/v1beta1 CustomResourceDefinition as apiextensions.k8s.io/v1"),
        "{}",
        crd.message
    );
    // A CRD in a Kubernetes-owned group got the approval annotation v1 asks for.
    let approval = "annotation api-approved.kubernetes.io: \"unapproved, experimental-only\" added: \
                    v1 refuses a CRD in the protected group example.k8s.io";
    assert!(crd.message.contains(approval), "{}", crd.message);
    let snapshots = kube::Api::<CustomResourceDefinition>::all(env.client.clone())
        .get("snapshots.example.k8s.io")
        .await
        .unwrap();
    assert_eq!(
        snapshots
            .metadata
            .annotations
            .unwrap_or_default()
            .get("api-approved.kubernetes.io")
            .map(String::as_str),
        Some("unapproved, experimental-only")
    );

    // The object is there in the successor version, and status names that version.
    let pdb = env.api::<PodDisruptionBudget>().get("old-pdb").await;
    assert!(pdb.is_ok(), "{pdb:?}");
    let applied = &app.tasks[0].objects;
    assert!(
        applied
            .iter()
            .any(|o| o.kind == "PodDisruptionBudget" && o.api_version == "policy/v1"),
        "{applied:?}"
    );

    // One Warning Event per translated object, however often the step ran.
    let events = kube::Api::<Event>::namespaced(env.client.clone(), &env.ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    let translated: Vec<&Event> = events
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ApiVersionTranslated"))
        .collect();
    let about_pdb = translated
        .iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.contains("PodDisruptionBudget"))
        })
        .count();
    assert_eq!(about_pdb, 1, "{translated:#?}");
    assert!(
        translated
            .iter()
            .all(|e| e.type_.as_deref() == Some("Warning"))
    );
    assert!(
        translated.iter().any(|e| e
            .message
            .as_deref()
            .is_some_and(|m| m.contains("snapshots.example.k8s.io") && m.contains(approval))),
        "{translated:#?}"
    );
}

/// The same CRD written for v1 directly, without the annotation: the API
/// server refuses it, and the step says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_crd_in_a_kubernetes_owned_group_without_approval_fails_naming_the_annotation() {
    let env = Env::start().await.unwrap();
    env.install(fixture("protected-crd-op"), "spark", &[])
        .await
        .unwrap();
    let done = env
        .wait_for(
            "spark",
            "deploy FATAL_ERROR",
            Duration::from_secs(60),
            |i| matches!(plan_status(i, "deploy"), Some(S::Complete | S::FatalError)),
        )
        .await
        .unwrap();
    let deploy = &done.status.as_ref().unwrap().plan_status["deploy"];
    let text = serde_json::to_string_pretty(deploy).unwrap();
    assert_eq!(plan_status(&done, "deploy"), Some(S::FatalError), "{text}");
    let step = &deploy.phases[0].steps[0];
    assert_eq!(step.status, Some(S::FatalError), "{text}");
    assert!(
        step.message.contains(
            "sparkapplications.sparkoperator.k8s.io\" is invalid: \
             metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups \
             must have approval annotation \"api-approved.kubernetes.io\""
        ),
        "{}",
        step.message
    );
}
