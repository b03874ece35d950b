//! Instances that track a channel, end to end: a repository served on
//! loopback and followed by an OperatorRepository; a version published to
//! it is installed by the manager once every hold allows (maintenance
//! window), `Manual` waits for the approval in spec, and an Instance on a
//! recalled version rolls forward when a fixed one appears.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{NEW_OV, Repo, closed_window, deployed, reason, runs, t, upgrades};
use kube::api::{Patch, PatchParams};
use kudo_e2e::Env;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_version_is_installed_only_inside_the_maintenance_window() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    let name = format!("auto-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(&env, "web", json!({"repository": name})).await;
    env.patch_spec("web", json!({"maintenanceWindows": closed_window()}))
        .await
        .unwrap();
    let current = env
        .wait_for("web", "nothing newer", t(), |i| {
            reason(i).contains("is the newest in channel stable")
        })
        .await
        .unwrap();
    assert_eq!(upgrades(&current).installed.as_deref(), Some("0.2.0"));

    repo.publish("0.3.0");
    let held = env
        .wait_for("web", "held by the window", t(), |i| {
            reason(i).contains("waiting for the maintenance window")
        })
        .await
        .unwrap();
    assert!(
        reason(&held)
            .starts_with("channel stable: 0.2.0 → 0.3.0: waiting for the maintenance window at "),
        "{}",
        reason(&held)
    );
    assert_eq!(upgrades(&held).available.as_deref(), Some("0.3.0"));
    assert_ne!(
        held.status
            .as_ref()
            .and_then(|s| s.applied_operator_version.as_deref()),
        Some(NEW_OV)
    );

    env.instances()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maintenanceWindows": null}})),
        )
        .await
        .unwrap();
    let upgraded = env
        .wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
    let status = upgrades(&upgraded);
    assert_eq!(status.installed.as_deref(), Some("0.3.0"));
    assert_eq!(status.operator_version.as_deref(), Some(NEW_OV));
    assert_eq!(
        status.last_change.as_deref(),
        Some("channel stable: 0.2.0 → 0.3.0")
    );
    assert_eq!(
        upgraded.spec.operator_version.name.as_deref(),
        Some("first-operator-1.27.0-0.2.0"),
        "the manager never writes spec"
    );
    let ov = env
        .api::<kudo_api::OperatorVersion>()
        .get(NEW_OV)
        .await
        .unwrap();
    assert_eq!(ov.spec.version.as_deref(), Some("0.3.0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_approval_waits_for_the_version_a_person_approves() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    repo.publish("0.3.0");
    let name = format!("manual-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(
        &env,
        "web",
        json!({"repository": name, "approval": "Manual"}),
    )
    .await;
    env.wait_for("web", "waiting for approval", t(), |i| {
        reason(i)
            == "channel stable: 0.2.0 → 0.3.0: waiting for approval \
                (kubectl kudo upgrade approve --instance web 0.3.0)"
    })
    .await
    .unwrap();
    env.patch_spec(
        "web",
        json!({"upgrades": {"repository": name, "approval": "Manual", "approved": "0.3.0"}}),
    )
    .await
    .unwrap();
    env.wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_on_a_recalled_version_rolls_forward_when_a_fixed_one_appears() {
    let env = Env::start().await.unwrap();
    let mut repo = Repo::new();
    repo.publish("0.2.0");
    let name = format!("recall-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(&env, "web", json!({"repository": name})).await;
    repo.recall("0.2.0", "CVE-2026-1: data loss");
    env.wait_for("web", "recalled without a way out", t(), |i| {
        reason(i).starts_with("0.2.0 is recalled (CVE-2026-1: data loss) and no other version")
    })
    .await
    .unwrap();
    repo.publish("0.3.0");
    let moved = env
        .wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
    assert_eq!(
        upgrades(&moved).last_change.as_deref(),
        Some("recall of 0.2.0: CVE-2026-1: data loss (→ 0.3.0)")
    );
}
