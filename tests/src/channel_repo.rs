//! What the end-to-end tests of Instances that track a channel share: a
//! repository of first-operator versions (renamed where a test needs
//! several operators) served on loopback and followed by an
//! OperatorRepository, and readers of `status.upgrades`.
//! Test support: it panics on what a test would not survive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::PostParams;
use kudo_api::{ExecutionStatus as S, Instance, OperatorRepository, OperatorRepositorySpec};
use kudo_repo_client::test_support::{Reply, TestServer, file_reply};
use serde_json::json;

use crate::{Env, operator};

pub fn t() -> Duration {
    crate::timeout(Duration::from_secs(90))
}

/// A repository folder of first-operator versions, served on loopback.
pub struct Repo {
    dir: tempfile::TempDir,
    server: TestServer,
    recalls: Vec<(String, String)>,
}

impl Default for Repo {
    fn default() -> Self {
        Self::new()
    }
}

impl Repo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = TestServer::serve_dir(dir.path());
        Self {
            dir,
            server,
            recalls: Vec::new(),
        }
    }

    /// Like [`Repo::new`], over TLS with a CA of its own (returned), and
    /// answering only requests that carry the token `token` holds now.
    pub fn behind_token(token: Arc<Mutex<String>>) -> (Self, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let (server, ca) = TestServer::start_tls(move |seen| {
            let expected = format!("Bearer {}", token.lock().unwrap());
            if seen.header("authorization") == Some(expected.as_str()) {
                file_reply(&root, &seen.path)
            } else {
                Reply::Body(401, b"a token is needed".to_vec())
            }
        });
        let repo = Self {
            dir,
            server,
            recalls: Vec::new(),
        };
        (repo, ca)
    }

    /// The server, and what it was asked.
    pub fn server(&self) -> &TestServer {
        &self.server
    }

    /// Publishes first-operator at `version` (stable channel) and indexes.
    pub fn publish(&self, version: &str) {
        self.publish_as("first-operator", version, "");
    }

    /// first-operator renamed `name` at `version`, with `extra` (YAML)
    /// appended to its operator.yaml, as a folder under the repository's
    /// directory (not served: only archives are indexed).
    pub fn folder(&self, name: &str, version: &str, extra: &str) -> PathBuf {
        let src = self.dir.path().join(format!("src-{name}-{version}"));
        for (rel, bytes) in
            kudo_repo::packages::collect_folder(&operator("first-operator")).unwrap()
        {
            let path = src.join(&rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut text = String::from_utf8(bytes).unwrap().replace(
                "operatorVersion: 0.2.0",
                &format!("operatorVersion: {version}"),
            );
            if rel == "operator.yaml" {
                text = text.replace("name: first-operator", &format!("name: {name}"));
                text.push_str(extra);
            }
            std::fs::write(path, text).unwrap();
        }
        src
    }

    /// Publishes [`Repo::folder`] and indexes.
    pub fn publish_as(&self, name: &str, version: &str, extra: &str) {
        self.publish_folder(&self.folder(name, version, extra));
    }

    /// Publishes first-operator at `version` whose deploy fails: it runs a
    /// Job that fails (on a real cluster its command exits 1; the sandbox
    /// fails it as the annotation tells it to).
    pub fn publish_broken(&self, version: &str) {
        let src = self.folder("first-operator", version, "");
        let job = "apiVersion: batch/v1
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
";
        std::fs::write(src.join("templates").join("deployment.yaml"), job).unwrap();
        self.publish_folder(&src);
    }

    /// Publishes first-operator at `version` with a file of `padding`
    /// bytes beside its templates: a package that unpacks to that much more.
    pub fn publish_padded(&self, version: &str, padding: usize) {
        let src = self.folder("first-operator", version, "");
        std::fs::write(src.join("padding.bin"), vec![0u8; padding]).unwrap();
        self.publish_folder(&src);
    }

    /// Packages the folder `src` into the repository, removes it, indexes.
    fn publish_folder(&self, src: &std::path::Path) {
        let created = kudo_repo::packages::create(src).unwrap();
        std::fs::write(self.dir.path().join(&created.file_name), &created.bytes).unwrap();
        std::fs::remove_dir_all(src).unwrap();
        self.index();
    }

    pub fn recall(&mut self, range: &str, reason: &str) {
        self.recalls.push((range.into(), reason.into()));
        self.index();
    }

    pub fn index(&self) {
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
    pub async fn follow(&self, env: &Env, name: &str) {
        self.follow_with(env, name, None).await;
    }

    /// The same, with the Secret `secret` (token, CA).
    pub async fn follow_with(&self, env: &Env, name: &str, secret: Option<&str>) {
        self.follow_spec(
            env,
            name,
            OperatorRepositorySpec {
                secret_name: secret.map(str::to_owned),
                ..self.spec()
            },
        )
        .await;
    }

    /// The spec of an OperatorRepository for it, synced every 10 s.
    pub fn spec(&self) -> OperatorRepositorySpec {
        OperatorRepositorySpec {
            url: self.server.url(),
            interval: Some("10s".into()),
            ..OperatorRepositorySpec::default()
        }
    }

    /// An OperatorRepository `name` for it with `spec`.
    pub async fn follow_spec(&self, env: &Env, name: &str, spec: OperatorRepositorySpec) {
        let repo = OperatorRepository::new(name, spec);
        env.api_all::<OperatorRepository>()
            .create(&PostParams::default(), &repo)
            .await
            .unwrap();
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

pub fn upgrades(i: &Instance) -> kudo_api::upgrades::UpgradeStatus {
    i.status
        .as_ref()
        .and_then(|s| s.upgrades.clone())
        .unwrap_or_default()
}

pub fn reason(i: &Instance) -> String {
    upgrades(i).reason.unwrap_or_default()
}

pub fn runs(i: &Instance, ov: &str) -> bool {
    let st = i.status.as_ref();
    st.and_then(|s| s.applied_operator_version.as_deref()) == Some(ov)
        && st
            .and_then(|s| s.active_plan.as_ref())
            .is_some_and(|p| p.status == S::Complete)
}

pub async fn deployed(env: &Env, name: &str, policy: serde_json::Value) {
    env.install_deployed(operator("first-operator"), name, &[], t())
        .await
        .unwrap();
    env.patch_spec(name, json!({"upgrades": policy}))
        .await
        .unwrap();
}

pub const NEW_OV: &str = "first-operator-1.27.0-0.3.0";

/// Today's weekday is never in this window, so it is closed now.
pub fn closed_window() -> serde_json::Value {
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
