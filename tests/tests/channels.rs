//! Instances that track a channel, end to end: a repository served on
//! loopback and followed by an OperatorRepository; a version published to
//! it is installed by the manager once every hold allows (maintenance
//! window), `Manual` waits for the approval in spec, and an Instance on a
//! recalled version rolls forward when a fixed one appears; a repository
//! serves only the namespaces it lists; removing the
//! tracking never moves an Instance back to the older version spec names;
//! a repository behind a token and its own CA works; a manager killed
//! mid-upgrade finishes the move once; a failing release suppresses the
//! Instance, a rollback works across that, and the version rolled back
//! from is not installed again by itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kudo_api::Instance;
use kudo_e2e::channel_repo::{NEW_OV, Repo, closed_window, deployed, reason, runs, t, upgrades};
use kudo_e2e::{Cluster, Env, plan_uid};
use kudo_sandbox::Faults;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_serves_only_the_namespaces_it_lists() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    repo.publish("0.3.0");
    let name = format!("listed-{}", env.ns);
    let elsewhere = kudo_api::OperatorRepositorySpec {
        allowed_namespaces: vec!["another-team".into()],
        ..repo.spec()
    };
    repo.follow_spec(&env, &name, elsewhere).await;
    deployed(&env, "web", json!({"repository": name})).await;
    let refused = env
        .wait_for("web", "not served", t(), |i| {
            reason(i).contains("does not serve namespace")
        })
        .await
        .unwrap();
    assert_eq!(
        reason(&refused),
        format!(
            "repository {name} does not serve namespace {}: its spec.allowedNamespaces does not \
             list it (a cluster administrator decides which namespaces may use a repository)",
            env.ns
        )
    );
    assert!(!runs(&refused, NEW_OV));

    env.api_all::<kudo_api::OperatorRepository>()
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"allowedNamespaces": ["another-team", env.ns]}})),
        )
        .await
        .unwrap();
    // No change to the Instance: the repository's change reconciles the
    // Instances that track it.
    env.wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_spec_upgrades_keeps_the_version_the_channel_installed() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    repo.publish("0.3.0");
    let name = format!("leave-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(&env, "web", json!({"repository": name})).await;
    let moved = env
        .wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
    let run = |i: &Instance| {
        i.status
            .as_ref()
            .and_then(|s| s.active_plan.as_ref())
            .map(|p| p.uid.clone())
    };
    let upgrade_run = run(&moved);

    // spec.operatorVersion still names 0.2.0: removing the tracking must
    // not move the Instance back to it.
    env.patch_spec("web", json!({"upgrades": null}))
        .await
        .unwrap();
    let left = env
        .wait_for("web", "staying on 0.3.0", t(), |i| {
            reason(i).starts_with(&format!(
                "spec.upgrades is unset: the Instance stays on {NEW_OV}"
            ))
        })
        .await
        .unwrap();
    assert!(runs(&left, NEW_OV));
    assert_eq!(run(&left), upgrade_run, "no plan ran");

    // Naming it in spec makes it explicit: status.upgrades goes, and
    // nothing runs either.
    env.patch_spec("web", json!({"operatorVersion": {"name": NEW_OV}}))
        .await
        .unwrap();
    let explicit = env
        .wait_for("web", "status.upgrades gone", t(), |i| {
            i.status.as_ref().is_some_and(|s| s.upgrades.is_none())
        })
        .await
        .unwrap();
    assert!(runs(&explicit, NEW_OV));
    assert_eq!(run(&explicit), upgrade_run, "no plan ran");
}

