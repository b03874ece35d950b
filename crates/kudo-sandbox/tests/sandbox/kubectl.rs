//! The installed kubectl against the sandbox. Each test is skipped, with a
//! message, when kubectl is not on PATH.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, PostParams};
use kudo_sandbox::Sandbox;

struct Kubectl {
    _sandbox: Sandbox,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

fn kubectl_missing() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("kubectl").is_file()));
    if !found {
        eprintln!("SKIPPED: kubectl is not on PATH");
    }
    !found
}

impl Kubectl {
    async fn start() -> Self {
        let sandbox = Sandbox::builder()
            .ready_delay(Duration::from_millis(20))
            .start()
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        sandbox.write_kubeconfig(&kubeconfig).unwrap();
        Self {
            _sandbox: sandbox,
            kubeconfig,
            dir,
        }
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    async fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap()
            .unwrap()
    }

    /// Runs kubectl and returns stdout, failing the test on a non-zero exit.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run_env(args, &[]).await;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs kubectl expecting failure and returns stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let out = self.run_env(args, &[]).await;
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded"
        );
        String::from_utf8_lossy(&out.stderr).to_string()
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  labels:\n    app: demo\ndata:\n  color: blue\n  size: large\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_and_get_work() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let resources = k.ok(&["api-resources"]).await;
    let deploy = resources
        .lines()
        .find(|l| l.starts_with("deployments"))
        .unwrap();
    assert!(deploy.contains("deploy") && deploy.contains("apps/v1") && deploy.contains("true"));
    let ns = k.ok(&["get", "namespaces"]).await;
    assert!(ns.contains("default") && ns.contains("Active"), "{ns}");
    let version = k.ok(&["version"]).await;
    assert!(version.contains("Server Version"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_get_patch_describe_delete_cycle() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let f = k.file("cm.yaml", CM);
    assert!(
        k.ok(&["apply", "-f", path_str(&f)])
            .await
            .contains("configmap/demo created")
    );
    let yaml = k.ok(&["get", "configmap", "demo", "-o", "yaml"]).await;
    assert!(yaml.contains("color: blue") && yaml.contains("resourceVersion"));
    // Client-side apply removes a key dropped from the file (three-way merge).
    let f2 = k.file(
        "cm2.yaml",
        &CM.replace("  size: large\n", "").replace("blue", "green"),
    );
    assert!(
        k.ok(&["apply", "-f", path_str(&f2)])
            .await
            .contains("configured")
    );
    let data = k.ok(&["get", "cm", "demo", "-o", "jsonpath={.data}"]).await;
    assert_eq!(data, r#"{"color":"green"}"#);
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"m":"1"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/j","value":"2"}]"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "demo",
        "--type",
        "strategic",
        "-p",
        r#"{"data":{"s":"3"}}"#,
    ])
    .await;
    let data = k.ok(&["get", "cm", "demo", "-o", "json"]).await;
    let v: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(
        (
            v["data"]["m"].as_str(),
            v["data"]["j"].as_str(),
            v["data"]["s"].as_str()
        ),
        (Some("1"), Some("2"), Some("3"))
    );
    let described = k.ok(&["describe", "cm", "demo"]).await;
    assert!(
        described.contains("Name:") && described.contains("demo"),
        "{described}"
    );
    let listed = k.ok(&["get", "cm", "-l", "app=demo"]).await;
    assert!(listed.contains("demo"));
    assert!(k.ok(&["delete", "cm", "demo"]).await.contains("deleted"));
    let err = k.fails(&["get", "cm", "demo"]).await;
    assert!(err.contains("configmaps \"demo\" not found"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_and_conflicts() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let f = k.file("cm.yaml", CM);
    assert!(
        k.ok(&["apply", "--server-side", "-f", path_str(&f)])
            .await
            .contains("serverside-applied")
    );
    let f2 = k.file("cm2.yaml", &CM.replace("blue", "red"));
    let err = k
        .fails(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            path_str(&f2),
        ])
        .await;
    assert!(err.contains("conflict"), "{err}");
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        path_str(&f2),
    ])
    .await;
    assert_eq!(
        k.ok(&["get", "cm", "demo", "-o", "jsonpath={.data.color}"])
            .await,
        "red"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kudo_crds_apply_and_become_established() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let crds = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds/");
    let dry = k.ok(&["apply", "--dry-run=client", "-f", crds]).await;
    assert_eq!(dry.matches("(dry run)").count(), 5, "{dry}");
    let applied = k.ok(&["apply", "-f", crds]).await;
    assert_eq!(applied.matches("created").count(), 5, "{applied}");
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=10s",
        "crd/instances.kudo.dev",
        "crd/operators.kudo.dev",
        "crd/operatorversions.kudo.dev",
        "crd/maintenanceschedules.kudo.dev",
        "crd/operatorrepositories.kudo.dev",
    ])
    .await;
    let inst = k.file("inst.yaml", "apiVersion: kudo.dev/v1beta1\nkind: Instance\nmetadata:\n  name: demo\nspec:\n  operatorVersion:\n    name: demo-0.1.0\n");
    k.ok(&["apply", "-f", path_str(&inst)]).await;
    assert!(k.ok(&["get", "instances"]).await.contains("demo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_rollout_and_delete() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let deploy = k.file("d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n");
    k.ok(&["apply", "-f", path_str(&deploy)]).await;
    k.ok(&[
        "wait",
        "--for",
        "condition=Available",
        "--timeout=10s",
        "deployment/web",
    ])
    .await;
    let table = k.ok(&["get", "deploy", "web"]).await;
    assert!(table.contains("2/2"), "{table}");
    let (del, wait) = tokio::join!(
        k.ok(&["delete", "deployment", "web", "--wait=false"]),
        k.ok(&["wait", "--for=delete", "--timeout=10s", "deployment/web"])
    );
    assert!(del.contains("deleted"));
    let _ = wait;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_uses_the_editor_and_watch_streams() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let f = k.file("cm.yaml", CM);
    k.ok(&["apply", "-f", path_str(&f)]).await;
    let out = k
        .run_env(
            &["edit", "cm", "demo"],
            &[("KUBE_EDITOR", "sed -i s/blue/purple/")],
        )
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        k.ok(&["get", "cm", "demo", "-o", "jsonpath={.data.color}"])
            .await,
        "purple"
    );
    let watch = k.run_env(&["get", "cm", "--watch", "--request-timeout=3s"], &[]);
    let change = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        k.ok(&[
            "create",
            "-f",
            path_str(&k.file("w.yaml", &CM.replace("demo", "watched"))),
        ])
        .await
    };
    let (out, _) = tokio::join!(watch, change);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("watched"),
        "{text} / {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_denial_is_printed_by_kubectl() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let (url, ca, _) = crate::admission::webhook().await;
    Api::<ValidatingWebhookConfiguration>::all(k._sandbox.client().unwrap())
        .create(
            &PostParams::default(),
            &crate::admission::hook_config(&url, &ca, "Fail"),
        )
        .await
        .unwrap();
    let f = k.file("bad.yaml", &format!("{CM}  forbidden: \"yes\"\n"));
    let err = k.fails(&["apply", "-f", path_str(&f)]).await;
    assert!(err.contains("admission webhook \"deny.example.com\" denied the request: forbidden keys are not allowed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_generators_send_protobuf_that_is_understood() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    assert!(
        k.ok(&["create", "namespace", "team"])
            .await
            .contains("namespace/team created")
    );
    k.ok(&[
        "-n",
        "team",
        "create",
        "configmap",
        "cfg",
        "--from-literal=a=1",
    ])
    .await;
    k.ok(&[
        "-n",
        "team",
        "create",
        "secret",
        "generic",
        "pw",
        "--from-literal=pw=hunter2",
    ])
    .await;
    k.ok(&["-n", "team", "create", "serviceaccount", "bot"])
        .await;
    k.ok(&[
        "-n",
        "team",
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
        "--port=80",
    ])
    .await;
    assert_eq!(
        k.ok(&["-n", "team", "get", "cm", "cfg", "-o", "jsonpath={.data.a}"])
            .await,
        "1"
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "team",
            "get",
            "secret",
            "pw",
            "-o",
            "jsonpath={.data.pw}"
        ])
        .await,
        "aHVudGVyMg=="
    );
    assert_eq!(
        k.ok(&[
            "-n",
            "team",
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}"
        ])
        .await,
        "nginx"
    );
    k.ok(&[
        "-n",
        "team",
        "wait",
        "--for",
        "condition=Available",
        "--timeout=10s",
        "deployment/web",
    ])
    .await;
}

