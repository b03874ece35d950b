//! `install` and `upgrade` through the binary against kudo-sandbox:
//! packages whose KudoOperator tasks name other packages (what is written
//! without a manager, then a whole install run by the manager),
//! `--in-cluster`, and `--create-namespace` with a namespace manifest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{run_with, transcript};
use kube::Api;
use kudo_api::{ExecutionStatus, Instance, Operator, OperatorVersion};
use kudo_sandbox::Sandbox;

async fn sandbox_with_crds() -> Sandbox {
    let sandbox = Sandbox::start().await.unwrap();
    let output = run_with(sandbox.kubeconfig_path(), &["init", "--crd-only"]);
    assert!(output.status.success(), "{}", transcript(&output));
    sandbox
}

/// Writes a package with one Apply task and a KudoOperator task per
/// `(task, package)` dependency.
fn write_package(dir: &Path, name: &str, version: &str, deps: &[(&str, &str)]) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    let mut tasks =
        String::from("  - name: cm\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\n");
    let mut steps = String::from("          - name: cm\n            tasks: [cm]\n");
    for (task, package) in deps {
        tasks.push_str(&format!(
            "  - name: {task}\n    kind: KudoOperator\n    spec:\n      package: \"{package}\"\n"
        ));
        steps.push_str(&format!(
            "          - name: {task}\n            tasks: [{task}]\n"
        ));
    }
    std::fs::write(
        dir.join("operator.yaml"),
        format!(
            "name: {name}\noperatorVersion: {version}\nkubernetesVersion: 1.27.0\n\
             tasks:\n{tasks}plans:\n  deploy:\n    strategy: serial\n    phases:\n      \
             - name: main\n        strategy: serial\n        steps:\n{steps}"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("params.yaml"), "parameters: []\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n",
    )
    .unwrap();
}

