//! End-to-end smoke test of the real `kudo-manager run` binary against a
//! sandbox, through a kubeconfig like a user would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, operator, plan_status};

fn manager_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let bin = target.join("debug").join("kudo-manager");
    if !bin.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "kudo-manager", "--bin", "kudo-manager"])
            .status()
            .unwrap();
        assert!(status.success(), "building kudo-manager failed");
    }
    bin
}

#[tokio::test]
async fn manager_binary_runs_a_plan_and_stops_on_sigterm() {
    let mut env = Env::start().await.unwrap();
    env.stop_controller().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    env.sandbox.write_kubeconfig(&kubeconfig).unwrap();
    let mut child = tokio::process::Command::new(manager_binary())
        .args([
            "run",
            "--no-webhook",
            "--admin-addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .args(["--leader-election-namespace", &env.ns])
        .env("KUBECONFIG", &kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    env.install(operator("first-operator"), "smoke", &[])
        .await
        .unwrap();
    let waited = env
        .wait_for("smoke", "deploy COMPLETE", Duration::from_secs(60), |i| {
            plan_status(i, "deploy") == Some(S::Complete)
        })
        .await;
    let pid = child.id().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let exit = tokio::time::timeout(Duration::from_secs(15), child.wait()).await;
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        use tokio::io::AsyncReadExt;
        let _ = err.read_to_string(&mut stderr).await;
    }
    waited.unwrap_or_else(|e| panic!("{e}\nmanager log:\n{stderr}"));
    let exit = exit
        .expect("the manager did not stop within 15 s of SIGTERM")
        .unwrap();
    assert!(exit.success(), "exit {exit:?}\n{stderr}");
    // JSON logs carry the step fields.
    let step_line = stderr
        .lines()
        .find(|l| l.contains("\"step\":\"everything\""))
        .unwrap_or_else(|| panic!("no log line with the step field:\n{stderr}"));
    assert!(step_line.contains("\"plan\":\"deploy\""), "{step_line}");
}
