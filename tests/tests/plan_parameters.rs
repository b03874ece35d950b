//! End-to-end: a plan run with parameters of its own (`spec.planExecution.parameters`,
//! what `kubectl kudo plan trigger -p` writes) renders with them, keeps
//! them through drift recovery, and leaves the Instance's parameters alone;
//! the next plan renders with the Instance's values.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, completed_new_run, fixture, plan_status, plan_uid};
use serde_json::json;

fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(30))
}

async fn greeting(cms: &Api<ConfigMap>, name: &str) -> Option<String> {
    cms.get_opt(name)
        .await
        .unwrap()
        .and_then(|cm| cm.data?.get("greeting").cloned())
}

#[tokio::test]
async fn a_plan_parameter_reaches_the_template_and_not_the_instance() {
    let env = Env::start().await.unwrap();
    let cms: Api<ConfigMap> = env.api();
    env.install(fixture("e2e-op-v1"), "pp", &[("GREETING", "hello")])
        .await
        .unwrap();
    env.wait_for("pp", "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    assert_eq!(greeting(&cms, "pp-config").await.as_deref(), Some("hello"));

    // GREETING triggers reconfigure when the Instance's value changes;
    // given to one run it triggers nothing.
    env.patch_spec(
        "pp",
        json!({"planExecution": {"planName": "reconfigure", "uid": "run-1",
            "parameters": {"GREETING": "from-the-run"}}}),
    )
    .await
    .unwrap();
    let inst = env
        .wait_for("pp", "reconfigure COMPLETE", t(), |i| {
            completed_new_run(i, "reconfigure", None)
        })
        .await
        .unwrap();
    assert_eq!(
        greeting(&cms, "pp-config").await.as_deref(),
        Some("from-the-run")
    );
    let params = inst.spec.parameters.clone().unwrap_or_default();
    assert_eq!(params.get("GREETING").map(String::as_str), Some("hello"));
    let status = inst.status.clone().unwrap();
    assert_eq!(
        status
            .applied_parameters
            .unwrap_or_default()
            .get("GREETING")
            .map(String::as_str),
        Some("hello")
    );
    let recorded = &status.plan_status["reconfigure"].parameters;
    assert_eq!(
        recorded.get("GREETING").map(String::as_str),
        Some("from-the-run")
    );
    let run = status.history.iter().find(|r| r.uid == "run-1").unwrap();
    assert_eq!(run.parameters, *recorded);

    // Drift recovery puts back what the run rendered.
    cms.delete("pp-config", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + t();
    loop {
        if let Some(g) = greeting(&cms, "pp-config").await {
            assert_eq!(g, "from-the-run");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pp-config not recovered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.wait_for("pp", "recovery done", t(), |i| {
        plan_status(i, "recovery") == Some(S::Complete)
    })
    .await
    .unwrap();

    // The next plan, started by a change of the Instance's parameters,
    // renders with the Instance's own values.
    let before = env.instances().get("pp").await.unwrap();
    let deploy_uid = plan_uid(&before, "deploy");
    env.patch_spec("pp", json!({"parameters": {"REPLICAS": "2"}}))
        .await
        .unwrap();
    let inst = env
        .wait_for("pp", "a new deploy run COMPLETE", t(), |i| {
            completed_new_run(i, "deploy", deploy_uid.as_deref())
        })
        .await
        .unwrap();
    assert_eq!(greeting(&cms, "pp-config").await.as_deref(), Some("hello"));
    assert!(
        inst.status.unwrap().plan_status["deploy"]
            .parameters
            .is_empty()
    );

    // A new run asked for with the values set to null (as the CLI writes
    // it) has none of the last run's.
    let reconfigure_uid = plan_uid(&inst_now(&env).await, "reconfigure");
    env.patch_spec(
        "pp",
        json!({"planExecution": {"planName": "reconfigure", "uid": "run-3", "parameters": null}}),
    )
    .await
    .unwrap();
    env.wait_for("pp", "a new reconfigure run COMPLETE", t(), |i| {
        completed_new_run(i, "reconfigure", reconfigure_uid.as_deref())
    })
    .await
    .unwrap();
    assert_eq!(greeting(&cms, "pp-config").await.as_deref(), Some("hello"));
}

async fn inst_now(env: &Env) -> kudo_api::Instance {
    env.instances().get("pp").await.unwrap()
}
