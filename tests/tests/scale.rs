//! Scale check (ignored by default; run with `cargo test -p kudo-e2e --test
//! scale -- --ignored --nocapture`): 1,000 Instances of first-operator reach
//! COMPLETE under the real `kudo-manager` binary; prints its RSS and the CPU
//! it uses once idle. Targets: < 150 MB RSS, no CPU when idle.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kube::api::PostParams;
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, NS, operator, plan_status};

const INSTANCES: usize = 1000;

fn manager_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let profile = std::env::var("KUDO_SCALE_PROFILE").unwrap_or_else(|_| "debug".into());
    target.join(profile).join("kudo-manager")
}

fn proc_field(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale check: minutes of work; run explicitly"]
async fn thousand_instances_complete_within_memory_and_go_idle() {
    let env = Env::start_without_controller().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    env.sandbox.write_kubeconfig(&kubeconfig).unwrap();
    let bin = manager_binary();
    assert!(bin.exists(), "build {} first", bin.display());
    let mut child = tokio::process::Command::new(&bin)
        .args([
            "run",
            "--no-webhook",
            "--no-leader-election",
            "--admin-addr",
            "127.0.0.1:0",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let ov = env
        .install_operator_version(operator("first-operator"))
        .await
        .unwrap();
    let started = Instant::now();
    let api = env.instances();
    for i in 0..INSTANCES {
        let mut inst = kudo_api::Instance::new(
            &format!("web-{i}"),
            kudo_api::InstanceSpec {
                operator_version: kudo_api::ObjectReference {
                    name: Some(ov.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        inst.metadata.namespace = Some(NS.into());
        api.create(&PostParams::default(), &inst).await.unwrap();
    }
    let mut complete = 0;
    while started.elapsed() < Duration::from_secs(600) {
        let list = api.list(&Default::default()).await.unwrap();
        complete = list
            .items
            .iter()
            .filter(|i| plan_status(i, "deploy") == Some(S::Complete))
            .count();
        if complete == INSTANCES {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let to_complete = started.elapsed();
    assert_eq!(
        complete, INSTANCES,
        "only {complete} Instances reached COMPLETE"
    );
    let peak_kb = proc_field(pid, "VmHWM:").unwrap_or(0);
    // Let in-flight work settle, then measure an idle window.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_kb = proc_field(pid, "VmRSS:").unwrap_or(0);
    let before = cpu_ticks(pid).unwrap_or(0);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let idle_ticks = cpu_ticks(pid).unwrap_or(0) - before;
    println!(
        "{INSTANCES} Instances COMPLETE in {:.1}s; manager RSS {} MB (peak {} MB); CPU while idle for 20 s: {} ticks ({} ms)",
        to_complete.as_secs_f64(),
        rss_kb / 1024,
        peak_kb / 1024,
        idle_ticks,
        idle_ticks * 10
    );
    let _ = child.kill().await;
    assert!(
        rss_kb < 150 * 1024,
        "manager RSS {} MB exceeds 150 MB",
        rss_kb / 1024
    );
}
