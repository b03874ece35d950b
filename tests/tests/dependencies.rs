//! Dependency constraints between Instances, end to end: two operators
//! of one repository (`db`, and `app`, which needs `db`), both tracked
//! by Instances of one namespace. A channel move that would leave a
//! requirement unmet is held with a reason naming both Instances and the
//! range, on either side, and starts by itself once the other side has
//! moved (the manager wakes it; no recheck timer is involved, the
//! dependency hold is not one the manager looks at again by time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kudo_e2e::Env;
use kudo_e2e::channel_repo::{Repo, closed_window, reason, runs, t, upgrades};
use serde_json::json;

fn needs_db(range: &str) -> String {
    format!("dependencies:\n  - operator: db\n    versions: \"{range}\"\n")
}

/// Installs `name` from the repository's folder of `operator` 0.2.0 and
/// lets it track the repository.
async fn tracked(env: &Env, repo: &Repo, operator: &str, extra: &str, policy: serde_json::Value) {
    let folder = repo.folder(operator, "0.2.0", extra);
    env.install_deployed(folder.clone(), operator, &[], t())
        .await
        .unwrap();
    std::fs::remove_dir_all(folder).unwrap();
    env.patch_spec(operator, json!({"upgrades": policy}))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependent_needing_a_newer_dependency_waits_until_the_dependency_moves() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish_as("db", "0.2.0", "");
    repo.publish_as("app", "0.2.0", &needs_db(">=0.2.0 <1"));
    let name = format!("deps-{}", env.ns);
    repo.follow(&env, &name).await;
    tracked(&env, &repo, "db", "", json!({"repository": name})).await;
    tracked(
        &env,
        &repo,
        "app",
        &needs_db(">=0.2.0 <1"),
        json!({"repository": name}),
    )
    .await;
    // db moves only when its window is opened by hand below.
    env.patch_spec("db", json!({"maintenanceWindows": closed_window()}))
        .await
        .unwrap();

    repo.publish_as("app", "0.3.0", &needs_db(">=0.3.0 <1"));
    repo.publish_as("db", "0.3.0", "");
    env.wait_for("app", "held for db", t(), |i| {
        reason(i)
            == "channel stable: 0.2.0 → 0.3.0: app 0.3.0 needs db >=0.3.0 <1; Instance db runs 0.2.0"
    })
    .await
    .unwrap();
    env.wait_for("db", "held by its window", t(), |i| {
        reason(i).contains("waiting for the maintenance window")
    })
    .await
    .unwrap();

    env.patch_spec("db", json!({"maintenanceWindows": null}))
        .await
        .unwrap();
    env.wait_for("db", "db running 0.3.0", t(), |i| {
        runs(i, "db-1.27.0-0.3.0")
    })
    .await
    .unwrap();
    let moved = env
        .wait_for("app", "app running 0.3.0", t(), |i| {
            runs(i, "app-1.27.0-0.3.0")
        })
        .await
        .unwrap();
    assert_eq!(
        upgrades(&moved).last_change.as_deref(),
        Some("channel stable: 0.2.0 → 0.3.0")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_move_that_would_break_a_dependent_waits_until_the_dependent_moves() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish_as("db", "0.2.0", "");
    repo.publish_as("app", "0.2.0", &needs_db(">=0.2.0 <0.3.0"));
    let name = format!("deps-{}", env.ns);
    repo.follow(&env, &name).await;
    tracked(&env, &repo, "db", "", json!({"repository": name})).await;
    // app names the Instance that satisfies it (one db exists anyway).
    tracked(
        &env,
        &repo,
        "app",
        &needs_db(">=0.2.0 <0.3.0"),
        json!({"repository": name, "dependencies": {"db": "db"}}),
    )
    .await;
    env.patch_spec("app", json!({"maintenanceWindows": closed_window()}))
        .await
        .unwrap();

    repo.publish_as("db", "0.3.0", "");
    repo.publish_as("app", "0.3.0", &needs_db(">=0.2.0 <1"));
    env.wait_for("db", "held for app", t(), |i| {
        reason(i)
            == "channel stable: 0.2.0 → 0.3.0: db 0.3.0 would break Instance app, \
                which needs db >=0.2.0 <0.3.0"
    })
    .await
    .unwrap();

    env.patch_spec("app", json!({"maintenanceWindows": null}))
        .await
        .unwrap();
    env.wait_for("app", "app running 0.3.0", t(), |i| {
        runs(i, "app-1.27.0-0.3.0")
    })
    .await
    .unwrap();
    env.wait_for("db", "db running 0.3.0", t(), |i| {
        runs(i, "db-1.27.0-0.3.0")
    })
    .await
    .unwrap();
}
