//! Recovery of drift: objects a plan applied that are deleted, or whose
//! fields kudo-manager owns are changed by another field manager, are
//! re-applied by the `recovery` plan from the stored render; fields it does
//! not own are left alone; recovery backs off from a fighting controller.
//! Recovery beside a running plan: `side_by_side.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use kudo_api::{ExecutionStatus as S, Instance, PlanRun};
use kudo_e2e::{Env, fixture, plan_status};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

fn recoveries(i: &Instance) -> Vec<PlanRun> {
    i.status
        .as_ref()
        .map(|s| {
            s.history
                .iter()
                .filter(|r| r.plan == "recovery")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn completed_recoveries(i: &Instance) -> usize {
    recoveries(i)
        .iter()
        .filter(|r| r.result == Some(S::Complete))
        .count()
}

async fn deployed(env: &Env, name: &str) -> Instance {
    env.install_deployed(fixture("e2e-op-v1"), name, &[], T)
        .await
        .unwrap()
}

/// A merge patch as another field manager (an operator's own controller,
/// a person with kubectl).
async fn patch_as(env: &Env, manager: &str, name: &str, patch: serde_json::Value) {
    let params = PatchParams {
        field_manager: Some(manager.into()),
        ..PatchParams::default()
    };
    env.api::<ConfigMap>()
        .patch(name, &params, &Patch::Merge(patch))
        .await
        .unwrap();
}

async fn greeting(env: &Env, name: &str) -> Option<String> {
    env.api::<ConfigMap>()
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|c| c.data)
        .and_then(|d| d.get("greeting").cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_deployment_is_recovered_and_shows_in_history() {
    let env = Env::start().await.unwrap();
    deployed(&env, "del").await;
    let before = env.api::<Deployment>().get("del-app").await.unwrap();
    env.api::<Deployment>()
        .delete("del-app", &DeleteParams::default())
        .await
        .unwrap();
    let inst = env
        .wait_for("del", "recovery COMPLETE", T, |i| {
            completed_recoveries(i) == 1
        })
        .await
        .unwrap();
    let run = &recoveries(&inst)[0];
    assert_eq!(
        run.trigger,
        format!("Deployment {}/del-app deleted", env.ns)
    );
    let after = env.api::<Deployment>().get("del-app").await.unwrap();
    assert_ne!(after.metadata.uid, before.metadata.uid, "created anew");
    let image = |d: &Deployment| {
        serde_json::to_value(d).unwrap()["spec"]["template"]["spec"]["containers"][0]["image"]
            .clone()
    };
    assert_eq!(image(&after), image(&before));
    let ps = &inst.status.as_ref().unwrap().plan_status["recovery"];
    assert_eq!(ps.phases[0].name, format!("Deployment {}/del-app", env.ns));
    // The deploy plan's own record is untouched: no plan re-ran.
    assert_eq!(plan_status(&inst, "deploy"), Some(S::Complete));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_owned_field_is_restored_and_an_unowned_field_is_left_alone() {
    let env = Env::start().await.unwrap();
    deployed(&env, "own").await;
    // A label kudo-manager never set: not drift.
    patch_as(
        &env,
        "labeller",
        "own-config",
        json!({"metadata": {"labels": {"team": "blue"}}}),
    )
    .await;
    // No wait here: the watch delivers the label change before the data
    // change below, so a manager that took the label for drift would have
    // recovered it first, and the one recovery checked below would name it.

    // A value kudo-manager applied: drift, restored as deploy left it.
    patch_as(
        &env,
        "intruder",
        "own-config",
        json!({"data": {"greeting": "hacked"}}),
    )
    .await;
    let inst = env
        .wait_for("own", "recovery COMPLETE", T, |i| {
            completed_recoveries(i) == 1
        })
        .await
        .unwrap();
    assert_eq!(recoveries(&inst).len(), 1, "{:?}", recoveries(&inst));
    assert_eq!(
        recoveries(&inst)[0].trigger,
        format!(
            "ConfigMap {}/own-config: .data.greeting changed by intruder",
            env.ns
        )
    );
    assert_eq!(greeting(&env, "own-config").await.as_deref(), Some("hello"));
    let cm = env.api::<ConfigMap>().get("own-config").await.unwrap();
    assert_eq!(
        cm.metadata.labels.unwrap().get("team").map(String::as_str),
        Some("blue"),
        "the unowned label stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fighting_controller_makes_recovery_back_off_and_warn() {
    let env = Env::start().await.unwrap();
    deployed(&env, "fight").await;
    // Another controller sets the value back each time kudo-manager restores it.
    let fighter = {
        let api = env.api::<ConfigMap>();
        tokio::spawn(async move {
            let params = PatchParams {
                field_manager: Some("fighter".into()),
                ..PatchParams::default()
            };
            loop {
                let patch = Patch::Merge(json!({"data": {"greeting": "mine"}}));
                let _ = api.patch("fight-config", &params, &patch).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        })
    };
    let inst = env
        .wait_for("fight", "three recoveries", T, |i| recoveries(i).len() >= 3)
        .await
        .unwrap();
    let times: Vec<i64> = recoveries(&inst)
        .iter()
        .map(|r| r.started.0.as_millisecond())
        .collect();
    let gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // Test backoff base 1 s: at least 1 s, then at least 2 s between starts.
    assert!(gaps[0] >= 950, "{gaps:?}");
    assert!(gaps[1] >= 1950, "{gaps:?}");
    let events: kube::Api<k8s_openapi::api::events::v1::Event> = env.api();
    let warned = tokio::time::timeout(T, async {
        loop {
            let list = events.list(&Default::default()).await.unwrap();
            if let Some(e) = list
                .items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("RecoveryRepeated"))
            {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("no RecoveryRepeated Event");
    assert_eq!(warned.type_.as_deref(), Some("Warning"));
    let inst = env
        .wait_for("fight", "a backoff blocker", T, |i| {
            i.status.as_ref().is_some_and(|s| {
                s.blockers
                    .iter()
                    .any(|b| b.kind == kudo_api::BlockerKind::Backoff)
            })
        })
        .await
        .unwrap();
    let blocker = inst.status.unwrap().blockers[0].message.clone();
    assert!(blocker.contains("changed by fighter"), "{blocker}");
    fighter.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_recovery_disabled_leaves_a_deletion_alone() {
    let env = Env::start().await.unwrap();
    deployed(&env, "off").await;
    // A witness with recovery on: its repair shows the manager has handled
    // the deletions.
    deployed(&env, "on").await;
    env.patch_spec("off", json!({"recovery": "Disabled"}))
        .await
        .unwrap();
    for name in ["off-config", "on-config"] {
        env.api::<ConfigMap>()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    // One ConfigMap watch delivers the two deletions in this order, and the
    // witness's repair takes a re-apply and status writes: a manager that
    // ignored `Disabled` would have started recovering "off" by then.
    env.wait_for("on", "the witness recovered", T, |i| {
        completed_recoveries(i) == 1
    })
    .await
    .unwrap();
    let inst = env.instances().get("off").await.unwrap();
    assert!(recoveries(&inst).is_empty(), "{:?}", recoveries(&inst));
    assert!(greeting(&env, "off-config").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_render_survives_a_manager_restart() {
    let mut env = Env::start().await.unwrap();
    deployed(&env, "keep").await;
    env.stop_controller().await.unwrap();
    env.api::<ConfigMap>()
        .delete("keep-config", &DeleteParams::default())
        .await
        .unwrap();
    env.start_controller();
    env.wait_for("keep", "recovery by the new manager", T, |i| {
        completed_recoveries(i) == 1
    })
    .await
    .unwrap();
    assert_eq!(
        greeting(&env, "keep-config").await.as_deref(),
        Some("hello")
    );
}

/// A render book a tenant planted before creating the Instance: one entry
/// whose watched object is a missing ConfigMap but whose render is a
/// binding to cluster-admin, one rendering a ConfigMap in another
/// namespace. It is not signed with the manager's key, so recovery never
/// applies it: after a real recovery of this Instance neither object exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_render_book_is_never_applied() {
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
    use kube::api::PostParams;
    use std::io::Write;

    let env = Env::start().await.unwrap();
    let other = format!("{}-b", env.ns);
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": other}})).unwrap();
    let _ = kube::Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &namespace)
        .await;
    let entries = json!([
        {
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": env.ns, "name": "decoy"},
            "plan": "deploy",
            "render": {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "kudo-e2e-planted"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": env.ns}]
            },
            "fields": {}
        },
        {
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": other, "name": "foreign"},
            "plan": "deploy",
            "render": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "foreign", "namespace": other}},
            "fields": {}
        }
    ]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(entries.to_string().as_bytes()).unwrap();
    let book = gz.finish().unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "evil.kudo-renders"},
        "data": {"renders.json.gz": k8s_openapi::ByteString(book)},
    }))
    .unwrap();
    // A tenant of the namespace plants the book, then installs the package.
    let tenant = env.tenant(&env.ns, "mallory").await.unwrap();
    kube::Api::<Secret>::namespaced(tenant.clone(), &env.ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    kudo_manager::install::install_package(
        &tenant,
        &fixture("e2e-op-v1"),
        &env.ns,
        Some(kudo_manager::install::InstanceRequest {
            name: Some("evil".into()),
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    env.wait_for("evil", "deploy COMPLETE", T, |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    // A real drift: once its recovery completes, the book has been read and
    // any entry it trusted would have been recovered too.
    env.api::<Deployment>()
        .delete("evil-app", &DeleteParams::default())
        .await
        .unwrap();
    let inst = env
        .wait_for("evil", "recovery COMPLETE", T, |i| {
            completed_recoveries(i) == 1
        })
        .await
        .unwrap();
    assert_eq!(
        recoveries(&inst)[0].trigger,
        format!("Deployment {}/evil-app deleted", env.ns)
    );
    let planted = kube::Api::<ClusterRoleBinding>::all(env.client.clone())
        .get_opt("kudo-e2e-planted")
        .await
        .unwrap();
    assert!(planted.is_none(), "the planted binding was applied");
    let foreign = kube::Api::<ConfigMap>::namespaced(env.client.clone(), &other)
        .get_opt("foreign")
        .await
        .unwrap();
    assert!(
        foreign.is_none(),
        "an object of another namespace was applied"
    );
}
