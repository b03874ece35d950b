//! Scale check, ignored: a run of minutes, not part of `make test`.
//!
//! ```sh
//! cargo build --release -p kudo-manager
//! cargo test --release -p kudo-e2e --test scale -- --ignored --nocapture
//! ```
//!
//! 10,000 Instances of first-operator (`KUDO_SCALE_INSTANCES=<n>` for a
//! quick run), created 32 at a time, must all reach deploy COMPLETE under
//! the real `kudo-manager run` binary (leader election on, default timings,
//! as deployed). The binary is taken from the test's own profile
//! (`target/release` under `--release`); `KUDO_SCALE_PROFILE=release` or
//! `debug` picks one explicitly. The manager is a process of its own; the
//! sandbox runs inside the test process, so what is measured is the manager
//! alone.
//!
//! Targets, asserted: the manager's peak RSS (`VmHWM`, the whole run) and its
//! RSS once idle (`VmRSS`) both < 300 MB; during a 30 s idle window it runs
//! no reconcile and calls the engine not once (its own `/metrics`). Printed:
//! time to all COMPLETE, reconciles, both RSS figures, and the CPU used in
//! the idle window, which is what Lease renewals and watch bookmarks cost.
//! The sandbox sends bookmarks every `KUDO_SCALE_BOOKMARK_SECS` seconds
//! (default 60, about what a real API server does; the sandbox's own default
//! is 1 s).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kudo_api::{ExecutionStatus as S, Instance};
use kudo_e2e::{Env, NS, operator, plan_status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEFAULT_INSTANCES: usize = 10_000;
/// Creates in flight at once: enough to keep the manager busy, few enough
/// that the sandbox (same two cores) is not flooded.
const PARALLEL_CREATES: usize = 32;
const RSS_LIMIT_MB: u64 = 300;
const IDLE_WINDOW: Duration = Duration::from_secs(30);
/// The manager counts as settled once its reconcile counter stood still
/// this long (the last readiness events, Events, status writes).
const SETTLED_AFTER: Duration = Duration::from_secs(5);
/// A run in which no Instance completes for this long is stuck.
const STALLED_AFTER: Duration = Duration::from_secs(90);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn manager_binary() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let own = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let profile = std::env::var("KUDO_SCALE_PROFILE").unwrap_or_else(|_| own.into());
    target.join(profile).join("kudo-manager")
}

