//! End-to-end: Pipe tasks through the real exec client path. The sandbox
//! runs no containers, so each test gives the pipe pod its files
//! (`Sandbox::set_pod_files`) and marks it Running and Ready through the
//! status subresource, as the kubelet would once the init container ran.
//! On a real cluster the busybox init container writes the same files and
//! only the success test runs (the others need control over the files).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::await_condition;
use kudo_api::{ExecutionStatus as S, Instance};
use kudo_e2e::{Env, fixture, plan_status, step_status};
use serde_json::json;

/// Wait budget (longer on a real cluster, see `kudo_e2e::timeout`).
fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(30))
}

fn pod_name(instance: &str) -> String {
    format!("{instance}.deploy.main.generate.gen.pipepod")
}

fn artifact_name(instance: &str, key: &str) -> String {
    format!("{instance}.deploy.main.generate.gen.{key}")
}

const PAGE: &str = "/tmp/out/index.html";
const CREDS: &str = "/tmp/out/creds.env";

/// Gives the pipe pod of `instance` its files (sandbox only: on a real
/// cluster its init container writes them).
fn give_files<C: Into<Vec<u8>>>(env: &Env, instance: &str, files: Vec<(&str, C)>) {
    if let Some(sandbox) = env.sandbox.as_sandbox() {
        sandbox.set_pod_files(&env.ns, &pod_name(instance), files);
    }
}

/// Waits for the manager to create the pipe pod, then (on the sandbox)
/// marks it Running and Ready.
async fn run_pipe_pod(env: &Env, instance: &str) {
    if env.sandbox.as_sandbox().is_none() {
        return;
    }
    wait_pipe_pod_pending(env, instance).await;
    mark_pipe_pod_ready(env, instance).await;
}

/// Waits until the pipe pod exists and the step says it waits for it.
async fn wait_pipe_pod_pending(env: &Env, instance: &str) {
    let pods: Api<Pod> = env.api();
    let name = pod_name(instance);
    tokio::time::timeout(
        t(),
        await_condition(pods, &name, |p: Option<&Pod>| p.is_some()),
    )
    .await
    .unwrap_or_else(|_| panic!("the manager did not create pipe pod {name}"))
    .unwrap();
    let pending = format!("pipe pod {}/{name} is Pending", env.ns);
    env.wait_for(instance, "the step to wait for the pipe pod", t(), |i| {
        step_message(i, "generate") == pending
    })
    .await
    .unwrap();
}

