//! After deploy completes, `Ready` follows the health of what it applied
//! (KUDO 0.16+): a Deployment whose rollout breaks turns it False naming
//! the Deployment, and its recovery turns it True again; an unchanged
//! workload is not read again by a reconcile something else woke.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams};
use kudo_api::{ExecutionStatus as S, Instance};
use kudo_e2e::{Cluster, Env, fixture, plan_status};
use serde_json::json;

fn ready(i: &Instance) -> Option<(String, String, String)> {
    let c = i
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

async fn set_failing(env: &Env, name: &str, failing: bool) {
    let value = if failing { json!("true") } else { json!(null) };
    env.api::<Deployment>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"sandbox.kudo.dev/fail": value}}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_turns_false_when_a_deployed_workload_breaks_and_true_when_it_recovers() {
    let env = Env::start().await.unwrap();
    if env.is_remote() {
        return; // the rollout failure is simulated by the sandbox
    }
    env.install(fixture("e2e-op-v1"), "app", &[]).await.unwrap();
    let done = env
        .wait_for("app", "deploy COMPLETE", Duration::from_secs(60), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    assert_eq!(ready(&done).unwrap().0, "True");
    let generation_before = done.status.as_ref().unwrap().plan_status["deploy"]
        .uid
        .clone();

    set_failing(&env, "app-app", true).await;
    let broken = env
        .wait_for("app", "Ready False", Duration::from_secs(30), |i| {
            ready(i).is_some_and(|r| r.0 == "False")
        })
        .await
        .unwrap();
    let (_, reason, message) = ready(&broken).unwrap();
    assert_eq!(reason, "ResourceNotReady");
    assert!(
        message.contains(&format!("Deployment {}/app-app", env.ns)),
        "{message}"
    );
    // No plan started because of it, and one condition only.
    assert_eq!(
        broken.status.as_ref().unwrap().plan_status["deploy"].uid,
        generation_before
    );
    assert_eq!(broken.status.as_ref().unwrap().conditions.len(), 1);

    set_failing(&env, "app-app", false).await;
    let healed = env
        .wait_for("app", "Ready True again", Duration::from_secs(30), |i| {
            ready(i).is_some_and(|r| r.0 == "True")
        })
        .await
        .unwrap();
    assert_eq!(ready(&healed).unwrap().1, "ResourcesReady");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_woken_by_something_else_reads_neither_an_unchanged_workload_nor_the_render_book()
 {
    if kudo_e2e::skip_on_real_cluster("reads the sandbox's request log") {
        return;
    }
    let env = Env::start_with(kudo_sandbox::Sandbox::builder().request_log(100_000))
        .await
        .unwrap();
    let Cluster::Sandbox(sandbox) = &env.sandbox else {
        unreachable!("a sandbox")
    };
    env.install(fixture("e2e-op-v1"), "app", &[]).await.unwrap();
    let done = env
        .wait_for("app", "Ready True", Duration::from_secs(60), |i| {
            plan_status(i, "deploy") == Some(S::Complete) && ready(i).is_some_and(|r| r.0 == "True")
        })
        .await
        .unwrap();
    let ov = done.spec.operator_version.name.clone().unwrap();
    let reads_of_the_workload = |from: u64| {
        sandbox
            .requests_since(from)
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/deployments/app-app"))
            .count()
    };

    // A label on the OperatorVersion wakes the Instance. Asserted once the
    // Deployment stood still over two wakes: the first one's reconcile
    // saw its current version, so the second needs no read. (The sandbox
    // may still be writing the Deployment's status after Ready; a changed
    // Deployment is rightly read again.)
    let version = || async {
        env.api::<Deployment>()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|d| d.metadata.name.as_deref() == Some("app-app"))
            .and_then(|d| d.metadata.resource_version)
    };
    let mut seen_before = None;
    let mut asserted = false;
    // No reconcile in flight: the API server saw no request for a while.
    let quiet = || async {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let seen = sandbox.next_request_seq();
                tokio::time::sleep(Duration::from_millis(300)).await;
                if sandbox.next_request_seq() == seen {
                    break;
                }
            }
        })
        .await
        .expect("the manager never went quiet");
    };
    for attempt in 0..8 {
        quiet().await;
        let at_start = version().await;
        let from = sandbox.next_request_seq();
        let before = env.metrics.reconciles.get();
        env.api::<kudo_api::OperatorVersion>()
            .patch(
                &ov,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"touched": attempt.to_string()}}})),
            )
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(30), async {
            while env.metrics.reconciles.get() == before {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the OperatorVersion change woke no reconcile");
        let at_end = version().await;
        if seen_before.is_some() && seen_before == at_start && at_start == at_end {
            assert_eq!(
                reads_of_the_workload(from),
                0,
                "{:#?}",
                sandbox.requests_since(from)
            );
            // Nothing changed since drift was last judged: the book's
            // Secret is not read either.
            let book_reads = sandbox
                .requests_since(from)
                .iter()
                .filter(|r| r.method == "GET" && r.path.contains("/secrets/"))
                .count();
            assert_eq!(book_reads, 0, "{:#?}", sandbox.requests_since(from));
            asserted = true;
            break;
        }
        seen_before = at_end;
    }
    assert!(asserted, "the Deployment kept changing");

    // Once the workload changes it is read again, and Ready follows.
    let from = sandbox.next_request_seq();
    set_failing(&env, "app-app", true).await;
    env.wait_for("app", "Ready False", Duration::from_secs(30), |i| {
        ready(i).is_some_and(|r| r.0 == "False")
    })
    .await
    .unwrap();
    assert!(reads_of_the_workload(from) >= 1);
}
