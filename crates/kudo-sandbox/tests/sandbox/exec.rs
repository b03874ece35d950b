//! The fake `pods/exec` through kube's real WebSocket exec client.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::{code, start};

async fn running_pod(client: &kube::Client, name: &str) -> Api<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "waiter", "image": "busybox"}]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await
    .unwrap();
    api
}

/// Runs a command; returns stdout, stderr and the final Status.
async fn exec(
    api: &Api<Pod>,
    pod: &str,
    command: &[&str],
) -> Result<
    (
        Vec<u8>,
        String,
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Status,
    ),
    kube::Error,
> {
    let params = AttachParams::default()
        .container("waiter")
        .stdout(true)
        .stderr(true)
        .max_stdout_buf_size(64 * 1024);
    let mut proc = api.exec(pod, command.to_vec(), &params).await?;
    let mut stdout = proc.stdout().unwrap();
    let mut stderr = proc.stderr().unwrap();
    let status = proc.take_status().unwrap();
    let (mut out, mut err) = (Vec::new(), String::new());
    let (a, b) = tokio::join!(
        stdout.read_to_end(&mut out),
        stderr.read_to_string(&mut err)
    );
    a.unwrap();
    b.unwrap();
    let status = status.await.expect("a status message ends every command");
    proc.join().await.unwrap();
    Ok((out, err, status))
}

#[tokio::test]
async fn exec_answers_stat_and_tar_from_the_pods_files() {
    let (sandbox, client) = start().await;
    let api = running_pod(&client, "p").await;
    sandbox.set_pod_files("default", "p", [("/out/index.html", "<h1>hi</h1>")]);
    let (out, _, status) = exec(&api, "p", &["stat", "-c", "%s", "/out/index.html"])
        .await
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "11\n");
    assert_eq!(status.status.as_deref(), Some("Success"));

    let (archive, _, status) = exec(&api, "p", &["tar", "cf", "-", "/out/index.html"])
        .await
        .unwrap();
    assert_eq!(status.status.as_deref(), Some("Success"));
    let mut ar = tar::Archive::new(archive.as_slice());
    let mut entry = ar.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(entry.path().unwrap().to_str(), Some("out/index.html"));
    let mut content = String::new();
    std::io::Read::read_to_string(&mut entry, &mut content).unwrap();
    assert_eq!(content, "<h1>hi</h1>");
}

#[tokio::test]
async fn a_failing_command_reports_its_exit_code_and_stderr() {
    let (sandbox, client) = start().await;
    let api = running_pod(&client, "p").await;
    sandbox.set_pod_files("default", "p", [("/out/a", "x")]);
    let (_, err, status) = exec(&api, "p", &["stat", "-c", "%s", "/out/missing"])
        .await
        .unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let causes = status.details.unwrap().causes.unwrap();
    assert_eq!(causes[0].message.as_deref(), Some("1"));
    assert!(err.contains("can't stat '/out/missing'"), "{err}");

    let (_, err, status) = exec(&api, "p", &["rm", "-rf", "/"]).await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert!(err.contains("not supported"), "{err}");
}

#[tokio::test]
async fn exec_without_files_or_on_a_missing_pod_is_an_api_error() {
    let (sandbox, client) = start().await;
    let api = running_pod(&client, "p").await;
    let err = exec(&api, "p", &["cat", "/x"]).await.unwrap_err();
    assert_eq!(code(&err), 400);
    assert!(err.to_string().contains("set_pod_files"), "{err}");
    sandbox.set_pod_files("default", "p", [("/x", "1")]);
    sandbox.clear_pod_files("default", "p");
    assert_eq!(
        code(&exec(&api, "p", &["cat", "/x"]).await.unwrap_err()),
        400
    );
    assert_eq!(
        code(&exec(&api, "nope", &["cat", "/x"]).await.unwrap_err()),
        404
    );
}

#[tokio::test]
async fn exec_on_a_pod_that_is_not_running_is_refused() {
    let (sandbox, client) = start().await;
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "pending"},
        "spec": {"containers": [{"name": "waiter", "image": "busybox"}]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
    sandbox.set_pod_files("default", "pending", [("/x", "1")]);
    let err = exec(&api, "pending", &["cat", "/x"]).await.unwrap_err();
    assert_eq!(code(&err), 400);
    assert!(err.to_string().contains("not running"), "{err}");
}

#[tokio::test]
async fn kubectl_exec_reads_the_fake_files() {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("kubectl").is_file()));
    if !on_path {
        eprintln!("SKIPPED: kubectl is not on PATH");
        return;
    }
    let (sandbox, client) = start().await;
    running_pod(&client, "p").await;
    sandbox.set_pod_files("default", "p", [("/out/a.txt", "from the sandbox\n")]);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sandbox.write_kubeconfig(&kubeconfig).unwrap();
    let run = |args: &'static [&'static str]| {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", dir.path());
        cmd
    };
    let out = run(&["exec", "p", "-c", "waiter", "--", "cat", "/out/a.txt"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the sandbox\n");
    let failed = run(&["exec", "p", "--", "cat", "/out/none"])
        .output()
        .await
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("can't open '/out/none'"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );
}

#[tokio::test]
async fn an_impersonated_caller_needs_get_and_create_on_pods_exec() {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let (sandbox, admin) = start().await;
    running_pod(&admin, "p").await;
    sandbox.set_pod_files("default", "p", [("/x", "1")]);
    let mut config = sandbox.kube_config().unwrap();
    config.auth_info.impersonate = Some("system:serviceaccount:default:piper".into());
    let piper: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let grant = |verbs: &[&str]| -> Role {
        serde_json::from_value(json!({"metadata": {"name": "exec"},
            "rules": [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}]}))
        .unwrap()
    };
    let roles: Api<Role> = Api::default_namespaced(admin.clone());
    roles
        .create(&PostParams::default(), &grant(&["create"]))
        .await
        .unwrap();
    Api::<RoleBinding>::default_namespaced(admin)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "exec"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec"},
            "subjects": [{"kind": "ServiceAccount", "name": "piper", "namespace": "default"}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    let refused = exec(&piper, "p", &["cat", "/x"]).await.unwrap_err();
    assert_eq!(code(&refused), 403, "create alone is not enough");
    roles
        .replace("exec", &PostParams::default(), &grant(&["get", "create"]))
        .await
        .unwrap();
    let (out, _, _) = exec(&piper, "p", &["cat", "/x"]).await.unwrap();
    assert_eq!(out, b"1");
}