/// What the kubelet reports once the init container has run.
async fn mark_pipe_pod_ready(env: &Env, instance: &str) {
    let pods: Api<Pod> = env.api();
    pods.patch_status(
        &pod_name(instance),
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await
    .unwrap();
}

/// Installs `instance` of pipe-op, runs its pipe pod and waits until
/// deploy is COMPLETE.
async fn deploy(env: &Env, instance: &str) -> Instance {
    env.install(fixture("pipe-op"), instance, &[])
        .await
        .unwrap();
    run_pipe_pod(env, instance).await;
    env.wait_for(instance, "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap()
}

fn step_message(inst: &Instance, step: &str) -> String {
    inst.status
        .as_ref()
        .and_then(|s| s.plan_status.get("deploy"))
        .and_then(|p| p.phase("main"))
        .and_then(|p| p.step(step))
        .map(|s| s.message.clone())
        .unwrap_or_default()
}

async fn wait_generate_fatal(env: &Env, instance: &str) -> String {
    let inst = env
        .wait_for(instance, "step generate FATAL_ERROR", t(), |i| {
            step_status(i, "deploy", "main", "generate") == Some(S::FatalError)
        })
        .await
        .unwrap();
    assert_eq!(plan_status(&inst, "deploy"), Some(S::FatalError));
    let pods: Api<Pod> = env.api();
    assert!(
        pods.get_opt(&pod_name(instance)).await.unwrap().is_none(),
        "the pipe pod of a failed step is deleted, so a restart starts afresh"
    );
    step_message(&inst, "generate")
}

#[tokio::test]
async fn pipe_task_copies_files_into_labelled_artifacts_and_deletes_its_pod() {
    let env = Env::start().await.unwrap();
    // What the fixture's init container writes on a real cluster.
    let page = "<h1>hello from web</h1>\n";
    give_files(
        &env,
        "web",
        vec![
            (PAGE, page),
            (CREDS, "# generated\nUSER=admin\nPASSWORD=s3cret\n"),
        ],
    );
    let inst = deploy(&env, "web").await;

    let configmaps: Api<ConfigMap> = env.api();
    let cm = configmaps
        .get(&artifact_name("web", "indexhtml"))
        .await
        .unwrap();
    let binary = cm.binary_data.clone().unwrap();
    assert_eq!(binary.get("index.html").unwrap().0, page.as_bytes());
    let labels = cm.metadata.labels.clone().unwrap();
    assert_eq!(labels.get("heritage").map(String::as_str), Some("kudo"));
    assert_eq!(
        labels.get("kudo.dev/operator").map(String::as_str),
        Some("pipe-op")
    );
    assert_eq!(
        labels.get("kudo.dev/instance").map(String::as_str),
        Some("web")
    );
    let annotations = cm.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations.get("kudo.dev/step").map(String::as_str),
        Some("generate")
    );
    let owner = cm.metadata.owner_references.clone().unwrap();
    assert_eq!(owner.len(), 1);
    assert_eq!(owner[0].uid, inst.metadata.uid.clone().unwrap());
    assert_eq!(owner[0].controller, Some(true));

    let secrets: Api<Secret> = env.api();
    let secret = secrets.get(&artifact_name("web", "creds")).await.unwrap();
    let data = secret.data.unwrap();
    assert_eq!(data.get("USER").unwrap().0, b"admin");
    assert_eq!(data.get("PASSWORD").unwrap().0, b"s3cret");
    assert_eq!(data.len(), 2, "the comment line is not a key");

    // The Apply task of the next step found the artifacts through `.Pipes`.
    let site = configmaps.get("web-site").await.unwrap().data.unwrap();
    assert_eq!(
        site.get("page").map(String::as_str),
        Some(artifact_name("web", "indexhtml").as_str())
    );
    assert_eq!(
        site.get("credentials").map(String::as_str),
        Some(artifact_name("web", "creds").as_str())
    );

    let pods: Api<Pod> = env.api();
    assert!(
        pods.get_opt(&pod_name("web")).await.unwrap().is_none(),
        "the pipe pod is deleted after the copy"
    );
}

#[tokio::test]
async fn a_pipe_file_over_one_mib_fails_the_step_naming_the_file() {
    if kudo_e2e::skip_on_real_cluster("needs the sandbox's fake exec to serve a 1 MiB file") {
        return;
    }
    let env = Env::start().await.unwrap();
    give_files(
        &env,
        "big",
        vec![
            (PAGE, vec![b'x'; 1024 * 1024 + 1]),
            (CREDS, b"USER=admin\n".to_vec()),
        ],
    );
    env.install(fixture("pipe-op"), "big", &[]).await.unwrap();
    run_pipe_pod(&env, "big").await;
    let message = wait_generate_fatal(&env, "big").await;
    assert!(
        message.contains("pipe file /tmp/out/index.html is 1048577 bytes"),
        "{message}"
    );
    let configmaps: Api<ConfigMap> = env.api();
    assert!(
        configmaps
            .get_opt(&artifact_name("big", "indexhtml"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_failing_exec_fails_the_step_with_its_stderr() {
    if kudo_e2e::skip_on_real_cluster("needs the sandbox's fake exec to leave a file out") {
        return;
    }
    let env = Env::start().await.unwrap();
    // creds.env was never written: `stat` in the waiter container exits 1.
    give_files(&env, "broken", vec![(PAGE, "<p>page</p>")]);
    env.install(fixture("pipe-op"), "broken", &[])
        .await
        .unwrap();
    run_pipe_pod(&env, "broken").await;
    let message = wait_generate_fatal(&env, "broken").await;
    assert!(message.contains("exited with code 1"), "{message}");
    assert!(
        message.contains("stat: can't stat '/tmp/out/creds.env': No such file or directory"),
        "{message}"
    );
}

#[tokio::test]
async fn restarting_the_pipe_step_reuses_this_runs_artifacts_without_a_new_pod() {
    let env = Env::start().await.unwrap();
    give_files(
        &env,
        "again",
        vec![
            (PAGE, "<h1>hello from again</h1>\n"),
            (CREDS, "USER=admin\n"),
        ],
    );
    deploy(&env, "again").await;
    let configmaps: Api<ConfigMap> = env.api();
    let copied = configmaps
        .get(&artifact_name("again", "indexhtml"))
        .await
        .unwrap();

    // Same plan execution (same uid): the artifacts already carry it, so the
    // step completes without a pipe pod. A pod would stay Pending here (no
    // test marks it Running) and the plan would never complete.
    env.patch_spec(
        "again",
        json!({"planOperations": [{"id": "r1", "action": "restart",
            "plan": "deploy", "phase": "main", "step": "generate"}]}),
    )
    .await
    .unwrap();
    let inst = env
        .wait_for("again", "the restarted step to complete", t(), |i| {
            let status = i.status.as_ref();
            status.is_some_and(|s| s.operations.iter().any(|o| o.id == "r1"))
                && step_status(i, "deploy", "main", "generate") == Some(S::Complete)
                && plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    let record = inst.status.unwrap().operations;
    assert!(
        record
            .iter()
            .any(|o| o.id == "r1" && o.result.contains("restarted")),
        "{record:?}"
    );
    let pods: Api<Pod> = env.api();
    assert!(pods.get_opt(&pod_name("again")).await.unwrap().is_none());
    let after = configmaps
        .get(&artifact_name("again", "indexhtml"))
        .await
        .unwrap();
    assert_eq!(
        after.metadata.resource_version, copied.metadata.resource_version,
        "the artifact was not copied again"
    );
}

#[tokio::test]
async fn a_refused_exec_request_is_retried_until_it_succeeds() {
    if kudo_e2e::skip_on_real_cluster("needs the sandbox's fault injection (500 on exec)") {
        return;
    }
    let env = Env::start().await.unwrap();
    give_files(&env, "flaky", vec![(PAGE, "<p>x</p>"), (CREDS, "A=1\n")]);
    env.install(fixture("pipe-op"), "flaky", &[]).await.unwrap();
    wait_pipe_pod_pending(&env, "flaky").await;
    // Exec is `create pods/exec`: every one now fails with 500.
    env.sandbox
        .set_faults(kudo_sandbox::Faults::none().fail(kudo_sandbox::Verb::Create, 1.0, 500))
        .unwrap();
    mark_pipe_pod_ready(&env, "flaky").await;
    let inst = env
        .wait_for("flaky", "step generate ERROR", t(), |i| {
            step_status(i, "deploy", "main", "generate") == Some(S::Error)
        })
        .await
        .unwrap();
    let message = step_message(&inst, "generate");
    assert!(message.contains("exec `stat -c %s"), "{message}");
    env.sandbox
        .set_faults(kudo_sandbox::Faults::none())
        .unwrap();
    env.wait_for("flaky", "deploy COMPLETE after the retry", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
}
