//! Instances that track a channel, end to end: a repository served on
//! loopback and followed by an OperatorRepository; a version published to
//! it is installed by the manager once every hold allows (maintenance
//! window), `Manual` waits for the approval in spec, and an Instance on a
//! recalled version rolls forward when a fixed one appears; a failing
//! release suppresses the Instance, a rollback works across that, and the
//! version rolled back from is not installed again by itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use kudo_api::{ExecutionStatus as S, Instance, OperatorRepository, OperatorRepositorySpec};
use kudo_e2e::{Env, operator, plan_status};
use kudo_repo_client::test_support::TestServer;
use serde_json::json;

fn t() -> Duration {
    kudo_e2e::timeout(Duration::from_secs(90))
}

/// A repository folder of first-operator versions, served on loopback.
struct Repo {
    dir: tempfile::TempDir,
    server: TestServer,
    recalls: Vec<(String, String)>,
}

impl Repo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::serve_dir(dir.path());
        Self {
            dir,
            server,
            recalls: Vec::new(),
        }
    }

    /// Publishes first-operator at `version` (stable channel) and indexes.
    fn publish(&self, version: &str) {
        self.publish_with(version, |_, text| text);
    }

    /// Publishes a release whose deploy fails: it runs a Job that fails (on
    /// a real cluster its command exits 1; the sandbox fails it as told).
    fn publish_broken(&self, version: &str) {
        self.publish_with(version, |rel, text| {
            if !rel.ends_with("deployment.yaml") {
                return text;
            }
            "apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Name }}-migrate
  annotations:
    sandbox.kudo.dev/fail: \"true\"
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.36
          command: [\"false\"]
"
            .to_string()
        });
    }

    /// [`Repo::publish`], each file's text passed through `edit` with its
    /// path in the package.
    fn publish_with(&self, version: &str, edit: impl Fn(&str, String) -> String) {
        let src = self.dir.path().join(format!("src-{version}"));
        for (rel, bytes) in
            kudo_repo::packages::collect_folder(&operator("first-operator")).unwrap()
        {
            let path = src.join(&rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text = edit(
                &rel,
                String::from_utf8(bytes).unwrap().replace(
                    "operatorVersion: 0.2.0",
                    &format!("operatorVersion: {version}"),
                ),
            );
            std::fs::write(path, text).unwrap();
        }
        let created = kudo_repo::packages::create(&src).unwrap();
        std::fs::write(self.dir.path().join(&created.file_name), &created.bytes).unwrap();
        std::fs::remove_dir_all(&src).unwrap();
        self.index();
    }

    fn recall(&mut self, range: &str, reason: &str) {
        self.recalls.push((range.into(), reason.into()));
        self.index();
    }

    fn index(&self) {
        let (mut index, _) =
            kudo_repo::packages::index_folder(self.dir.path(), None, None).unwrap();
        for (range, reason) in &self.recalls {
            index.add_recall(
                "first-operator",
                kudo_repo::channels::Recall::new(range, reason).unwrap(),
            );
        }
        let tmp = self.dir.path().join("index.yaml.tmp");
        std::fs::write(&tmp, index.to_yaml().unwrap()).unwrap();
        std::fs::rename(tmp, self.dir.path().join("index.yaml")).unwrap();
    }

    /// An OperatorRepository for it, synced every 10 s.
    async fn follow(&self, env: &Env, name: &str) {
        let repo = OperatorRepository::new(
            name,
            OperatorRepositorySpec {
                url: self.server.url(),
                interval: Some("10s".into()),
                secret_name: None,
            },
        );
        env.api_all::<OperatorRepository>()
            .create(&PostParams::default(), &repo)
            .await
            .unwrap();
    }

    #[allow(dead_code)]
    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

fn upgrades(i: &Instance) -> kudo_api::upgrades::UpgradeStatus {
    i.status
        .as_ref()
        .and_then(|s| s.upgrades.clone())
        .unwrap_or_default()
}

fn reason(i: &Instance) -> String {
    upgrades(i).reason.unwrap_or_default()
}

fn runs(i: &Instance, ov: &str) -> bool {
    let st = i.status.as_ref();
    st.and_then(|s| s.applied_operator_version.as_deref()) == Some(ov)
        && st
            .and_then(|s| s.active_plan.as_ref())
            .is_some_and(|p| p.status == S::Complete)
}

async fn deployed(env: &Env, name: &str, policy: serde_json::Value) {
    env.install(operator("first-operator"), name, &[])
        .await
        .unwrap();
    env.wait_for(name, "deploy COMPLETE", t(), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
    env.patch_spec(name, json!({"upgrades": policy}))
        .await
        .unwrap();
}

const NEW_OV: &str = "first-operator-1.27.0-0.3.0";

/// Today's weekday is never in this window, so it is closed now.
fn closed_window() -> serde_json::Value {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .weekday();
    let day = if today == jiff::civil::Weekday::Sunday {
        "Mon"
    } else {
        "Sun"
    };
    json!([{"days": day, "start": "00:00", "end": "23:59"}])
}

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

const OLD_OV: &str = "first-operator-1.27.0-0.2.0";

fn history_reason(i: &Instance) -> Option<String> {
    i.status.as_ref()?.history.last()?.reason.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_release_suppresses_and_the_version_rolled_back_from_is_not_installed_again() {
    let env = Env::start().await.unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    let name = format!("failing-{}", env.ns);
    repo.follow(&env, &name).await;
    deployed(&env, "web", json!({"repository": name})).await;
    env.wait_for("web", "nothing newer", t(), |i| {
        reason(i).contains("is the newest in channel stable")
    })
    .await
    .unwrap();

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
}
