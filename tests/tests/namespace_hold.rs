//! Namespace-wide suppression, end to end: when more Instances of a
//! namespace than its threshold are automatically suppressed after
//! failures, an automatic plan of another Instance there waits with a
//! blocker and one Event, and starts by itself once a suppression is
//! cleared. The Namespace's annotation sets the threshold; a malformed one
//! is said in status and the manager's applies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kudo_api::{BlockerKind, ExecutionStatus as S, Instance};
use kudo_e2e::{Env, fixture, plan_status};
use serde_json::json;

fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(60))
}

/// A GREETING that breaks the rendered ConfigMap, so `reconfigure` fails.
const BROKEN_GREETING: &str = "broken\"quote";

async fn annotate(env: &Env, threshold: &str) {
    env.api_all::<Namespace>()
        .patch(
            &env.ns,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "kudo.dev/suppression-threshold": threshold
            }}})),
        )
        .await
        .unwrap();
}

async fn deployed(env: &Env, name: &str) {
    env.install_deployed(fixture("e2e-op-v1"), name, &[("GREETING", "good")], t())
        .await
        .unwrap();
}

async fn failed(env: &Env, name: &str) {
    deployed(env, name).await;
    env.patch_spec(name, json!({"parameters": {"GREETING": BROKEN_GREETING}}))
        .await
        .unwrap();
    env.wait_for(name, "automatically suppressed", t(), |i| {
        i.status
            .as_ref()
            .is_some_and(|s| s.auto_suppression.is_some())
    })
    .await
    .unwrap();
}

fn blocker_with(i: &Instance, text: &str) -> Option<String> {
    i.status
        .as_ref()?
        .blockers
        .iter()
        .find(|b| b.message.contains(text))
        .map(|b| format!("{:?}: {}", b.kind, b.message))
}

async fn events_with_reason(env: &Env, reason: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::events::v1::Event> = env.api();
    events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.note)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_threshold_holds_automatic_plans_and_lifts_when_a_suppression_is_cleared() {
    let env = Env::start().await.unwrap();
    // Malformed: said in status, and the manager's threshold (3) applies.
    annotate(&env, "lots").await;
    failed(&env, "bad-a").await;
    failed(&env, "bad-b").await;
    deployed(&env, "web").await;
    let web = env
        .wait_for("web", "the malformed annotation named", t(), |i| {
            blocker_with(i, "\"lots\" is not a threshold").is_some()
        })
        .await
        .unwrap();
    assert!(
        blocker_with(&web, "holds automatic plans").is_none(),
        "two suppressed are within the manager's threshold of 3"
    );

    // At most one tolerated: two suppressed hold web's parameter change.
    annotate(&env, "1").await;
    env.patch_spec("web", json!({"parameters": {"GREETING": "hello"}}))
        .await
        .unwrap();
    let held = env
        .wait_for("web", "held by the namespace", t(), |i| {
            blocker_with(i, "holds automatic plans").is_some()
        })
        .await
        .unwrap();
    let message = blocker_with(&held, "holds automatic plans").unwrap();
    assert!(message.starts_with("Suppressed:"), "{message}");
    for part in [
        "2 Instances are automatically suppressed",
        "threshold 1",
        "kudo.dev/suppression-threshold",
        "bad-a, bad-b",
    ] {
        assert!(message.contains(part), "{part:?} missing: {message}");
    }
    assert_ne!(plan_status(&held, "reconfigure"), Some(S::InProgress));
    assert_ne!(
        held.status
            .as_ref()
            .and_then(|s| s.applied_parameters.as_ref())
            .and_then(|p| p.get("GREETING"))
            .map(String::as_str),
        Some("hello"),
        "the held change did not run"
    );
    let events = tokio::time::timeout(t(), async {
        loop {
            let found = events_with_reason(&env, "NamespaceSuppressed").await;
            if !found.is_empty() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("no NamespaceSuppressed Event");
    assert!(events[0].contains("threshold 1"), "{events:?}");

    // Clearing one suppression drops the count to the threshold: web's
    // change starts by itself (the watch wakes it; nothing else would).
    env.patch_spec(
        "bad-a",
        json!({"planOperations": [{"id": "clear-1", "action": "clearSuppression", "reason": "fixed"}]}),
    )
    .await
    .unwrap();
    let done = env
        .wait_for("web", "the held change ran", t(), |i| {
            i.status
                .as_ref()
                .and_then(|s| s.applied_parameters.as_ref())
                .and_then(|p| p.get("GREETING"))
                .is_some_and(|g| g == "hello")
                && plan_status(i, "reconfigure") == Some(S::Complete)
        })
        .await
        .unwrap();
    assert!(
        !done
            .status
            .unwrap()
            .blockers
            .iter()
            .any(|b| b.kind == BlockerKind::Suppressed),
        "the hold is gone"
    );
}
