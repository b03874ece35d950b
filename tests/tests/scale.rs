//! Scale check (ignored by default; run with `cargo test -p kudo-e2e --test
//! scale -- --ignored --nocapture`, `KUDO_SCALE_PROFILE=release` for the
//! release binary): 1,000 Instances of first-operator reach COMPLETE under
//! the real `kudo-manager` binary (leader election on, as deployed); prints
//! its RSS and the CPU it uses once idle. Targets: < 150 MB RSS, no CPU when
//! idle.
//!
//! "Idle" is checked by what the manager does, not by a timing: during the
//! idle window it must run no reconcile and call the engine not once (its
//! own `/metrics`). What remains are watch bookmarks and Lease renewals;
//! the CPU they cost is printed. The sandbox sends bookmarks every
//! `KUDO_SCALE_BOOKMARK_SECS` seconds (default 60, about what a real API
//! server does; the sandbox's own default is 1 s).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kube::api::PostParams;
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, NS, operator, plan_status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const INSTANCES: usize = 1000;
const IDLE_WINDOW: Duration = Duration::from_secs(30);

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

/// A port nobody listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The manager's `/metrics` text.
async fn scrape(port: u16) -> String {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).await.unwrap();
    body
}

/// The value of an unlabelled counter in metrics text.
fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{metrics}"))
}

/// Wait until `/metrics` answers (the admin server is up).
async fn wait_for_admin(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the manager's admin server on port {port} never came up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale check: minutes of work; run explicitly"]
async fn thousand_instances_complete_within_memory_and_go_idle() {
    let bookmark_secs = std::env::var("KUDO_SCALE_BOOKMARK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let mut env = Env::start_with(
        kudo_sandbox::Sandbox::builder().bookmark_interval(Duration::from_secs(bookmark_secs)),
    )
    .await
    .unwrap();
    env.stop_controller().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    env.sandbox.write_kubeconfig(&kubeconfig).unwrap();
    let bin = manager_binary();
    assert!(bin.exists(), "build {} first", bin.display());
    let port = free_port();
    let mut child = tokio::process::Command::new(&bin)
        .args([
            "run",
            "--no-webhook",
            "--leader-election-namespace",
            NS,
            "--admin-addr",
            &format!("127.0.0.1:{port}"),
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    wait_for_admin(port).await;
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
    // Let in-flight work settle (the last Events, the reconciles the last
    // Deployments' readiness triggers), then measure an idle window.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss_kb = proc_field(pid, "VmRSS:").unwrap_or(0);
    let before_metrics = scrape(port).await;
    let before = cpu_ticks(pid).unwrap_or(0);
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_ticks = cpu_ticks(pid).unwrap_or(0) - before;
    let after_metrics = scrape(port).await;
    let reconciles = counter(&after_metrics, "kudo_manager_reconciles_total")
        - counter(&before_metrics, "kudo_manager_reconciles_total");
    let decisions = counter(&after_metrics, "kudo_manager_decisions_total")
        - counter(&before_metrics, "kudo_manager_decisions_total");
    let total_reconciles = counter(&after_metrics, "kudo_manager_reconciles_total");
    println!(
        "{INSTANCES} Instances COMPLETE in {:.1}s with {total_reconciles} reconciles; manager RSS {} MB (peak {} MB); \
         idle for {}s (bookmarks every {bookmark_secs}s, Lease renewed every 10s): {reconciles} reconciles, \
         {decisions} decisions, {idle_ticks} CPU ticks ({} ms)",
        to_complete.as_secs_f64(),
        rss_kb / 1024,
        peak_kb / 1024,
        IDLE_WINDOW.as_secs(),
        idle_ticks * 10
    );
    let _ = child.kill().await;
    assert!(
        rss_kb < 150 * 1024,
        "manager RSS {} MB exceeds 150 MB",
        rss_kb / 1024
    );
    assert_eq!(
        (reconciles, decisions),
        (0, 0),
        "the manager reconciled while nothing changed"
    );
}
