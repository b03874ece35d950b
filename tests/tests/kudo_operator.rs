//! End-to-end: a KudoOperator task installs a child Instance of another
//! operator, waits for its plan, passes parameters to it and takes it along
//! when the parent goes; a package that installs itself stops at the
//! nesting depth.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kudo_api::ExecutionStatus as S;
use kudo_api::Instance;
use kudo_e2e::{Env, completed_new_run, fixture, plan_status, plan_uid};
use serde_json::json;

/// The child Instance's name: `<parent>-<package>` as KUDO names it.
const CHILD: &str = "parent-child-op";

fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(30))
}

/// Both OperatorVersions (as `kubectl kudo install` installs dependencies
/// first), then the parent Instance; returns once the parent's deploy is COMPLETE.
async fn deployed_parent() -> (Env, Instance) {
    // The child's Deployment takes a while to become ready, so a parent that
    // did not wait for the child would visibly run ahead of it.
    let env =
        Env::start_with(kudo_sandbox::Sandbox::builder().ready_delay(Duration::from_millis(1500)))
            .await
            .unwrap();
    env.install_operator_version(fixture("child-op"))
        .await
        .unwrap();
    env.install(fixture("parent-op"), "parent", &[])
        .await
        .unwrap();
    let parent = env
        .wait_for("parent", "deploy COMPLETE", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    (env, parent)
}

/// Change parent parameters and wait for the deploy run they trigger.
async fn rerun_parent_with(env: &Env, previous_run: Option<String>, params: serde_json::Value) {
    env.patch_spec("parent", json!({ "parameters": params }))
        .await
        .unwrap();
    env.wait_for("parent", "a new deploy run COMPLETE", t(), |i| {
        completed_new_run(i, "deploy", previous_run.as_deref())
    })
    .await
    .unwrap();
}

fn parameters(inst: &Instance) -> BTreeMap<String, String> {
    inst.spec.parameters.clone().unwrap_or_default()
}

/// The greeting in the ConfigMap the child's deploy applied.
async fn child_greeting(env: &Env) -> Option<String> {
    let api: Api<ConfigMap> = env.api();
    let cm = api.get("parent-child-op-child").await.unwrap();
    cm.data?.get("greeting").cloned()
}

#[tokio::test]
async fn parent_plan_creates_the_child_instance_and_waits_for_its_deploy() {
    let (env, parent) = deployed_parent().await;
    let child = env.instances().get(CHILD).await.unwrap();

    let labels = child.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kudo.dev/operator").map(String::as_str),
        Some("child-op")
    );
    let owners = child.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].kind, "Instance");
    assert_eq!(owners[0].name, "parent");
    assert_eq!(Some(&owners[0].uid), parent.metadata.uid.as_ref());
    assert_ne!(
        owners[0].controller,
        Some(true),
        "the owner reference must not be a controller reference"
    );
    assert_eq!(
        child.spec.operator_version.name.as_deref(),
        Some("child-op-0.1.0")
    );
    let params = parameters(&child);
    assert_eq!(params.get("GREETING").map(String::as_str), Some("hello"));
    assert_eq!(params.get("SIZE").map(String::as_str), Some("2"));

    // The parent's next step started only after the child's deploy finished.
    assert_eq!(plan_status(&child, "deploy"), Some(S::Complete));
    let child_done = child.status.as_ref().unwrap().plan_status["deploy"].phases[0]
        .steps
        .iter()
        .filter_map(|s| s.finished_at.clone())
        .max()
        .expect("the child's deploy steps have finish times");
    let after_child = parent.status.as_ref().unwrap().plan_status["deploy"].phases[0]
        .step("after-child")
        .and_then(|s| s.started_at.clone())
        .expect("the parent's after-child step has a start time");
    assert!(
        after_child.0 >= child_done.0,
        "after-child started at {after_child:?}, before the child's deploy finished at {child_done:?}"
    );
    assert_eq!(child_greeting(&env).await.as_deref(), Some("hello"));
}

#[tokio::test]
async fn parent_parameter_change_updates_the_child_and_runs_its_plan() {
    let (env, parent) = deployed_parent().await;
    // A child parameter set by hand, which the parent's parameter file does not name.
    env.patch_spec(CHILD, json!({"parameters": {"EXTRA": "set by hand"}}))
        .await
        .unwrap();
    let child = env
        .wait_for(CHILD, "the child's deploy COMPLETE with EXTRA", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
                && i.status.as_ref().is_some_and(|s| {
                    s.observed_generation == i.metadata.generation
                        && s.applied_parameters
                            .as_ref()
                            .and_then(|p| p.get("EXTRA"))
                            .map(String::as_str)
                            == Some("set by hand")
                })
        })
        .await
        .unwrap();
    let child_run = plan_uid(&child, "deploy");
    let parent_run = plan_uid(&parent, "deploy");

    rerun_parent_with(&env, parent_run, json!({"CHILD_GREETING": "bonjour"})).await;
    let child = env
        .wait_for(CHILD, "a new child deploy run COMPLETE", t(), |i| {
            completed_new_run(i, "deploy", child_run.as_deref())
        })
        .await
        .unwrap();
    let params = parameters(&child);
    assert_eq!(params.get("GREETING").map(String::as_str), Some("bonjour"));
    assert_eq!(params.get("SIZE").map(String::as_str), Some("2"));
    assert_eq!(
        params.get("EXTRA").map(String::as_str),
        Some("set by hand"),
        "parameters are merged into the child, never removed: {params:?}"
    );
    assert_eq!(child_greeting(&env).await.as_deref(), Some("bonjour"));
}

