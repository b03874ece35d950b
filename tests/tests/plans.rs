//! End-to-end: plans run by the in-process controller against the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, completed_new_run, fixture, operator, plan_status, plan_uid, step_status};
use serde_json::json;

/// Wait budget (longer on a real cluster, see `kudo_e2e::timeout`).
fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(30))
}

fn configmaps(env: &Env) -> Api<ConfigMap> {
    env.api()
}

fn deployments(env: &Env) -> Api<Deployment> {
    env.api()
}

#[tokio::test]
async fn first_operator_deploys_with_kudo_labels_and_owner_reference() {
    let env = Env::start().await.unwrap();
    env.install(operator("first-operator"), "web", &[])
        .await
        .unwrap();
    let inst = env
        .wait_for("web", "deploy COMPLETE", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    let dep = deployments(&env).get("web-nginx").await.unwrap();
    let labels = dep.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("heritage").map(String::as_str), Some("kudo"));
    assert_eq!(
        labels.get("kudo.dev/operator").map(String::as_str),
        Some("first-operator")
    );
    assert_eq!(
        labels.get("kudo.dev/instance").map(String::as_str),
        Some("web")
    );
    let owner = dep.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.len(), 1, "{owner:?}");
    assert_eq!(owner[0].kind, "Instance");
    assert_eq!(owner[0].uid, inst.metadata.uid.clone().unwrap());
    assert_eq!(owner[0].controller, Some(true));
    let annotations = dep.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get("kudo.dev/plan").map(String::as_str),
        Some("deploy")
    );
    let status = inst.status.unwrap();
    assert_eq!(
        status
            .conditions
            .iter()
            .filter(|c| c.type_ == "Ready")
            .count(),
        1,
        "{:?}",
        status.conditions
    );
}

#[tokio::test]
async fn parameter_update_reruns_the_plan_and_updates_the_object() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "p", &[]).await.unwrap();
    let inst = env
        .wait_for("p", "deploy COMPLETE", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    let first = plan_uid(&inst, "deploy");
    env.patch_spec("p", json!({"parameters": {"REPLICAS": "3"}}))
        .await
        .unwrap();
    env.wait_for("p", "a new deploy run COMPLETE", t(), |i| {
        completed_new_run(i, "deploy", first.as_deref())
    })
    .await
    .unwrap();
    let dep = deployments(&env).get("p-app").await.unwrap();
    assert_eq!(dep.spec.replicas, Some(3));
}

#[tokio::test]
async fn parameter_with_a_trigger_runs_that_plan() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "t", &[]).await.unwrap();
    env.wait_for("t", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    env.patch_spec("t", json!({"parameters": {"GREETING": "bonjour"}}))
        .await
        .unwrap();
    let inst = env
        .wait_for("t", "reconfigure COMPLETE", t(), |i| {
            plan_status(i, "reconfigure") == Some(S::Complete)
        })
        .await
        .unwrap();
    assert_eq!(
        inst.status.unwrap().active_plan.unwrap().name,
        "reconfigure"
    );
    let cm = configmaps(&env).get("t-config").await.unwrap();
    assert_eq!(
        cm.data.unwrap().get("greeting").map(String::as_str),
        Some("bonjour")
    );
}

#[tokio::test]
async fn operator_version_upgrade_runs_the_upgrade_plan() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "u", &[]).await.unwrap();
    env.wait_for("u", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    let v2 = env
        .install_operator_version(fixture("e2e-op-v2"))
        .await
        .unwrap();
    env.patch_spec("u", json!({"operatorVersion": {"name": v2}}))
        .await
        .unwrap();
    env.wait_for("u", "upgrade COMPLETE", t(), |i| {
        plan_status(i, "upgrade") == Some(S::Complete)
    })
    .await
    .unwrap();
    let cm = configmaps(&env).get("u-upgraded").await.unwrap();
    assert_eq!(
        cm.data.unwrap().get("version").map(String::as_str),
        Some("0.2.0")
    );
}

