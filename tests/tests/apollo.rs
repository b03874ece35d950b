//! End-to-end: Apollo-style operations (automatic suppression on failure,
//! rollback, history, blockers, maintenance windows) with the in-process
//! controller against the sandbox, in real time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use kudo_api::{BlockerKind, ExecutionStatus as S, Instance};
use kudo_e2e::{Env, fixture, plan_status};
use kudo_manager::clock::Clock;
use kudo_manager::controller::ControllerConfig;
use serde_json::json;

/// Wait budget (longer on a real cluster, see `kudo_e2e::timeout`).
fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(30))
}

/// A GREETING that breaks the rendered ConfigMap YAML, so the `reconfigure`
/// plan it triggers ends FATAL_ERROR.
const BROKEN_GREETING: &str = "broken\"quote";

fn has_blocker(inst: &Instance, kind: BlockerKind) -> bool {
    inst.status
        .as_ref()
        .is_some_and(|s| s.blockers.iter().any(|b| b.kind == kind))
}

fn suppressed(inst: &Instance) -> bool {
    inst.status
        .as_ref()
        .is_some_and(|s| s.auto_suppression.is_some())
}

/// Install `name` with GREETING=good, wait for deploy, then let a GREETING
/// change make `reconfigure` fail; returns the failed Instance.
async fn deployed_then_failed(env: &Env, name: &str) -> Instance {
    env.install_deployed(fixture("e2e-op-v1"), name, &[("GREETING", "good")], t())
        .await
        .unwrap();
    env.patch_spec(name, json!({"parameters": {"GREETING": BROKEN_GREETING}}))
        .await
        .unwrap();
    env.wait_for(name, "reconfigure FATAL_ERROR", t(), |i| {
        plan_status(i, "reconfigure") == Some(S::FatalError)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn failed_plan_suppresses_parameter_changes_until_the_suppression_is_cleared() {
    let env = Env::start().await.unwrap();
    let failed = deployed_then_failed(&env, "sup").await;
    let st = failed.status.clone().unwrap();
    let auto = st
        .auto_suppression
        .as_ref()
        .expect("a FATAL_ERROR plan sets status.autoSuppression");
    assert_eq!(auto.plan.as_deref(), Some("reconfigure"));

    // A new parameter change does not start its plan while suppressed.
    let failed_uid = st.plan_status["reconfigure"].uid.clone();
    env.patch_spec("sup", json!({"parameters": {"GREETING": "third"}}))
        .await
        .unwrap();
    let blocked = env
        .wait_for("sup", "a Suppressed blocker", t(), |i| {
            has_blocker(i, BlockerKind::Suppressed)
        })
        .await
        .unwrap();
    let bst = blocked.status.clone().unwrap();
    assert_eq!(
        bst.plan_status["reconfigure"].status,
        Some(S::FatalError),
        "the suppressed change must not start reconfigure"
    );
    assert_eq!(bst.plan_status["reconfigure"].uid, failed_uid);
    assert!(bst.auto_suppression.is_some());

    // clearSuppression lets the queued change run.
    env.patch_spec(
        "sup",
        json!({"planOperations": [{"id": "clear-1", "action": "clearSuppression", "reason": "fixed"}]}),
    )
    .await
    .unwrap();
    let done = env
        .wait_for("sup", "reconfigure COMPLETE after clearing", t(), |i| {
            plan_status(i, "reconfigure") == Some(S::Complete)
        })
        .await
        .unwrap();
    let dst = done.status.unwrap();
    assert!(dst.auto_suppression.is_none(), "{:?}", dst.auto_suppression);
    assert!(
        !dst.blockers
            .iter()
            .any(|b| b.kind == BlockerKind::Suppressed),
        "{:?}",
        dst.blockers
    );
    assert_eq!(
        dst.applied_parameters
            .unwrap()
            .get("GREETING")
            .map(String::as_str),
        Some("third")
    );
    assert!(dst.operations.iter().any(|o| o.id == "clear-1"));
}

#[tokio::test]
async fn rollback_to_last_successful_runs_despite_suppression_and_is_recorded() {
    let env = Env::start().await.unwrap();
    let failed = deployed_then_failed(&env, "rb").await;
    assert!(suppressed(&failed));
    let last = failed.status.unwrap().last_successful.unwrap();
    assert_eq!(
        last.parameters.get("GREETING").map(String::as_str),
        Some("good")
    );

    // Write the last successful configuration back to spec.
    env.patch_spec(
        "rb",
        json!({
            "operatorVersion": {"name": last.operator_version},
            "parameters": last.parameters,
        }),
    )
    .await
    .unwrap();
    let done = env
        .wait_for("rb", "rollback COMPLETE", t(), |i| {
            plan_status(i, "reconfigure") == Some(S::Complete)
        })
        .await
        .unwrap();
    let st = done.status.unwrap();
    let run = st
        .history
        .iter()
        .rev()
        .find(|r| r.plan == "reconfigure")
        .unwrap();
    assert_eq!(run.trigger, "rollback", "{:?}", st.history);
    assert_eq!(run.result, Some(S::Complete));
    assert!(
        st.history
            .iter()
            .any(|r| r.plan == "reconfigure" && r.result == Some(S::FatalError)),
        "the failed run stays in history: {:?}",
        st.history
    );
    assert!(
        st.auto_suppression.is_none(),
        "a successful rollback clears it"
    );
    assert_eq!(
        st.last_successful
            .unwrap()
            .parameters
            .get("GREETING")
            .map(String::as_str),
        Some("good")
    );
}

#[tokio::test]
async fn plan_waits_for_the_maintenance_window_and_runs_when_it_opens() {
    // The manager's clock is set 20 s before a window opens and moved past
    // the opening once the closed window is seen: no real minute to wait for.
    let mut env = Env::start_without_controller().await.unwrap();
    let clock = Clock::settable();
    let opens: jiff::Timestamp = "2031-03-04T02:00:00Z".parse().unwrap();
    clock.set(opens - jiff::SignedDuration::from_secs(20));
    env.start_controller_with(ControllerConfig {
        engine: kudo_e2e::kudo_engine_config(),
        book_key_secret: Some((env.ns.clone(), "kudo-manager-render-key".into())),
        clock: clock.clone(),
        ..ControllerConfig::default()
    });
    let ov = env
        .install_operator_version(fixture("e2e-op-v1"))
        .await
        .unwrap();
    let instance: Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1",
        "kind": "Instance",
        "metadata": {"name": "mw", "namespace": env.ns},
        "spec": {
            "operatorVersion": {"name": ov},
            "maintenanceWindows": [{
                "days": "*",
                "start": "02:00",
                "end": "02:10",
                "timeZone": "UTC",
            }],
        },
    }))
    .unwrap();
    env.instances()
        .create(&PostParams::default(), &instance)
        .await
        .unwrap();

    let waiting = env
        .wait_for("mw", "a MaintenanceWindow blocker", t(), |i| {
            has_blocker(i, BlockerKind::MaintenanceWindow)
        })
        .await
        .unwrap();
    assert!(
        clock.now() < opens,
        "observed the blocker only after the window opened"
    );
    let st = waiting.status.unwrap();
    let blocker = st
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::MaintenanceWindow)
        .unwrap();
    assert_eq!(
        blocker.until.as_ref().map(|t| t.0),
        Some(opens),
        "the blocker names the next opening: {blocker:?}"
    );
    assert_ne!(
        st.plan_status.get("deploy").and_then(|p| p.status),
        Some(S::Complete)
    );
    assert_ne!(
        st.plan_status.get("deploy").and_then(|p| p.status),
        Some(S::InProgress)
    );

    // The window opens; a change to the Instance brings the manager back
    // before the requeue it chose for the opening would.
    clock.advance(jiff::SignedDuration::from_secs(25));
    env.instances()
        .patch(
            "mw",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/poke": "1"}}})),
        )
        .await
        .unwrap();
    let done = env
        .wait_for("mw", "deploy COMPLETE after the window opens", t(), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await
        .unwrap();
    let deploy = &done.status.as_ref().unwrap().plan_status["deploy"];
    let started = deploy.phases[0].steps[0].started_at.as_ref().unwrap();
    assert!(
        started.0 >= opens,
        "first step started at {started:?}, before the window opened at {opens}"
    );
    assert!(!has_blocker(&done, BlockerKind::MaintenanceWindow));
}