#[tokio::test]
async fn parameter_the_parent_stops_rendering_stays_on_the_child() {
    let (env, parent) = deployed_parent().await;
    let parent_run = plan_uid(&parent, "deploy");
    // An empty CHILD_SIZE leaves SIZE out of the rendered parameter file.
    rerun_parent_with(&env, parent_run, json!({"CHILD_SIZE": ""})).await;
    let child = env.instances().get(CHILD).await.unwrap();
    assert_eq!(
        parameters(&child).get("SIZE").map(String::as_str),
        Some("2"),
        "KUDO merge-patches the child's spec: parameters are never removed"
    );
}

#[tokio::test]
async fn deleting_the_parent_removes_the_child() {
    let (env, _) = deployed_parent().await;
    assert!(env.instances().get_opt(CHILD).await.unwrap().is_some());
    env.instances()
        .delete("parent", &DeleteParams::background())
        .await
        .unwrap();
    env.wait_gone("parent", t()).await.unwrap();
    env.wait_gone(CHILD, t()).await.unwrap();
}

#[tokio::test]
async fn a_child_whose_operator_version_is_missing_fails_the_step_with_what_to_install() {
    let env = Env::start().await.unwrap();
    // The parent alone: the child's OperatorVersion was never installed.
    env.install(fixture("parent-op"), "parent", &[])
        .await
        .unwrap();

    let parent = env
        .wait_for("parent", "deploy FATAL_ERROR", t(), |i| {
            plan_status(i, "deploy") == Some(S::FatalError)
        })
        .await
        .unwrap();

    let step = parent
        .status
        .as_ref()
        .and_then(|s| s.plan_status.get("deploy"))
        .and_then(|p| p.phase("main"))
        .and_then(|p| p.step("child"))
        .unwrap();
    assert_eq!(step.status, Some(S::FatalError));
    let expected = format!("OperatorVersion {}/child-op-0.1.0 is not installed", env.ns);
    assert!(step.message.contains(&expected), "{}", step.message);
    assert!(
        step.message
            .contains("install the package of child-op first")
    );
    assert!(env.instances().get_opt(CHILD).await.unwrap().is_none());
}

/// A KudoOperator task naming an Instance someone else made does not take
/// it over; once its owner hands it over, the parent adopts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_task_does_not_take_over_an_instance_it_did_not_create() {
    let env = Env::start().await.unwrap();
    let ov = env
        .install_operator_version(fixture("child-op"))
        .await
        .unwrap();
    // The admin's own Instance, under the name the parent's child would get.
    let victim: Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": CHILD, "namespace": env.ns},
        "spec": {"operatorVersion": {"name": ov}, "parameters": {"GREETING": "the admin's"}},
    }))
    .unwrap();
    env.instances()
        .create(&kube::api::PostParams::default(), &victim)
        .await
        .unwrap();
    // A tenant of the namespace installs the parent.
    let tenant = env.tenant(&env.ns, "mallory").await.unwrap();
    kudo_manager::install::install_package(
        &tenant,
        &fixture("parent-op"),
        &env.ns,
        Some(kudo_manager::install::InstanceRequest {
            name: Some("parent".into()),
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    let parent = env
        .wait_for("parent", "deploy FATAL_ERROR", t(), |i| {
            plan_status(i, "deploy") == Some(S::FatalError)
        })
        .await
        .unwrap();
    let message = serde_json::to_string(&parent.status.unwrap().plan_status["deploy"]).unwrap();
    assert!(
        message.contains(&format!(
            "Instance {ns}/{CHILD} exists and is not a child of Instance {ns}/parent",
            ns = env.ns
        )),
        "{message}"
    );
    let untouched = env.instances().get(CHILD).await.unwrap();
    assert_eq!(parameters(&untouched)["GREETING"], "the admin's");
    assert!(untouched.metadata.owner_references.is_none());

    // Handed over: the parent's next run adopts it.
    let handed =
        json!({"metadata": {"annotations": {"kudo.dev/adopt-by": format!("{}/parent", env.ns)}}});
    env.instances()
        .patch(
            CHILD,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&handed),
        )
        .await
        .unwrap();
    let run = plan_uid(&env.instances().get("parent").await.unwrap(), "deploy");
    let trigger = json!({"planExecution": {"planName": "deploy", "uid": "rerun-1"}});
    env.patch_spec("parent", trigger).await.unwrap();
    env.wait_for("parent", "a new deploy run COMPLETE", t(), |i| {
        completed_new_run(i, "deploy", run.as_deref())
    })
    .await
    .unwrap();
    let adopted = env.instances().get(CHILD).await.unwrap();
    assert!(
        adopted
            .metadata
            .owner_references
            .unwrap_or_default()
            .iter()
            .any(|r| r.name == "parent"),
        "the parent is recorded as owner"
    );
}

#[tokio::test]
async fn a_package_that_installs_itself_stops_at_the_nesting_depth() {
    let env = Env::start().await.unwrap();
    env.install(fixture("circle-op"), "c", &[]).await.unwrap();
    let depth = kudo_engine::ownership::children::MAX_CHILD_DEPTH;
    let deepest = format!("c{}", "-circle-op".repeat(depth));
    let stopped = env
        .wait_for(&deepest, "its KudoOperator task refused", t(), |i| {
            plan_status(i, "deploy") == Some(S::FatalError)
        })
        .await
        .unwrap();
    let message =
        &stopped.status.as_ref().unwrap().plan_status["deploy"].phases[0].steps[0].message;
    assert!(
        message.contains(&format!(
            "is {depth} levels of KudoOperator children deep, and children nest at most {depth} deep"
        )),
        "{message}"
    );
    let below = format!("{deepest}-circle-op");
    assert!(env.instances().get_opt(&below).await.unwrap().is_none());
}
