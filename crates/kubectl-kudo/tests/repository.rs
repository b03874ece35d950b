//! Package repositories through the binary: a repository made from
//! operators/ with `package create` and `repo index`, served over HTTP on
//! loopback (and an OCI registry, Debian's docker-registry), used by `repo`,
//! `search`, `package`, and — against the sandbox with the real manager —
//! `install NAME`, `install NAME --operator-version RANGE`, `upgrade NAME`,
//! a dependency named by operator, and a tampered archive refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{kudo, stderr, stdout, transcript};
use kube::Api;
use kudo_api::{Instance, OperatorVersion};
use kudo_repo_client::test_support::{DockerRegistry, TestServer};

/// A client home: `$KUDO_HOME` and the cache inside a temporary folder.
struct Client {
    root: tempfile::TempDir,
}

impl Client {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("kudo")
    }

    fn command(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = kudo();
        cmd.env("KUDO_HOME", self.home())
            .env("XDG_CACHE_HOME", self.root.path().join("cache"))
            .args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(output.status.success(), "{args:?}: {}", transcript(&output));
        format!("{}{}", stdout(&output), stderr(&output))
    }

    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            transcript(&output)
        );
        let text = stderr(&output);
        assert!(
            !text.contains("os error"),
            "no OS error for a missing name: {text}"
        );
        text
    }
}

fn operators() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../operators")
}

fn operator(name: &str) -> String {
    operators().join(name).display().to_string()
}

/// first-operator at another operator version, in a new folder under `root`.
fn first_operator_at(version: &str, root: &Path) -> PathBuf {
    let dir = root.join(format!("first-operator-{version}"));
    let files = kudo_repo::packages::collect_folder(&operators().join("first-operator")).unwrap();
    for (rel, bytes) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = String::from_utf8(bytes).unwrap().replace(
            "operatorVersion: 0.2.0",
            &format!("operatorVersion: {version}"),
        );
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The repository of the worked example: first-operator 0.2.0 and 0.3.0,
/// zookeeper, and zk-monitor (which names zookeeper), made with the CLI.
fn make_repository(client: &Client) -> PathBuf {
    let repo = client.root.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let newer = first_operator_at("0.3.0", client.root.path());
    for package in [
        operator("first-operator"),
        newer.display().to_string(),
        operator("zookeeper"),
        operator("zk-monitor"),
    ] {
        let text = client.ok(&["package", "create", &package, "-d", repo.to_str().unwrap()]);
        assert!(text.contains(" written to "), "{text}");
    }
    let text = client.ok(&["repo", "index", repo.to_str().unwrap()]);
    assert!(text.contains("4 versions of 3 operators"), "{text}");
    repo
}

#[test]
fn package_create_names_the_archive_as_kudo_and_refuses_to_overwrite() {
    let client = Client::new();
    let dest = client.root.path().to_str().unwrap().to_string();
    let text = client.ok(&["package", "create", &operator("zookeeper"), "-d", &dest]);
    assert!(text.contains("zookeeper-3.9.2_0.1.0.tgz"), "{text}");
    let again = client.fails(&["package", "create", &operator("zookeeper"), "-d", &dest]);
    assert!(again.contains("exists; pass --overwrite"), "{again}");
    client.ok(&[
        "package",
        "create",
        &operator("zookeeper"),
        "-d",
        &dest,
        "--overwrite",
    ]);
    let verified = client.ok(&[
        "package",
        "verify",
        &format!("{dest}/zookeeper-3.9.2_0.1.0.tgz"),
    ]);
    assert!(verified.contains("is valid"), "{verified}");
}

#[test]
fn repo_commands_add_list_choose_update_and_remove() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    let url = server.url();

    let none = client.ok(&["repo", "list"]);
    assert!(none.contains("kubectl kudo repo add NAME URL"), "{none}");
    let added = client.ok(&["repo", "add", "local", &url]);
    assert!(
        added.contains(&format!(
            "repository local added ({url}/, 4 package versions)"
        )),
        "{added}"
    );
    assert!(added.contains("repository local is the default"), "{added}");
    let exists = client.fails(&["repo", "add", "local", &url]);
    assert!(
        exists.contains("repository local already exists"),
        "{exists}"
    );

    let unreachable = client.fails(&["repo", "add", "gone", "http://127.0.0.1:9"]);
    assert!(
        unreachable.contains("http://127.0.0.1:9/index.yaml"),
        "{unreachable}"
    );
    client.ok(&["repo", "add", "gone", "http://127.0.0.1:9", "--force"]);

    let list = client.ok(&["repo", "list"]);
    assert!(list.contains("*local"), "{list}");
    assert!(list.contains("gone"), "{list}");
    client.ok(&["repo", "context", "gone"]);
    assert!(client.ok(&["repo", "list"]).contains("*gone"));
    let update = client.run(&["repo", "update"]);
    assert_eq!(update.status.code(), Some(1));
    let text = format!("{}{}", stdout(&update), stderr(&update));
    assert!(
        text.contains("repository local: 4 package versions"),
        "{text}"
    );
    assert!(
        text.contains("repository gone: http://127.0.0.1:9/index.yaml"),
        "{text}"
    );
    client.ok(&["repo", "remove", "gone"]);
    let text = client.ok(&["repo", "list", "-o", "json"]);
    assert!(text.contains("\"name\": \"local\""), "{text}");
    assert!(!text.contains("gone"), "{text}");
    let kudo_file =
        std::fs::read_to_string(client.home().join("repository/repositories.yaml")).unwrap();
    assert!(
        kudo_file.contains("repoVersion: v1"),
        "KUDO's shape: {kudo_file}"
    );
}

