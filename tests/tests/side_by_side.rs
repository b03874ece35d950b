//! Plans side by side (DC/OS' dirtied assets) and downtime windows
//! (Apollo): an object deleted during a long plan that is done with it is
//! recovered before the plan ends; one the plan still works on waits for
//! it; a plan that declares downtime waits for a downtime window.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kudo_api::{BlockerKind, ExecutionStatus as S, Instance};
use kudo_e2e::{Env, fixture, plan_status, step_status};
use kudo_manager::clock::Clock;
use kudo_manager::controller::ControllerConfig;
use serde_json::json;

const T: Duration = Duration::from_secs(60);

fn completed_recoveries(i: &Instance) -> usize {
    i.status
        .as_ref()
        .map(|s| {
            s.history
                .iter()
                .filter(|r| r.plan == "recovery" && r.result == Some(S::Complete))
                .count()
        })
        .unwrap_or_default()
}

/// deploy done, then `roll` started: its first phase done, its second
/// waiting for a canary `continue` (as long as nobody gives one).
async fn rolling(env: &Env, name: &str) {
    env.install(fixture("side-op"), name, &[]).await.unwrap();
    env.wait_for(name, "deploy COMPLETE", T, |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    env.patch_spec(
        name,
        json!({"planExecution": {"planName": "roll", "uid": "roll-1"}}),
    )
    .await
    .unwrap();
    env.wait_for(name, "roll waiting for its canary continue", T, |i| {
        step_status(i, "roll", "early", "first") == Some(S::Complete)
            && i.status.as_ref().is_some_and(|s| {
                s.blockers
                    .iter()
                    .any(|b| b.kind == BlockerKind::CanaryApproval)
            })
    })
    .await
    .unwrap();
}

async fn resume(env: &Env, name: &str) {
    env.patch_spec(
        name,
        json!({"planOperations": [{"id": "go-1", "action": "continue", "plan": "roll", "phase": "late"}]}),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_during_a_long_plan_that_is_done_with_it_is_recovered_before_it_ends() {
    let env = Env::start().await.unwrap();
    rolling(&env, "side").await;
    env.api::<ConfigMap>()
        .delete("side-first", &DeleteParams::default())
        .await
        .unwrap();
    let inst = env
        .wait_for("side", "recovery COMPLETE beside roll", T, |i| {
            completed_recoveries(i) == 1
        })
        .await
        .unwrap();
    assert!(
        plan_status(&inst, "roll").is_some_and(|s| s.is_running()),
        "roll still runs: {:?}",
        plan_status(&inst, "roll")
    );
    let st = inst.status.as_ref().unwrap();
    assert_eq!(
        st.active_plan.as_ref().unwrap().name,
        "roll",
        "the user's plan stays active"
    );
    assert!(
        env.api::<ConfigMap>()
            .get_opt("side-first")
            .await
            .unwrap()
            .is_some()
    );

    resume(&env, "side").await;
    env.wait_for("side", "roll COMPLETE", T, |i| {
        plan_status(i, "roll") == Some(S::Complete)
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_in_the_long_plans_path_waits_for_it() {
    let env = Env::start().await.unwrap();
    rolling(&env, "path").await;
    env.api::<ConfigMap>()
        .delete("path-second", &DeleteParams::default())
        .await
        .unwrap();
    // What proves recovery did not start: the blocker saying it waits.
    let inst = env
        .wait_for("path", "recovery waiting for roll", T, |i| {
            i.status.as_ref().is_some_and(|s| {
                s.blockers.iter().any(|b| {
                    b.message.contains("recovery waits for plan \"roll\"")
                        && b.message.contains("step \"second\"")
                })
            })
        })
        .await
        .unwrap();
    assert_eq!(completed_recoveries(&inst), 0);
    assert!(
        !inst
            .status
            .as_ref()
            .unwrap()
            .plan_status
            .contains_key("recovery")
    );

    // roll re-applies it itself.
    resume(&env, "path").await;
    let done = env
        .wait_for("path", "roll COMPLETE", T, |i| {
            plan_status(i, "roll") == Some(S::Complete)
        })
        .await
        .unwrap();
    assert!(
        env.api::<ConfigMap>()
            .get_opt("path-second")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        completed_recoveries(&done),
        0,
        "roll re-applied it, not recovery"
    );
}

#[tokio::test]
async fn a_downtime_plan_waits_for_a_downtime_window() {
    // The manager's clock starts at noon, outside the 02:00-02:30 downtime
    // window, and is moved into it once the plan is seen waiting.
    let mut env = Env::start_without_controller().await.unwrap();
    let clock = Clock::settable();
    let noon: jiff::Timestamp = "2031-03-04T12:00:00Z".parse().unwrap();
    let opens: jiff::Timestamp = "2031-03-05T02:00:00Z".parse().unwrap();
    clock.set(noon);
    env.start_controller_with(ControllerConfig {
        engine: kudo_e2e::kudo_engine_config(),
        book_key_secret: Some((env.ns.clone(), "kudo-manager-render-key".into())),
        clock: clock.clone(),
        ..ControllerConfig::default()
    });
    let ov = env
        .install_operator_version(fixture("side-op"))
        .await
        .unwrap();
    let instance: Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1",
        "kind": "Instance",
        "metadata": {"name": "dt", "namespace": env.ns},
        "spec": {
            "operatorVersion": {"name": ov},
            "maintenanceWindows": [{
                "days": "*", "start": "02:00", "end": "02:30", "timeZone": "UTC",
                "kind": "Downtime",
            }],
        },
    }))
    .unwrap();
    env.instances()
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();
    // deploy declares no downtime: it runs at noon.
    env.wait_for("dt", "deploy COMPLETE", T, |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();

    env.patch_spec(
        "dt",
        json!({"planExecution": {"planName": "restart", "uid": "restart-1"}}),
    )
    .await
    .unwrap();
    let waiting = env
        .wait_for("dt", "restart waiting for the downtime window", T, |i| {
            i.status.as_ref().is_some_and(|s| {
                s.blockers.iter().any(|b| {
                    b.kind == BlockerKind::MaintenanceWindow
                        && b.message
                            .contains("downtime maintenance window closed until")
                })
            })
        })
        .await
        .unwrap();
    let st = waiting.status.unwrap();
    let blocker = st
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::MaintenanceWindow)
        .unwrap();
    assert_eq!(
        blocker.until.as_ref().map(|t| t.0),
        Some(opens),
        "{blocker:?}"
    );
    assert_ne!(
        st.plan_status.get("restart").and_then(|p| p.uid.as_deref()),
        Some("restart-1"),
        "restart has not started"
    );

    clock.set(opens + jiff::SignedDuration::from_secs(5));
    env.instances()
        .patch(
            "dt",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/poke": "1"}}})),
        )
        .await
        .unwrap();
    env.wait_for("dt", "restart COMPLETE inside the window", T, |i| {
        plan_status(i, "restart") == Some(S::Complete)
            && i.status
                .as_ref()
                .and_then(|s| s.plan_status.get("restart"))
                .and_then(|p| p.uid.as_deref())
                == Some("restart-1")
    })
    .await
    .unwrap();
}
