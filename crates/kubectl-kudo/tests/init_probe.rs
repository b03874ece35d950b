//! The manager as `kubectl kudo init` and `deploy/` install it: its
//! readiness probe succeeds, and both sources carry the same security
//! defaults and probes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{run, run_with, stdout, transcript};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Secret};
use kube::Api;
use kudo_sandbox::Sandbox;
use serde_json::Value;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over plain HTTP/1.0; the status code, or None when nothing listens yet.
fn http_status(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    Some((code, body))
}

/// The container port a probe names (by name or number).
fn probe_port(
    container: &Container,
    port: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString,
) -> i32 {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => {
            container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name))
                .unwrap_or_else(|| {
                    panic!("the probe names port {name:?}, which the container does not declare")
                })
                .container_port
        }
    }
}

/// Replace `--flag=...` in `args` (it must be there).
fn set_flag(args: &mut [String], flag: &str, value: &str) {
    let prefix = format!("{flag}=");
    let arg = args
        .iter_mut()
        .find(|a| a.starts_with(&prefix))
        .unwrap_or_else(|| panic!("the Deployment passes no {flag}"));
    *arg = format!("{prefix}{value}");
}

fn write_mounted_secret(secret: &Secret, dir: &Path) {
    for (key, value) in secret.data.as_ref().expect("the webhook Secret has data") {
        std::fs::write(dir.join(key), &value.0).unwrap();
    }
}

/// The `kudo-manager` binary beside this test's binaries, built if a
/// narrower build (`cargo test -p kubectl-kudo`) left it out.
fn manager_binary() -> std::path::PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("kudo-manager");
    if !bin.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "kudo-manager", "--bin", "kudo-manager"])
            .status()
            .unwrap();
        assert!(status.success(), "building kudo-manager failed");
    }
    bin
}

/// Ends the manager process when the test ends, pass or fail.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_init_deploys_passes_its_readiness_probe() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let output = run_with(&kc, &["init"]);
    assert!(output.status.success(), "{}", transcript(&output));

    // Read back what init created, as the kubelet would.
    let client = sandbox.client().unwrap();
    let deployment = Api::<Deployment>::namespaced(client.clone(), "kudo-system")
        .get("kudo-manager")
        .await
        .unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    let container = pod.containers[0].clone();
    let probe = container
        .readiness_probe
        .clone()
        .and_then(|p| p.http_get)
        .expect("the manager has an HTTP readiness probe");
    let path = probe.path.clone().unwrap_or_else(|| "/".into());
    let port = probe_port(&container, &probe.port);
    let mut args = container.args.clone().unwrap();
    let admin = args
        .iter()
        .find_map(|a| a.strip_prefix("--admin-addr="))
        .expect("the Deployment sets --admin-addr");
    assert!(
        admin.ends_with(&format!(":{port}")),
        "the probe asks port {port}, the manager listens on {admin}"
    );

    // The Secret volume, mounted; local ports instead of the pod's.
    let secret_name = pod
        .volumes
        .iter()
        .flatten()
        .find_map(|v| v.secret.as_ref()?.secret_name.clone())
        .expect("the webhook certificate is mounted from a Secret");
    let secret = Api::<Secret>::namespaced(client, "kudo-system")
        .get(&secret_name)
        .await
        .unwrap();
    let certs = tempfile::tempdir().unwrap();
    write_mounted_secret(&secret, certs.path());
    let admin_port = free_port();
    set_flag(
        &mut args,
        "--webhook-cert-dir",
        certs.path().to_str().unwrap(),
    );
    set_flag(
        &mut args,
        "--admin-addr",
        &format!("127.0.0.1:{admin_port}"),
    );
    set_flag(&mut args, "--webhook-port", &free_port().to_string());

    let mut cmd = std::process::Command::new(manager_binary());
    cmd.args(&args).env("KUBECONFIG", &kc);
    for env in container.env.iter().flatten() {
        let field = env
            .value_from
            .as_ref()
            .and_then(|v| v.field_ref.as_ref())
            .map(|f| f.field_path.as_str());
        match (field, &env.value) {
            (Some("metadata.namespace"), _) => cmd.env(&env.name, "kudo-system"),
            (Some("metadata.name"), _) => cmd.env(&env.name, "kudo-manager-test-pod"),
            (_, Some(value)) => cmd.env(&env.name, value),
            (Some(other), None) => panic!("env {} from {other} is not simulated here", env.name),
            (None, None) => &mut cmd,
        };
    }
    let _manager = Running(cmd.spawn().unwrap_or_else(|e| {
        panic!("kudo-manager could not start (build the workspace binaries first): {e}")
    }));

    let addr = SocketAddr::from(([127, 0, 0, 1], admin_port));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while Instant::now() < deadline {
        last = http_status(addr, &path);
        if matches!(&last, Some((200, _))) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("GET {path} never answered 200 within 60 s; last answer: {last:?}");
}