#[test]
fn credentials_are_stored_for_the_user_only_and_never_printed() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    let output = client
        .command(&[
            "repo",
            "add",
            "private",
            &server.url(),
            "--username",
            "me",
            "--password-stdin",
        ])
        .write_stdin("s3cret-pass\n")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", transcript(&output));
    assert!(
        server
            .seen()
            .iter()
            .all(|s| s.header("authorization").is_some())
    );
    let list = client.ok(&["repo", "list"]);
    assert!(list.contains("credentials"), "{list}");
    for text in [
        transcript(&output),
        list,
        client.ok(&["repo", "list", "-o", "yaml"]),
        client.ok(&["search"]),
    ] {
        assert!(!text.contains("s3cret"), "{text}");
    }
    use std::os::unix::fs::PermissionsExt;
    let file = client.home().join("repository/credentials.yaml");
    assert_eq!(
        std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn search_lists_names_versions_and_repository() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    client.ok(&["repo", "add", "local", &server.url()]);
    let all = client.ok(&["search"]);
    insta::assert_snapshot!(all, @r"
    NAME             OPERATOR VERSION   APP VERSION   CHANNELS   REPOSITORY
    first-operator   0.3.0              1.27.0        stable     local
    zk-monitor       0.1.0              1.36.1        stable     local
    zookeeper        0.1.0              3.9.2         stable     local
    ");
    let versions = client.ok(&["search", "first", "--all-versions"]);
    assert!(
        versions.contains("0.3.0") && versions.contains("0.2.0"),
        "{versions}"
    );
    assert!(
        client
            .ok(&["search", "redis"])
            .contains("no package matches \"redis\"")
    );
}

#[test]
fn repo_index_writes_channels_and_recalls_and_search_says_why_a_version_is_hidden() {
    let client = Client::new();
    let repo = make_repository(&client);
    let dir = repo.to_str().unwrap();
    let text = client.ok(&[
        "repo",
        "index",
        dir,
        "--channels",
        "first-operator@0.3.0",
        "stable,beta",
        "--recall",
        "first-operator",
        "0.3.0",
        "CVE-2026-1: data loss on restart",
    ]);
    assert!(
        text.contains("first-operator@0.3.0: 1 version in channels stable,beta"),
        "{text}"
    );
    assert!(
        text.contains("first-operator 0.3.0 recalled: CVE-2026-1: data loss on restart"),
        "{text}"
    );
    let written = std::fs::read_to_string(repo.join("index.yaml")).unwrap();
    assert!(
        written.contains("kudo.dev/channels: stable,beta"),
        "{written}"
    );
    assert!(
        written.contains("recalls.kudo.dev/first-operator"),
        "{written}"
    );
    assert!(
        written.contains("kubeVersion: '>=1.27.0'")
            || written.contains("kubeVersion: \">=1.27.0\""),
        "operator.yaml's kubernetesVersion: {written}"
    );
    let server = TestServer::serve_dir(&repo);
    client.ok(&["repo", "add", "local", &server.url()]);
    let newest = client.ok(&["search", "first"]);
    insta::assert_snapshot!(newest, @r"
    NAME             OPERATOR VERSION   APP VERSION   CHANNELS   REPOSITORY   NOTES
    first-operator   0.2.0              1.27.0        stable     local        0.3.0 hidden: recalled: CVE-2026-1: data loss on restart
    ");
    let all = client.ok(&["search", "first", "--all-versions"]);
    insta::assert_snapshot!(all, @r"
    NAME             OPERATOR VERSION   APP VERSION   CHANNELS      REPOSITORY   NOTES
    first-operator   0.3.0              1.27.0        stable,beta   local        recalled: CVE-2026-1: data loss on restart
    first-operator   0.2.0              1.27.0        stable        local
    ");
    let old_cluster = client.ok(&["search", "zoo", "--kubernetes-version", "v1.26.3-gke.1"]);
    insta::assert_snapshot!(old_cluster, @r"
    NAME         OPERATOR VERSION   APP VERSION   CHANNELS   REPOSITORY   NOTES
    zk-monitor   0.1.0              1.36.1        stable     local        needs Kubernetes >=1.27.0, the cluster runs 1.26.3
    zookeeper    0.1.0              3.9.2         stable     local        needs Kubernetes >=1.27.0, the cluster runs 1.26.3
    ");
    let bad = client.run(&[
        "repo",
        "index",
        dir,
        "--recall",
        "first-operator",
        "1.x.2",
        "r",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", transcript(&bad));
    assert!(
        stderr(&bad).contains("--recall first-operator \"1.x.2\""),
        "{}",
        transcript(&bad)
    );
}

#[test]
fn package_commands_resolve_names_and_ranges_and_say_what_exists() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    client.ok(&["repo", "add", "local", &server.url()]);
    let text = client.ok(&[
        "package",
        "verify",
        "first-operator",
        "--operator-version",
        "~0.2",
    ]);
    assert!(
        text.contains("using first-operator 0.2.0 (app 1.27.0) from repository local"),
        "{text}"
    );
    assert!(text.contains("verified"), "{text}");
    let render = client.ok(&["package", "render", "zk-monitor"]);
    assert!(render.contains("name: zookeeper-3.9.2-0.1.0"), "{render}");
    let missing = client.fails(&[
        "package",
        "verify",
        "first-operator",
        "--operator-version",
        "1.3.x",
    ]);
    assert!(
        missing.contains("first-operator 1.3.x: no such version in repository local; newest is 0.3.0 (app 1.27.0)"),
        "{missing}"
    );
    let unknown = client.fails(&["package", "verify", "kafka"]);
    assert!(
        unknown.contains("kafka: no package of that name in repository local"),
        "{unknown}"
    );
    let bad_range = client.fails(&[
        "package",
        "verify",
        "first-operator",
        "--operator-version",
        "^^1",
    ]);
    assert!(bad_range.contains("not a version or range"), "{bad_range}");
}

#[test]
fn without_a_repository_a_name_says_how_to_add_one() {
    let client = Client::new();
    let text = client.fails(&["package", "verify", "kafka"]);
    assert!(
        text.contains("kafka is not a package folder or archive here, and no package repository is configured: add one with `kubectl kudo repo add NAME URL`"),
        "{text}"
    );
    let path = client.fails(&["package", "verify", "./kafka"]);
    assert!(
        path.contains("./kafka: no such package folder or archive"),
        "{path}"
    );
}

#[test]
fn a_local_folder_wins_over_a_repository_package_unless_repo_is_given() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    client.ok(&["repo", "add", "local", &server.url()]);
    let work = client.root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::rename(
        first_operator_at("9.9.9", client.root.path()),
        work.join("first-operator"),
    )
    .unwrap();
    let local = client
        .command(&["package", "verify", "first-operator"])
        .current_dir(&work)
        .output()
        .unwrap();
    let text = transcript(&local);
    assert!(
        text.contains(
            "note: using the local package first-operator (a local path wins over repositories"
        ),
        "{text}"
    );
    assert!(text.contains("version 9.9.9"), "{text}");
    let remote = client
        .command(&["package", "verify", "first-operator", "--repo", "local"])
        .current_dir(&work)
        .output()
        .unwrap();
    let text = transcript(&remote);
    assert!(
        text.contains("using first-operator 0.3.0 (app 1.27.0) from repository local"),
        "{text}"
    );
}

#[test]
fn repo_index_merges_another_index_keeping_local_entries() {
    let client = Client::new();
    let repo = make_repository(&client);
    let other = client.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    client.ok(&[
        "package",
        "create",
        &operator("first-operator"),
        "-d",
        other.to_str().unwrap(),
    ]);
    let merged = client.ok(&[
        "repo",
        "index",
        other.to_str().unwrap(),
        "--url",
        "https://mirror.example/ops",
        "--merge",
        repo.join("index.yaml").to_str().unwrap(),
    ]);
    assert!(merged.contains("3 versions kept from"), "{merged}");
    let index = std::fs::read_to_string(other.join("index.yaml")).unwrap();
    assert!(
        index.contains("https://mirror.example/ops/first-operator-1.27.0_0.2.0.tgz"),
        "the local entry wins: {index}"
    );
    assert!(
        index.contains("- first-operator-1.27.0_0.3.0.tgz"),
        "{index}"
    );
}

#[test]
fn packages_pushed_to_an_oci_registry_are_used_by_version() {
    let registry = DockerRegistry::start();
    let client = Client::new();
    let repo = make_repository(&client);
    let namespace = registry.namespace("ops");
    for file in [
        "first-operator-1.27.0_0.2.0.tgz",
        "first-operator-1.27.0_0.3.0.tgz",
    ] {
        let text = client.ok(&[
            "package",
            "push",
            repo.join(file).to_str().unwrap(),
            &namespace,
            "--plain-http",
        ]);
        assert!(
            text.contains(&format!("pushed {namespace}/first-operator:0.")),
            "{text}"
        );
    }
    let reference = format!("{namespace}/first-operator");
    let text = client.ok(&[
        "package",
        "verify",
        &reference,
        "--operator-version",
        "^0.2",
        "--plain-http",
    ]);
    assert!(
        text.contains("using first-operator 0.2.0 from oci://"),
        "{text}"
    );
    assert!(text.contains("@sha256:"), "digest-addressed: {text}");
    let newest = client.ok(&["package", "params", "list", &reference, "--plain-http"]);
    assert!(newest.contains("first-operator 0.3.0"), "{newest}");
}

fn registry_blob_tamper(repo: &Path, file: &str) {
    let path = repo.join(file);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

async fn operator_version_of(sandbox: &kudo_sandbox::Sandbox, instance: &str) -> String {
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.get(instance)
        .await
        .unwrap()
        .spec
        .operator_version
        .name
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn install_search_upgrade_and_a_dependency_by_name_from_a_loopback_repository() {
    let client = Client::new();
    let repo = make_repository(&client);
    let server = TestServer::serve_dir(&repo);
    let sandbox = kudo_sandbox::Sandbox::builder().start().await.unwrap();
    let kc = sandbox.kubeconfig_path().display().to_string();
    let with_kc = |args: &[&str]| {
        let mut all = vec!["--kubeconfig", kc.as_str()];
        all.extend_from_slice(args);
        all.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let ok = |args: &[&str]| {
        let args = with_kc(args);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        client.ok(&refs)
    };
    ok(&["init", "--crd-only"]);
    let manager = common::Manager::start(&sandbox);

    ok(&["repo", "add", "community", &server.url()]);
    assert!(ok(&["search", "first"]).contains("first-operator   0.3.0"));

    // A range picks the newest that fits; no version picks the newest.
    let text = ok(&[
        "install",
        "first-operator",
        "--operator-version",
        "~0.2",
        "--instance",
        "web",
        "--wait",
        "--wait-timeout",
        "60s",
    ]);
    assert!(
        text.contains("using first-operator 0.2.0 (app 1.27.0) from repository community"),
        "{text}"
    );
    assert_eq!(
        operator_version_of(&sandbox, "web").await,
        "first-operator-1.27.0-0.2.0"
    );
    ok(&["install", "first-operator", "--instance", "newest"]);
    assert_eq!(
        operator_version_of(&sandbox, "newest").await,
        "first-operator-1.27.0-0.3.0"
    );

    // upgrade NAME moves to the newest version.
    let text = ok(&[
        "upgrade",
        "first-operator",
        "--instance",
        "web",
        "--wait",
        "--wait-timeout",
        "60s",
    ]);
    assert!(text.contains("upgraded from 0.2.0 to 0.3.0"), "{text}");
    assert_eq!(
        operator_version_of(&sandbox, "web").await,
        "first-operator-1.27.0-0.3.0"
    );
    let again = client.run(
        &with_kc(&["upgrade", "first-operator", "--instance", "web"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(
        stderr(&again).contains("already runs version 0.3.0"),
        "{}",
        transcript(&again)
    );

    // zk-monitor names zookeeper: it comes from the repository and the task
    // is pinned to the exact version.
    let text = ok(&["install", "zk-monitor", "--wait", "--wait-timeout", "90s"]);
    assert!(text.contains("dependency of zk-monitor-1.36.1-0.1.0 (task zookeeper): using zookeeper 0.1.0 (app 3.9.2) from repository community"), "{text}");
    let ovs: Api<OperatorVersion> = Api::namespaced(sandbox.client().unwrap(), "default");
    let parent = ovs.get("zk-monitor-1.36.1-0.1.0").await.unwrap();
    let task = parent
        .spec
        .tasks
        .iter()
        .find(|t| t.name == "zookeeper")
        .unwrap();
    assert_eq!(task.spec.operator_version.as_deref(), Some("0.1.0"));
    assert_eq!(task.spec.app_version.as_deref(), Some("3.9.2"));
    assert!(ovs.get("zookeeper-3.9.2-0.1.0").await.is_ok());
    let instances: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    assert!(
        instances.get("zk-monitor-instance-zookeeper").await.is_ok(),
        "the child Instance"
    );

    // A tampered archive is refused and nothing is created.
    registry_blob_tamper(&repo, "first-operator-1.27.0_0.2.0.tgz");
    let args = with_kc(&[
        "install",
        "first-operator",
        "--operator-version",
        "0.2.0",
        "--instance",
        "tampered",
    ]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = client.fails(&refs);
    assert!(
        text.contains("first-operator-1.27.0_0.2.0.tgz: sha256 digest"),
        "{text}"
    );
    assert!(text.contains("the package was refused"), "{text}");
    assert!(instances.get_opt("tampered").await.unwrap().is_none());

    manager.stop().await;
}