async fn names<K>(sandbox: &Sandbox) -> Vec<String>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(sandbox.client().unwrap(), "default");
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(kube::ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

async fn task_spec(sandbox: &Sandbox, ov: &str, task: &str) -> kudo_api::TaskSpec {
    let api: Api<OperatorVersion> = Api::namespaced(sandbox.client().unwrap(), "default");
    let ov = api.get(ov).await.unwrap();
    ov.spec
        .tasks
        .into_iter()
        .find(|t| t.name == task)
        .unwrap()
        .spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_creates_dependencies_from_folders_first_and_points_the_tasks_at_them() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("leaf"), "leaf", "1.0.0", &[]);
    write_package(
        &tmp.path().join("mid"),
        "mid",
        "0.2.0",
        &[("leaf", "../leaf")],
    );
    let app = tmp.path().join("app");
    write_package(&app, "app", "0.1.0", &[("mid", "../mid")]);

    let output = run_with(
        sandbox.kubeconfig_path(),
        &["install", app.to_str().unwrap()],
    );

    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    let leaf = text
        .find("operatorversion default/leaf-1.0.0 created")
        .unwrap();
    let mid = text
        .find("operatorversion default/mid-0.2.0 created")
        .unwrap();
    let root = text
        .find("operatorversion default/app-0.1.0 created")
        .unwrap();
    assert!(leaf < mid && mid < root, "{text}");
    assert_eq!(names::<Operator>(&sandbox).await, ["app", "leaf", "mid"]);
    // Only the package asked for gets an Instance; its plan makes the others.
    assert_eq!(names::<Instance>(&sandbox).await, ["app-instance"]);
    let spec = task_spec(&sandbox, "app-0.1.0", "mid").await;
    assert_eq!(spec.package.as_deref(), Some("mid"));
    assert_eq!(spec.operator_version.as_deref(), Some("0.2.0"));
    let spec = task_spec(&sandbox, "mid-0.2.0", "leaf").await;
    assert_eq!(spec.package.as_deref(), Some("leaf"));
    assert_eq!(spec.operator_version.as_deref(), Some("1.0.0"));

    // Installing again leaves the dependencies as they are.
    let again = run_with(
        sandbox.kubeconfig_path(),
        &["install", app.to_str().unwrap(), "--instance", "second"],
    );
    let text = transcript(&again);
    assert!(again.status.success(), "{text}");
    assert!(
        text.contains(
            "operatorversion default/leaf-1.0.0 is installed already, with the same content"
        ),
        "{text}"
    );

    // An edited package under the same version is refused, naming what
    // differs, before anything is written.
    let leaf_template = std::fs::read_dir(tmp.path().join("leaf/templates"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut edited = std::fs::read_to_string(&leaf_template).unwrap();
    edited.push_str("# edited\n");
    std::fs::write(&leaf_template, edited).unwrap();
    let refused = run_with(
        sandbox.kubeconfig_path(),
        &["install", app.to_str().unwrap(), "--instance", "third"],
    );
    let text = transcript(&refused);
    assert_eq!(refused.status.code(), Some(1), "{text}");
    let file = leaf_template.file_name().unwrap().to_string_lossy();
    assert!(
        text.contains(&format!(
            "operatorversion default/leaf-1.0.0 is installed with other content than this \
             package (templates/{file} differs)"
        )),
        "{text}"
    );
    assert!(
        text.contains("Give the package a new operatorVersion"),
        "{text}"
    );
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    assert!(
        api.get_opt("third").await.unwrap().is_none(),
        "nothing written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_named_without_a_folder_must_be_installed_already() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("app");
    write_package(&app, "app", "0.1.0", &[("db", "db")]);

    let output = run_with(
        sandbox.kubeconfig_path(),
        &["install", app.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    let text = transcript(&output);
    assert!(
        text.contains("task db (KudoOperator) needs operator db")
            && text.contains("not installed in namespace default")
            && text.contains("--skip-instance"),
        "{text}"
    );
    assert!(
        names::<Operator>(&sandbox).await.is_empty(),
        "nothing written"
    );

    // Installed first (as its own package, no Instance), it is found.
    let db = tmp.path().join("elsewhere/db");
    write_package(&db, "db", "2.1.0", &[]);
    let installed = run_with(
        sandbox.kubeconfig_path(),
        &["install", db.to_str().unwrap(), "--skip-instance"],
    );
    assert!(installed.status.success(), "{}", transcript(&installed));
    let output = run_with(
        sandbox.kubeconfig_path(),
        &["install", app.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", transcript(&output));
    let spec = task_spec(&sandbox, "app-0.1.0", "db").await;
    assert_eq!(spec.operator_version.as_deref(), Some("2.1.0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packages_that_need_each_other_are_refused_before_anything_is_written() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("a"), "a", "1.0.0", &[("b", "../b")]);
    write_package(&tmp.path().join("b"), "b", "1.0.0", &[("a", "../a")]);

    let output = run_with(
        sandbox.kubeconfig_path(),
        &["install", tmp.path().join("a").to_str().unwrap()],
    );

    assert_eq!(output.status.code(), Some(1));
    assert!(
        transcript(&output).contains("cyclic package dependency: a-1.0.0 -> b-1.0.0 -> a-1.0.0"),
        "{}",
        transcript(&output)
    );
    assert!(names::<Operator>(&sandbox).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_installs_a_dependency_the_new_version_adds() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("v1"), "app", "0.1.0", &[]);
    write_package(&tmp.path().join("extra"), "extra", "0.3.0", &[]);
    write_package(
        &tmp.path().join("v2"),
        "app",
        "0.2.0",
        &[("extra", "../extra")],
    );
    let kubeconfig = sandbox.kubeconfig_path();
    let v1 = run_with(
        kubeconfig,
        &["install", tmp.path().join("v1").to_str().unwrap()],
    );
    assert!(v1.status.success(), "{}", transcript(&v1));

    let output = run_with(
        kubeconfig,
        &[
            "upgrade",
            tmp.path().join("v2").to_str().unwrap(),
            "--instance",
            "app-instance",
        ],
    );

    assert!(output.status.success(), "{}", transcript(&output));
    assert_eq!(
        names::<OperatorVersion>(&sandbox).await,
        ["app-0.1.0", "app-0.2.0", "extra-0.3.0"]
    );
    let spec = task_spec(&sandbox, "app-0.2.0", "extra").await;
    assert_eq!(spec.package.as_deref(), Some("extra"));
}

fn deploy_status(instance: &Instance) -> Option<ExecutionStatus> {
    let plans = &instance.status.as_ref()?.plan_status;
    plans.get("deploy").and_then(|p| p.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_manager_runs_a_parent_installed_with_its_folder_dependency() {
    let sandbox = sandbox_with_crds().await;
    let manager = common::Manager::start(&sandbox);
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("child"), "child", "0.4.0", &[]);
    let parent = tmp.path().join("parent");
    write_package(&parent, "parent", "0.1.0", &[("kid", "../child")]);

    let output = run_with(
        sandbox.kubeconfig_path(),
        &[
            "install",
            parent.to_str().unwrap(),
            "--instance",
            "p",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );

    assert!(output.status.success(), "{}", transcript(&output));
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    let child = api.get("p-child").await.unwrap();
    assert_eq!(
        child.spec.operator_version.name.as_deref(),
        Some("child-0.4.0")
    );
    assert_eq!(deploy_status(&child), Some(ExecutionStatus::Complete));
    let parent = api.get("p").await.unwrap();
    assert_eq!(deploy_status(&parent), Some(ExecutionStatus::Complete));
    manager.stop().await;
}

#[test]
fn render_shows_the_child_instance_as_the_install_will_write_it() {
    let tmp = tempfile::tempdir().unwrap();
    write_package(&tmp.path().join("child"), "child", "0.4.0", &[]);
    let parent = tmp.path().join("parent");
    write_package(&parent, "parent", "0.1.0", &[("kid", "../child")]);

    let output = common::run(&["package", "render", parent.to_str().unwrap()]);

    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("# deploy/main/kid/kid (KudoOperator)")
            && text.contains("name: parent-instance-child")
            && text.contains("operatorVersion:\n    name: child-0.4.0"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_in_cluster_makes_an_instance_of_an_installed_version() {
    let sandbox = sandbox_with_crds().await;
    let kubeconfig = sandbox.kubeconfig_path();
    let tmp = tempfile::tempdir().unwrap();
    for version in ["2.1.0", "2.10.0"] {
        let dir = tmp.path().join(version);
        write_package(&dir, "db", version, &[]);
        let output = run_with(
            kubeconfig,
            &["install", dir.to_str().unwrap(), "--skip-instance"],
        );
        assert!(output.status.success(), "{}", transcript(&output));
    }
    let operator_version = |name: &str| {
        let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
        let name = name.to_string();
        async move {
            let instance = api.get(&name).await.unwrap();
            instance.spec.operator_version.name.unwrap_or_default()
        }
    };

    let newest = run_with(kubeconfig, &["install", "db", "--in-cluster"]);
    assert!(newest.status.success(), "{}", transcript(&newest));
    assert_eq!(operator_version("db-instance").await, "db-2.10.0");

    let older = run_with(
        kubeconfig,
        &[
            "install",
            "db",
            "--in-cluster",
            "--operator-version",
            "2.1.0",
            "--instance",
            "old",
        ],
    );
    assert!(older.status.success(), "{}", transcript(&older));
    assert_eq!(operator_version("old").await, "db-2.1.0");

    let missing = run_with(
        kubeconfig,
        &[
            "install",
            "db",
            "--in-cluster",
            "--operator-version",
            "3.0.0",
        ],
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        transcript(&missing).contains(
            "operator db version 3.0.0 is not installed in namespace default \
             (installed: db-2.1.0, db-2.10.0)"
        ),
        "{}",
        transcript(&missing)
    );

    for usage in [
        &["install", "db", "--in-cluster", "--skip-instance"][..],
        &["install", "./db", "--operator-version", "2.1.0"][..],
    ] {
        let output = run_with(kubeconfig, usage);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{usage:?}: {}",
            transcript(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_namespace_renders_the_packages_namespace_manifest() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("web");
    write_package(&dir, "web", "0.2.0", &[]);
    let operator = std::fs::read_to_string(dir.join("operator.yaml")).unwrap();
    std::fs::write(
        dir.join("operator.yaml"),
        format!("namespaceManifest: ns.yaml\n{operator}"),
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/ns.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: whatever\n  labels:\n    \
         owner: {{ .Params.OWNER }}\n    instance: {{ .Name }}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("params.yaml"),
        "parameters:\n  - name: OWNER\n    default: nobody\n",
    )
    .unwrap();

    let output = run_with(
        sandbox.kubeconfig_path(),
        &[
            "install",
            dir.to_str().unwrap(),
            "-n",
            "team-a",
            "--create-namespace",
            "-p",
            "OWNER=alice",
        ],
    );

    assert!(output.status.success(), "{}", transcript(&output));
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(sandbox.client().unwrap());
    let ns = api.get("team-a").await.unwrap();
    let labels = ns.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("owner").map(String::as_str), Some("alice"));
    assert_eq!(
        labels.get("instance").map(String::as_str),
        Some("web-instance")
    );
    let annotations = ns.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("created-by").map(String::as_str),
        Some("kudo-cli")
    );
    let instances: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "team-a");
    assert!(instances.get_opt("web-instance").await.unwrap().is_some());

    // Without -p OWNER the manifest cannot render (no defaults, as in
    // KUDO): refused before anything is written.
    let output = run_with(
        sandbox.kubeconfig_path(),
        &[
            "install",
            dir.to_str().unwrap(),
            "-n",
            "team-b",
            "--create-namespace",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        transcript(&output).contains("namespace manifest ns.yaml:")
            && transcript(&output).contains("not defaults"),
        "{}",
        transcript(&output)
    );
    assert!(api.get_opt("team-b").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_for_a_newer_kubernetes_is_refused_before_anything_is_written() {
    let sandbox = sandbox_with_crds().await;
    let tmp = tempfile::tempdir().unwrap();
    write_package(tmp.path(), "future", "1.0.0", &[]);
    let path = tmp.path().join("operator.yaml");
    let operator = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        operator.replace("kubernetesVersion: 1.27.0", "kubernetesVersion: 1.99.0"),
    )
    .unwrap();

    let output = run_with(
        sandbox.kubeconfig_path(),
        &["install", tmp.path().to_str().unwrap()],
    );

    assert_eq!(output.status.code(), Some(1));
    assert!(
        transcript(&output).contains(
            "package future needs Kubernetes 1.99 or newer (kubernetesVersion 1.99.0), \
             but the cluster runs 1.32"
        ),
        "{}",
        transcript(&output)
    );
    assert!(names::<Operator>(&sandbox).await.is_empty());
}