/// The manager's Secret for a repository: a token and the CA.
async fn repository_secret(env: &Env, name: &str, token: &str, ca: &str) {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": env.ns},
        "stringData": {"token": token, "ca.crt": ca},
    });
    env.api::<k8s_openapi::api::core::v1::Secret>()
        .patch(
            name,
            &PatchParams::apply("kudo-e2e").force(),
            &Patch::Apply(secret),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_behind_a_token_and_its_own_ca_is_followed_and_a_new_token_is_used_at_once() {
    let env = Env::start().await.unwrap();
    let token = Arc::new(Mutex::new("first".to_string()));
    let (repo, ca) = Repo::behind_token(token.clone());
    repo.publish("0.2.0");
    repo.publish("0.3.0");
    let name = format!("login-{}", env.ns);
    let secret = format!("{name}-access");
    repository_secret(&env, &secret, "first", &ca).await;
    repo.follow_with(&env, &name, Some(&secret)).await;
    deployed(
        &env,
        "web",
        json!({"repository": name, "approval": "Manual"}),
    )
    .await;
    env.wait_for("web", "offered 0.3.0", t(), |i| {
        reason(i).contains("waiting for approval")
    })
    .await
    .unwrap();

    // The token changes on the server, then in the Secret; the index stays
    // the same, and the download after the approval must use the new one.
    *token.lock().unwrap() = "second".into();
    repository_secret(&env, &secret, "second", &ca).await;
    let logged_in_again = || {
        repo.server()
            .seen()
            .iter()
            .any(|s| s.header("authorization") == Some("Bearer second"))
    };
    tokio::time::timeout(t(), async {
        while !logged_in_again() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("the repository was not synced with the new token");
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

/// How many `UpgradeStarted` Events were recorded (repeats included).
async fn upgrades_started(env: &Env) -> i32 {
    let events: kube::Api<k8s_openapi::api::events::v1::Event> = env.api();
    events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("UpgradeStarted"))
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum()
}

/// Deploys `web` tracking repository `repository` and waits until its
/// channel has nothing newer for it.
async fn web_on_the_newest(env: &Env, repository: &str) {
    deployed(env, "web", json!({"repository": repository})).await;
    env.wait_for("web", "nothing newer", t(), |i| {
        reason(i).contains("is the newest in channel stable")
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_killed_mid_upgrade_finishes_the_move_once_after_a_restart() {
    let mut env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    let name = format!("kill-{}", env.ns);
    repo.follow(&env, &name).await;
    web_on_the_newest(&env, &name).await;
    // Slow requests keep the upgrade running when the manager dies.
    if let Cluster::Sandbox(sandbox) = &env.sandbox {
        sandbox.set_faults(Faults::none().latency(Duration::from_millis(150)));
    }
    repo.publish("0.3.0");
    let moving = env
        .wait_for("web", "the move recorded", t(), |i| {
            upgrades(i).operator_version.as_deref() == Some(NEW_OV)
        })
        .await
        .unwrap();
    env.stop_controller().await.unwrap();
    let at_kill = env.instances().get("web").await.unwrap();
    let run = |i: &Instance| plan_uid(i, "deploy");
    if let Cluster::Sandbox(sandbox) = &env.sandbox {
        sandbox.set_faults(Faults::none());
    }
    env.start_controller();
    let done = env
        .wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();
    if !runs(&at_kill, NEW_OV) {
        // The run the killed manager started is the one that finished.
        assert_eq!(run(&done), run(&at_kill), "the upgrade started again");
    }
    let history = &done.status.as_ref().unwrap().history;
    let upgrades_run = history.iter().filter(|r| r.trigger == "upgrade").count();
    assert_eq!(upgrades_run, 1, "{history:#?}");
    assert_eq!(upgrades_started(&env).await, 1);
    assert_eq!(
        upgrades(&done).last_change,
        upgrades(&moving).last_change,
        "one move, recorded once"
    );
}

const OLD_OV: &str = "first-operator-1.27.0-0.2.0";

fn history_reason(i: &Instance) -> Option<String> {
    i.status.as_ref()?.history.last()?.reason.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_release_suppresses_and_the_version_rolled_back_from_is_not_installed_again() {
    let env = Env::start().await.unwrap();
    let mut repo = Repo::new();
    repo.publish("0.2.0");
    let name = format!("failing-{}", env.ns);
    repo.follow(&env, &name).await;
    web_on_the_newest(&env, &name).await;

    repo.publish_broken("0.3.0");
    let failed = env
        .wait_for("web", "suppressed after the upgrade failed", t(), |i| {
            i.status.as_ref().is_some_and(|s| {
                s.auto_suppression.is_some()
                    && s.applied_operator_version.as_deref() == Some(NEW_OV)
            })
        })
        .await
        .unwrap();
    assert_eq!(
        history_reason(&failed).as_deref(),
        Some("channel stable: 0.2.0 → 0.3.0"),
        "history says why the upgrade ran"
    );
    let last = failed.status.clone().unwrap().last_successful.unwrap();
    assert_eq!(last.operator_version, OLD_OV);

    // What `kubectl kudo rollback` writes for an Instance the channel moved:
    // the last successful configuration, and the version it leaves.
    env.patch_spec(
        "web",
        json!({
            "operatorVersion": {"name": last.operator_version},
            "upgrades": {"rolledBackFrom": "0.3.0"},
        }),
    )
    .await
    .unwrap();
    let back = env
        .wait_for("web", "rolled back to 0.2.0", t(), |i| {
            runs(i, OLD_OV)
                && i.status
                    .as_ref()
                    .and_then(|s| s.history.last())
                    .is_some_and(|r| r.trigger == "rollback")
        })
        .await
        .unwrap();
    let st = back.status.clone().unwrap();
    assert!(
        st.auto_suppression.is_none(),
        "a successful rollback clears it"
    );
    assert_eq!(
        history_reason(&back).as_deref(),
        Some(format!("operatorVersion {NEW_OV} → {OLD_OV}").as_str())
    );

    let skipping = env
        .wait_for("web", "0.3.0 skipped", t(), |i| {
            reason(i).contains("0.3.0 was left by hand")
        })
        .await
        .unwrap();
    assert_eq!(upgrades(&skipping).skipped.as_deref(), Some("0.3.0"));
    assert_eq!(upgrades(&skipping).installed.as_deref(), Some("0.2.0"));
    assert_eq!(
        skipping
            .status
            .as_ref()
            .and_then(|s| s.applied_operator_version.as_deref()),
        Some(OLD_OV),
        "not installed again by itself"
    );

    // A newer release is moved to as usual.
    repo.publish("0.4.0");
    env.wait_for("web", "running 0.4.0", t(), |i| {
        runs(i, "first-operator-1.27.0-0.4.0")
    })
    .await
    .unwrap();

    // A recall of 0.4.0 that may go back finds 0.3.0 the newest way out:
    // the version rolled back from is not moved to again, which would undo
    // the rollback.
    env.patch_spec("web", json!({"upgrades": {"allowDowngrade": true}}))
        .await
        .unwrap();
    repo.recall("0.4.0", "CVE-2026-2: leaks");
    let held = env
        .wait_for("web", "0.3.0 not moved to again", t(), |i| {
            reason(i).contains("0.3.0 was rolled back from by hand")
        })
        .await
        .unwrap();
    assert!(runs(&held, "first-operator-1.27.0-0.4.0"));
}