const NODES_AND_WEB: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: c, image: nginx}]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_cordons_and_evicts_and_the_pods_move() {
    if kubectl_missing() {
        return;
    }
    let k = Kubectl::start().await;
    let f = k.file("web.yaml", NODES_AND_WEB);
    k.ok(&["apply", "-f", path_str(&f)]).await;
    let nodes = || {
        k.ok(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].spec.nodeName}",
        ])
    };
    let mut spread = String::new();
    for _ in 0..100 {
        spread = nodes().await;
        if spread.split(' ').filter(|n| !n.is_empty()).count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        spread.contains("n1") && spread.contains("n2"),
        "pods spread: {spread}"
    );
    let out = k
        .ok(&["drain", "n1", "--ignore-daemonsets", "--timeout=30s"])
        .await;
    assert!(
        out.contains("node/n1 cordoned")
            && out.contains("evicted")
            && out.contains("node/n1 drained"),
        "{out}"
    );
    let moved = nodes().await;
    assert_eq!(moved, "n2 n2", "pods after the drain: {moved}");
    let unschedulable = k
        .ok(&["get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"])
        .await;
    assert_eq!(unschedulable, "true");
    let listed = k.ok(&["get", "nodes"]).await;
    assert!(listed.contains("SchedulingDisabled"), "{listed}");
    let pods = k.ok(&["get", "pods", "-l", "app=web"]).await;
    assert_eq!(pods.matches("1/1").count(), 2, "{pods}");
    assert!(k.ok(&["uncordon", "n1"]).await.contains("uncordoned"));
}