/// The manager Deployment of `init --dry-run -o json` and of `deploy/`.
fn both_deployments() -> Vec<(&'static str, Value)> {
    let output = run(&["init", "--dry-run", "-o", "json"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let from_init = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .cloned()
        .expect("init creates a Deployment");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/manager.yaml"
    ))
    .unwrap();
    let from_deploy: Value = serde_saphyr::from_str(&text).unwrap();
    vec![("init", from_init), ("deploy/manager.yaml", from_deploy)]
}

#[test]
fn both_install_sources_run_the_manager_locked_down() {
    for (source, d) in both_deployments() {
        let pod = &d["spec"]["template"]["spec"];
        let c = &pod["containers"][0];
        let pod_sc = &pod["securityContext"];
        let sc = &c["securityContext"];
        assert_eq!(pod_sc["runAsNonRoot"], true, "{source}: runAsNonRoot");
        assert_eq!(
            pod_sc["seccompProfile"]["type"], "RuntimeDefault",
            "{source}: seccomp"
        );
        assert_eq!(
            sc["allowPrivilegeEscalation"], false,
            "{source}: privilege escalation"
        );
        assert_eq!(
            sc["readOnlyRootFilesystem"], true,
            "{source}: read-only root"
        );
        assert_eq!(
            sc["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{source}: capabilities"
        );
        for key in ["requests", "limits"] {
            for resource in ["cpu", "memory"] {
                if key == "limits" && resource == "cpu" {
                    continue; // a CPU limit only throttles; requests reserve it
                }
                assert!(
                    c["resources"][key][resource].is_string(),
                    "{source}: resources.{key}.{resource} is set"
                );
            }
        }
    }
}

#[test]
fn both_install_sources_probe_readyz_and_healthz_on_the_admin_port() {
    for (source, d) in both_deployments() {
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"]["httpGet"]["path"], "/readyz",
            "{source}"
        );
        assert_eq!(c["readinessProbe"]["httpGet"]["port"], "admin", "{source}");
        assert_eq!(
            c["livenessProbe"]["httpGet"]["path"], "/healthz",
            "{source}"
        );
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], "admin", "{source}");
    }
}

/// Every (group, resource, verb, resourceName) a role's rules grant.
fn grants(role: &Value) -> std::collections::BTreeSet<String> {
    let list = |rule: &Value, field: &str| -> Vec<String> {
        rule[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = std::collections::BTreeSet::new();
    for rule in role["rules"].as_array().into_iter().flatten() {
        let names = match list(rule, "resourceNames") {
            n if n.is_empty() => vec!["*".to_string()],
            n => n,
        };
        for g in list(rule, "apiGroups") {
            for r in list(rule, "resources") {
                for v in list(rule, "verbs") {
                    for n in &names {
                        out.insert(format!("{g}/{r} {v} {n}"));
                    }
                }
            }
        }
    }
    out
}

/// `deploy/rbac.yaml` grants exactly what `kubectl kudo init` grants: the
/// manager's ClusterRole, the `kudo-instance` ClusterRole Instances' objects
/// are written with, and the Role of the render book key.
#[test]
fn both_install_sources_grant_the_same_rights() {
    let output = run(&["init", "--dry-run", "-o", "json"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let init = listed["items"].as_array().unwrap().clone();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/rbac.yaml"
    ))
    .unwrap();
    let deploy: Vec<Value> = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).unwrap())
        .collect();
    let find = |objects: &[Value], kind: &str, name: &str| -> Value {
        objects
            .iter()
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    };
    for (kind, name) in [
        ("ClusterRole", "kudo-manager"),
        ("ClusterRole", "kudo-instance"),
        ("Role", "kudo-manager-render-key"),
    ] {
        assert_eq!(
            grants(&find(&deploy, kind, name)),
            grants(&find(&init, kind, name)),
            "{kind} {name}: deploy/rbac.yaml and init differ"
        );
    }
    for (kind, name) in [
        ("ClusterRoleBinding", "kudo-manager"),
        ("RoleBinding", "kudo-manager-render-key"),
    ] {
        let (d, i) = (find(&deploy, kind, name), find(&init, kind, name));
        assert_eq!(d["roleRef"], i["roleRef"], "{kind} {name}");
        assert_eq!(d["subjects"], i["subjects"], "{kind} {name}");
    }
}
