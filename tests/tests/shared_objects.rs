//! Cluster-scoped objects several Instances use. A CRD that Instances in
//! two namespaces apply survives the uninstall of one (and the other's
//! custom resources with it); CRDs are kept unless deletion is asked for;
//! a CRD kudo-rs did not create is used as it is and never deleted; a step
//! that applies a CRD and an object of its kind waits, without blocking,
//! until the CRD is Established.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::runtime::wait::await_condition;
use kudo_api::{ExecutionStatus as S, Instance};
use kudo_e2e::{Env, fixture, plan_status, step_status};
use kudo_manager::install::{InstanceRequest, install_package};
use serde_json::json;

const T: Duration = Duration::from_secs(60);
const CRD: &str = "gadgets.example.io";

async fn namespace(env: &Env, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let _ = Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await;
    // The package applies a CRD: its Instances' account needs that right.
    env.grant_everything(name).await.unwrap();
}

/// Installs gadget-op as `app` in `ns` and waits for deploy to complete.
async fn deployed(env: &Env, ns: &str, params: &[(&str, &str)]) -> Instance {
    let parameters: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    install_package(
        &env.client,
        &fixture("gadget-op"),
        ns,
        Some(InstanceRequest {
            name: Some("app".into()),
            parameters,
        }),
    )
    .await
    .unwrap();
    let api: Api<Instance> = Api::namespaced(env.client.clone(), ns);
    tokio::time::timeout(
        T,
        await_condition(api, "app", |i: Option<&Instance>| {
            i.is_some_and(|i| plan_status(i, "deploy") == Some(S::Complete))
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("deploy of {ns}/app did not complete"))
    .unwrap()
    .unwrap()
}

/// Uninstalls `ns`/app as a tenant of `ns` would (a Role on Instances there
/// and nothing cluster-scoped).
async fn uninstall(env: &Env, ns: &str, delete_crds: bool) {
    let tenant = env.tenant(ns, &format!("owner-of-{ns}")).await.unwrap();
    let api: Api<Instance> = Api::namespaced(tenant, ns);
    if delete_crds {
        let patch = json!({"metadata": {"annotations": {"kudo.dev/delete-crds": "true"}}});
        api.patch("app", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    api.delete("app", &DeleteParams::background())
        .await
        .unwrap();
    tokio::time::timeout(
        T,
        await_condition(api, "app", |i: Option<&Instance>| i.is_none()),
    )
    .await
    .unwrap_or_else(|_| panic!("{ns}/app was not removed"))
    .unwrap();
}

fn gadgets(env: &Env, ns: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "example.io".into(),
        version: "v1".into(),
        api_version: "example.io/v1".into(),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    };
    Api::namespaced_with(env.client.clone(), ns, &resource)
}

async fn crd(env: &Env) -> Option<CustomResourceDefinition> {
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .get_opt(CRD)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_two_namespaces_use_survives_one_uninstall_and_is_kept_unless_asked() {
    let env = Env::start().await.unwrap();
    let (a, b) = (format!("{}-sc-a", env.ns), format!("{}-sc-b", env.ns));
    namespace(&env, &a).await;
    namespace(&env, &b).await;
    deployed(&env, &a, &[]).await;
    deployed(&env, &b, &[]).await;
    let owners: Vec<String> = crd(&env)
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k.starts_with("owners.kudo.dev/"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(owners.len(), 2, "both Instances recorded: {owners:?}");

    uninstall(&env, &a, true).await;
    assert!(
        crd(&env).await.is_some(),
        "the CRD sc-b still uses was deleted"
    );
    assert!(
        gadgets(&env, &b)
            .get_opt("app-gadget")
            .await
            .unwrap()
            .is_some(),
        "sc-b's Gadget is gone"
    );

    // The last user, without --delete-crds: the CRD stays, unowned.
    uninstall(&env, &b, false).await;
    let kept = crd(&env)
        .await
        .expect("a CRD is kept unless deletion is asked for");
    let annotations = kept.metadata.annotations.unwrap_or_default();
    assert!(
        !annotations
            .keys()
            .any(|k| k.starts_with("owners.kudo.dev/")),
        "{annotations:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_instance_uninstalled_with_delete_crds_deletes_the_crd() {
    let env = Env::start().await.unwrap();
    deployed(&env, &env.ns, &[]).await;
    uninstall(&env, &env.ns, true).await;
    tokio::time::timeout(T, async {
        while crd(&env).await.is_some() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the CRD was not deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_kudo_did_not_create_is_used_as_it_is_and_never_deleted() {
    let env = Env::start().await.unwrap();
    // Installed by someone else (another tool, an administrator).
    let theirs: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": CRD},
        "spec": {
            "group": "example.io", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .unwrap();
    let crds = Api::<CustomResourceDefinition>::all(env.client.clone());
    crds.create(&PostParams::default(), &theirs).await.unwrap();
    let inst = deployed(&env, &env.ns, &[]).await;
    let step = serde_json::to_string(&inst.status.unwrap().plan_status["deploy"]).unwrap();
    assert!(
        step.contains(&format!(
            "CustomResourceDefinition {CRD} already exists and was not created by kudo-rs"
        )),
        "the step says it left the CRD alone: {step}"
    );
    let live = crd(&env).await.unwrap();
    assert!(
        !live
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("heritage"),
        "the CRD was taken over"
    );
    uninstall(&env, &env.ns, true).await;
    assert!(
        crd(&env)
            .await
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none()),
        "a CRD kudo-rs did not create was deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_applying_a_crd_and_an_object_of_its_kind_waits_for_established() {
    // The sandbox establishes new CRDs after a while, as a real API server does.
    let sandbox = kudo_sandbox::Sandbox::builder().crd_establish_delay(Duration::from_millis(500));
    let env = Env::start_with(sandbox).await.unwrap();
    let api = env.instances();
    // Every status the Instance goes through, from before it exists.
    let from = api
        .list_metadata(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = api
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    env.install(fixture("crd-wait-op"), "w", &[]).await.unwrap();
    let mut waited: Option<String> = None;
    let completed = tokio::time::timeout(T, async {
        while let Some(event) = events.try_next().await.unwrap() {
            let inst = match event {
                WatchEvent::Added(i) | WatchEvent::Modified(i) => i,
                WatchEvent::Error(e) => panic!("watch failed: {e:?}"),
                _ => continue,
            };
            if inst.metadata.name.as_deref() != Some("w") {
                continue;
            }
            let step = inst
                .status
                .as_ref()
                .and_then(|s| s.plan_status.get("deploy"))
                .and_then(|p| p.phase("main"))
                .and_then(|p| p.step("both"));
            if let Some(step) = step
                && step.status == Some(S::InProgress)
                && step.message.contains("to be Established")
            {
                waited = Some(step.message.clone());
            }
            if plan_status(&inst, "deploy") == Some(S::Complete) {
                return inst;
            }
        }
        panic!("the watch ended before deploy completed")
    })
    .await
    .unwrap_or_else(|_| panic!("deploy did not complete; waited: {waited:?}"));
    assert_eq!(
        step_status(&completed, "deploy", "main", "both"),
        Some(S::Complete)
    );
    let widgets = ApiResource {
        group: "wait.example.io".into(),
        version: "v1".into(),
        api_version: "wait.example.io/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widget = Api::<DynamicObject>::namespaced_with(env.client.clone(), &env.ns, &widgets)
        .get("w-widget")
        .await
        .unwrap();
    assert_eq!(widget.data["spec"]["size"], 1);
    // A real cluster may establish the CRD before the apply answers.
    if env.sandbox.as_sandbox().is_some() {
        let message = waited.expect("the step never showed it waited for the CRD");
        assert_eq!(
            message,
            format!(
                "Widget {}/w-widget: waiting for the CRD of Widget to be Established",
                env.ns
            )
        );
    }
}