#[tokio::test]
async fn manual_plan_execution_runs_the_named_plan() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "m", &[]).await.unwrap();
    env.wait_for("m", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    env.patch_spec(
        "m",
        json!({"planExecution": {"planName": "backup", "uid": "manual-1"}}),
    )
    .await
    .unwrap();
    env.wait_for("m", "backup COMPLETE", t(), |i| {
        plan_status(i, "backup") == Some(S::Complete)
    })
    .await
    .unwrap();
    let cm = configmaps(&env).get("m-backup").await.unwrap();
    assert_eq!(
        cm.data.unwrap().get("plan").map(String::as_str),
        Some("backup")
    );
}

#[tokio::test]
async fn failing_job_makes_the_step_fatal_with_its_message() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "f", &[]).await.unwrap();
    env.wait_for("f", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    env.patch_spec(
        "f",
        json!({"planExecution": {"planName": "fail", "uid": "fail-1"}}),
    )
    .await
    .unwrap();
    let inst = env
        .wait_for("f", "fail FATAL_ERROR", t(), |i| {
            plan_status(i, "fail") == Some(S::FatalError)
        })
        .await
        .unwrap();
    assert_eq!(
        step_status(&inst, "fail", "main", "job"),
        Some(S::FatalError)
    );
    let step = inst.status.unwrap().plan_status["fail"].phases[0].steps[0].clone();
    let job_label = format!("Job {}/f-job", env.ns);
    assert!(step.message.contains(&job_label), "{}", step.message);
    let job: Job = env.api().get("f-job").await.unwrap();
    assert!(job.status.is_some());
    let events: Api<k8s_openapi::api::events::v1::Event> = env.api();
    let failed = tokio::time::timeout(t(), async {
        loop {
            let list = events.list(&Default::default()).await.unwrap();
            if let Some(e) = list
                .items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("StepFailed"))
            {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("no StepFailed Event");
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert!(failed.note.unwrap_or_default().contains(&job_label));
}

#[tokio::test]
async fn transient_api_errors_are_retried_until_the_plan_completes() {
    if kudo_e2e::skip_on_real_cluster("needs the sandbox's fault injection (500s on PATCH)") {
        return;
    }
    let env = Env::start().await.unwrap();
    env.install_operator_version(fixture("e2e-op-v1"))
        .await
        .unwrap();
    // Every PATCH (apply and status writes) fails with 500 for a while.
    env.sandbox
        .set_faults(kudo_sandbox::Faults::none().fail(kudo_sandbox::Verb::Patch, 1.0, 500))
        .unwrap();
    let mut inst = kudo_api::Instance::new(
        "r",
        kudo_api::InstanceSpec {
            operator_version: kudo_api::ObjectReference {
                name: Some("e2e-op-1.0.0-0.1.0".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    inst.metadata.namespace = Some(env.ns.clone());
    env.instances()
        .create(&PostParams::default(), &inst)
        .await
        .unwrap();
    // Wait until the manager has seen failures, then heal the API server.
    tokio::time::timeout(t(), async {
        while !env
            .metrics
            .render()
            .contains("kudo_manager_errors_total{kind=\"kube\"}")
            && !env
                .metrics
                .render()
                .contains("kudo_manager_errors_total{kind=\"transient_task\"}")
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the manager never hit the injected 500s");
    env.sandbox
        .set_faults(kudo_sandbox::Faults::none())
        .unwrap();
    env.wait_for("r", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    assert!(deployments(&env).get_opt("r-app").await.unwrap().is_some());
}

#[tokio::test]
async fn restarted_manager_finishes_the_plan_without_redoing_completed_steps() {
    // Workloads take a while to become ready (simulated on the sandbox, for
    // real on a cluster), so the plan is caught mid-way.
    let mut env =
        Env::start_with(kudo_sandbox::Sandbox::builder().ready_delay(Duration::from_secs(2)))
            .await
            .unwrap();
    env.install(fixture("e2e-op-v1"), "k", &[]).await.unwrap();
    env.wait_for("k", "step app IN_PROGRESS", t(), |i| {
        step_status(i, "deploy", "main", "config") == Some(S::Complete)
            && step_status(i, "deploy", "main", "app") == Some(S::InProgress)
    })
    .await
    .unwrap();
    // Recovery would undo the edit below beside the running plan; this
    // test is about the plan alone.
    env.patch_spec("k", json!({"recovery": "Disabled"}))
        .await
        .unwrap();
    env.stop_controller().await.unwrap();
    // An edit by hand that re-applying the completed step would undo (a
    // re-apply of unchanged content would not show in resourceVersion).
    configmaps(&env)
        .patch(
            "k-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"greeting": "edited by hand"}})),
        )
        .await
        .unwrap();
    env.start_controller();
    env.wait_for("k", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    let after = configmaps(&env).get("k-config").await.unwrap();
    assert_eq!(
        after
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("edited by hand"),
        "the completed step's ConfigMap was applied again"
    );
}

#[tokio::test]
async fn deleting_an_instance_runs_cleanup_then_removes_it_and_its_objects() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "c", &[]).await.unwrap();
    let inst = env
        .wait_for("c", "deploy COMPLETE and finalizer", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
                && i.metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == kudo_api::names::CLEANUP_FINALIZER)
        })
        .await
        .unwrap();
    let uid = inst.metadata.uid.clone().unwrap();
    env.instances()
        .delete("c", &DeleteParams::background())
        .await
        .unwrap();
    env.wait_gone("c", t()).await.unwrap();
    // The cleanup plan deleted the ConfigMap; the garbage collector the Deployment.
    assert!(
        configmaps(&env)
            .get_opt("c-config")
            .await
            .unwrap()
            .is_none()
    );
    tokio::time::timeout(t(), async {
        while deployments(&env).get_opt("c-app").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the Deployment owned by the deleted Instance is still there");
    let events: Api<k8s_openapi::api::events::v1::Event> = env.api();
    let all = events.list(&Default::default()).await.unwrap().items;
    let notes: Vec<String> = all
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.uid.clone()).as_deref() == Some(uid.as_str())
        })
        .filter_map(|e| e.note)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n == "Execution of plan cleanup finished with status COMPLETE"),
        "{notes:?}"
    );
}

#[tokio::test]
async fn objects_a_step_no_longer_renders_are_pruned() {
    let env = Env::start().await.unwrap();
    env.install(fixture("e2e-op-v1"), "pr", &[]).await.unwrap();
    env.wait_for("pr", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    assert!(
        configmaps(&env)
            .get_opt("pr-extra")
            .await
            .unwrap()
            .is_some()
    );
    // Version 0.2.0 no longer renders pr-extra in step config of deploy.
    let v2 = env
        .install_operator_version(fixture("e2e-op-v2"))
        .await
        .unwrap();
    env.patch_spec("pr", json!({"operatorVersion": {"name": v2}}))
        .await
        .unwrap();
    env.wait_for("pr", "upgrade COMPLETE", t(), |i| {
        plan_status(i, "upgrade") == Some(S::Complete)
    })
    .await
    .unwrap();
    let before = env.instances().get("pr").await.unwrap();
    let first = plan_uid(&before, "deploy");
    env.patch_spec(
        "pr",
        json!({"planExecution": {"planName": "deploy", "uid": "redeploy-1"}}),
    )
    .await
    .unwrap();
    env.wait_for("pr", "a new deploy run COMPLETE", t(), |i| {
        completed_new_run(i, "deploy", first.as_deref())
    })
    .await
    .unwrap();
    let extra = configmaps(&env).get_opt("pr-extra").await.unwrap();
    assert!(
        extra.is_none_or(|c| c.metadata.deletion_timestamp.is_some()),
        "pr-extra was not pruned"
    );
    assert!(
        configmaps(&env)
            .get_opt("pr-config")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_too_large_to_store_is_written_with_shorter_messages() {
    let env = Env::start().await.unwrap();
    // 150 steps fail at once with 8 KB messages: about 2.4 MB of messages,
    // more than the API server stores in one object.
    env.install(fixture("wide-fail-op"), "wide", &[("LENGTH", "8000")])
        .await
        .unwrap();
    let failed = env
        .wait_for("wide", "deploy FATAL_ERROR", t(), |i| {
            plan_status(i, "deploy") == Some(S::FatalError)
        })
        .await
        .unwrap();
    let status = failed.status.unwrap();
    let steps = &status.plan_status["deploy"].phases[0].steps;
    assert_eq!(steps.len(), 150);
    assert!(steps.iter().all(|s| s.status == Some(S::FatalError)));
    let message = &steps[0].message;
    assert!(
        message.starts_with("xxx") || message.contains("xxxx"),
        "{message}"
    );
    assert!(message.len() <= 512, "{}", message.len());
}