/// A `/proc/<pid>/status` field in kB.
fn proc_field(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(key)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// utime + stime in clock ticks (USER_HZ, 100 per second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
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

/// The sum of a labelled counter over all its labels.
fn counter_sum(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<u64>().ok())
        .sum()
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

fn first_operator_instance(name: &str, ov: &str) -> Instance {
    let mut inst = Instance::new(
        name,
        kudo_api::InstanceSpec {
            operator_version: kudo_api::ObjectReference {
                name: Some(ov.into()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    inst.metadata.namespace = Some(NS.into());
    inst
}

/// Watch Instances until `count` of them have deploy COMPLETE, printing
/// progress; fails, naming Instances still running, when the manager exits,
/// `timeout` passes or none completes for [`STALLED_AFTER`].
async fn wait_all_complete(
    api: Api<Instance>,
    count: usize,
    manager: &mut tokio::process::Child,
    timeout: Duration,
) {
    let started = Instant::now();
    let mut complete = HashSet::new();
    let mut last_progress = (0, Instant::now());
    let mut events = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut progress = tokio::time::interval(Duration::from_secs(15));
    while complete.len() < count {
        tokio::select! {
            event = events.try_next() => match event.unwrap().unwrap() {
                // A relist: its items follow as InitApply.
                watcher::Event::Init => complete.clear(),
                watcher::Event::Apply(i) | watcher::Event::InitApply(i) => {
                    let name = i.metadata.name.clone().unwrap();
                    if plan_status(&i, "deploy") == Some(S::Complete) {
                        complete.insert(name);
                    } else {
                        complete.remove(&name);
                    }
                }
                watcher::Event::Delete(i) => {
                    complete.remove(i.metadata.name.as_deref().unwrap());
                }
                watcher::Event::InitDone => {}
            },
            _ = progress.tick() => {
                if last_progress.1.elapsed() > Duration::from_secs(10) {
                    // The watch may have missed events (see RELIABILITY.md,
                    // Scale): count from a list before calling the run stuck.
                    complete = complete_in_list(&api).await;
                }
                if complete.len() != last_progress.0 {
                    last_progress = (complete.len(), Instant::now());
                }
                let failure = if let Some(exit) = manager.try_wait().unwrap() {
                    Some(format!("the manager exited ({exit})"))
                } else if started.elapsed() > timeout {
                    Some(format!("timed out after {timeout:?}"))
                } else if last_progress.1.elapsed() > STALLED_AFTER {
                    Some(format!("no Instance completed for {STALLED_AFTER:?}"))
                } else {
                    None
                };
                if let Some(failure) = failure {
                    panic!(
                        "{failure} with {} of {count} Instances COMPLETE; not COMPLETE:\n{}",
                        complete.len(),
                        incomplete(&api, &complete).await
                    );
                }
                let pid = manager.id().unwrap();
                println!(
                    "{:>4}s: {} of {count} COMPLETE, manager RSS {} MB (peak {} MB)",
                    started.elapsed().as_secs(),
                    complete.len(),
                    proc_field(pid, "VmRSS:") / 1024,
                    proc_field(pid, "VmHWM:") / 1024
                );
            }
        }
    }
}

/// The names of the Instances a list shows with deploy COMPLETE.
async fn complete_in_list(api: &Api<Instance>) -> HashSet<String> {
    let list = api.list(&Default::default()).await.unwrap();
    list.items
        .iter()
        .filter(|i| plan_status(i, "deploy") == Some(S::Complete))
        .filter_map(|i| i.metadata.name.clone())
        .collect()
}

/// Up to ten Instances not in `complete`, with their status.
async fn incomplete(api: &Api<Instance>, complete: &HashSet<String>) -> String {
    let list = api.list(&Default::default()).await.unwrap();
    list.items
        .iter()
        .filter(|i| !complete.contains(i.metadata.name.as_deref().unwrap_or_default()))
        .take(10)
        .map(|i| {
            format!(
                "{}: {}",
                i.metadata.name.as_deref().unwrap_or_default(),
                serde_json::to_string(&i.status).unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wait until the manager's reconcile counter stood still for
/// [`SETTLED_AFTER`] (or a minute passed; the idle window then tells).
async fn wait_settled(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = counter(&scrape(port).await, "kudo_manager_reconciles_total");
    let mut still_since = Instant::now();
    while still_since.elapsed() < SETTLED_AFTER && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = counter(&scrape(port).await, "kudo_manager_reconciles_total");
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "scale check: minutes of work; run explicitly"]
async fn ten_thousand_instances_complete_under_300_mb_and_then_idle() {
    let instances: usize = env_or("KUDO_SCALE_INSTANCES", DEFAULT_INSTANCES);
    let bookmark_secs: u64 = env_or("KUDO_SCALE_BOOKMARK_SECS", 60);
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
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build [--release] -p kudo-manager)",
        bin.display()
    );
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
    futures::stream::iter(0..instances)
        .map(|i| {
            let (api, inst) = (
                api.clone(),
                first_operator_instance(&format!("web-{i}"), &ov),
            );
            async move { api.create(&PostParams::default(), &inst).await }
        })
        .buffer_unordered(PARALLEL_CREATES)
        .try_for_each(|_| async { Ok(()) })
        .await
        .unwrap();
    let created = started.elapsed();
    // A generous bound, only there so a stuck run ends.
    let timeout = Duration::from_secs(120) + Duration::from_millis(100) * instances as u32;
    wait_all_complete(api.clone(), instances, &mut child, timeout).await;
    let to_complete = started.elapsed();
    let at_complete = scrape(port).await;
    // What the manager caches per Instance, as JSON (managed fields included).
    let sample = serde_json::to_vec(&api.get("web-0").await.unwrap())
        .unwrap()
        .len();

    wait_settled(port).await;
    let before_metrics = scrape(port).await;
    let before = cpu_ticks(pid);
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_ticks = cpu_ticks(pid) - before;
    let after_metrics = scrape(port).await;
    let rss_mb = proc_field(pid, "VmRSS:") / 1024;
    let peak_mb = proc_field(pid, "VmHWM:") / 1024;
    let reconciles = counter(&after_metrics, "kudo_manager_reconciles_total")
        - counter(&before_metrics, "kudo_manager_reconciles_total");
    let decisions = counter(&after_metrics, "kudo_manager_decisions_total")
        - counter(&before_metrics, "kudo_manager_decisions_total");
    println!(
        "{instances} Instances created in {:.1}s, all COMPLETE in {:.1}s with {} reconciles \
         ({} by then) and {} errors; one Instance is {sample} bytes of JSON; manager RSS idle {rss_mb} MB, peak {peak_mb} MB; \
         idle {}s (bookmarks every {bookmark_secs}s, Lease renewed every 2s): {reconciles} reconciles, \
         {decisions} decisions, {idle_ticks} CPU ticks ({} ms)",
        created.as_secs_f64(),
        to_complete.as_secs_f64(),
        counter(&after_metrics, "kudo_manager_reconciles_total"),
        counter(&at_complete, "kudo_manager_reconciles_total"),
        counter_sum(&after_metrics, "kudo_manager_errors_total"),
        IDLE_WINDOW.as_secs(),
        idle_ticks * 10
    );
    let _ = child.kill().await;
    assert!(
        peak_mb < RSS_LIMIT_MB,
        "manager peak RSS {peak_mb} MB exceeds {RSS_LIMIT_MB} MB"
    );
    assert!(
        rss_mb < RSS_LIMIT_MB,
        "manager idle RSS {rss_mb} MB exceeds {RSS_LIMIT_MB} MB"
    );
    assert_eq!(
        (reconciles, decisions),
        (0, 0),
        "the manager reconciled while nothing changed"
    );
}
