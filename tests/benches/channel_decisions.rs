//! Channel decisions at scale on the sandbox: `CHANNEL_BENCH_INSTANCES`
//! (default 1,000) Instances of first-operator track the stable channel of
//! one OperatorRepository served on loopback, with `Manual` approval so
//! that what is measured is the decision, not the upgrades.
//!
//! Printed:
//! - the unchanged-index syncs: requests to the repository and to the API
//!   server in the time of two sync intervals (target: one index request
//!   per interval, no API request);
//! - a new version published: the manager's CPU time until every Instance
//!   says `waiting for approval` for it (target: < 1 s for 1,000), its wall
//!   time, and the API requests the manager sent, by verb and resource
//!   (target: what the status writes need, one per Instance).
//!
//! The manager runs in-process on a runtime of its own whose threads are
//! named `bench-manager`; its CPU is read per thread from /proc, apart from
//! the sandbox and this client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Api;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kudo_api::{ExecutionStatus, Instance, InstanceSpec, ObjectReference};
use kudo_e2e::channel_repo::Repo;
use kudo_e2e::{Env, NS, operator, plan_status};
use kudo_repo_client::test_support::TestServer;
use support::{spawn_controller, threads_cpu};

mod support;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MANAGER_THREADS: &str = "bench-manager";
const REPOSITORY: &str = "bench";

fn tracking(name: &str) -> Instance {
    let mut inst = Instance::new(
        name,
        InstanceSpec {
            operator_version: ObjectReference {
                name: Some("first-operator-1.27.0-0.2.0".into()),
                ..Default::default()
            },
            upgrades: Some(kudo_api::upgrades::UpgradePolicy {
                repository: REPOSITORY.into(),
                approval: kudo_api::upgrades::Approval::Manual,
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    inst.metadata.namespace = Some(NS.into());
    inst
}

fn reason(i: &Instance) -> &str {
    i.status
        .as_ref()
        .and_then(|s| s.upgrades.as_ref())
        .and_then(|u| u.reason.as_deref())
        .unwrap_or_default()
}

/// Waits (one watch) until `n` Instances satisfy `done`; prints progress.
async fn wait_all(env: &Env, n: usize, what: &str, done: impl Fn(&Instance) -> bool) {
    let api: Api<Instance> = Api::namespaced(env.client.clone(), NS);
    let mut seen: HashMap<String, bool> = HashMap::new();
    let mut not_done: HashMap<String, String> = HashMap::new();
    // A watch that falls behind is told to re-list (410 Gone), as a real
    // API server does: the watcher reports that as an error, then re-lists
    // and goes on.
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let start = Instant::now();
    let mut last_print = Instant::now();
    while seen.values().filter(|d| **d).count() < n {
        let next = tokio::time::timeout(Duration::from_secs(120), events.next()).await;
        if let Ok(Some(Err(e))) = &next {
            eprintln!("channels: the watch re-lists ({e})");
            continue;
        }
        let Ok(Some(Ok(inst))) = next else {
            let mut why: HashMap<String, usize> = HashMap::new();
            for state in not_done.values() {
                *why.entry(state.clone()).or_default() += 1;
            }
            panic!(
                "stalled waiting for {what}: {} of {n}; the others: {why:#?}",
                seen.values().filter(|d| **d).count()
            );
        };
        let name = inst.metadata.name.clone().unwrap_or_default();
        if done(&inst) {
            not_done.remove(&name);
        } else {
            let state = format!("{:?}: {}", plan_status(&inst, "deploy"), reason(&inst));
            not_done.insert(name.clone(), state);
        }
        seen.insert(name, done(&inst));
        if last_print.elapsed() > Duration::from_secs(10) {
            last_print = Instant::now();
            eprintln!(
                "channels: {:>4.0?}: {} of {n} {what}",
                start.elapsed(),
                seen.values().filter(|d| **d).count()
            );
        }
    }
}

/// Waits until the manager ran no reconcile for five seconds (the last
/// readiness events and status writes of the deploys).
async fn settle(env: &Env) {
    let mut last = env.metrics.reconciles.get();
    let mut still = 0;
    while still < 5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = env.metrics.reconciles.get();
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

fn index_requests(server: &TestServer) -> usize {
    server
        .seen()
        .iter()
        .filter(|s| s.path == "/index.yaml")
        .count()
}

fn main() {
    let instances: usize = std::env::var("CHANNEL_BENCH_INSTANCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let manager_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(MANAGER_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let env = rt.block_on(Env::start_without_controller()).unwrap();
    rt.block_on(env.install_operator_version(operator("first-operator")))
        .unwrap();
    let repo = Repo::new();
    repo.publish("0.2.0");
    rt.block_on(repo.follow(&env, REPOSITORY));

    let (counts, stop, controller) = spawn_controller(&manager_rt, &env);

    rt.block_on(async {
        let api: Api<Instance> = Api::namespaced(env.client.clone(), NS);
        futures::stream::iter(0..instances)
            .map(|i| {
                let api = api.clone();
                async move {
                    api.create(&PostParams::default(), &tracking(&format!("t{i}")))
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await;
        wait_all(&env, instances, "deployed and tracking", |i| {
            plan_status(i, "deploy") == Some(ExecutionStatus::Complete)
                && reason(i).contains("is the newest in channel stable")
        })
        .await;

        // Unchanged index: two more syncs.
        settle(&env).await;
        counts.lock().unwrap().clear();
        let fetched = index_requests(repo.server());
        let start = Instant::now();
        while index_requests(repo.server()) < fetched + 2 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let api_requests: usize = counts.lock().unwrap().values().sum();
        eprintln!(
            "channels: unchanged index: 2 index requests in {:.1?}, {api_requests} API requests",
            start.elapsed()
        );

        // A new version in the channel.
        settle(&env).await;
        counts.lock().unwrap().clear();
        let reconciles = env.metrics.reconciles.get();
        let cpu = threads_cpu(MANAGER_THREADS);
        let start = Instant::now();
        repo.publish("0.3.0");
        wait_all(&env, instances, "waiting for approval of 0.3.0", |i| {
            reason(i).starts_with("channel stable: 0.2.0 → 0.3.0: waiting for approval")
        })
        .await;
        let wall = start.elapsed();
        let cpu = threads_cpu(MANAGER_THREADS) - cpu;
        // The status writes' own watch events come after.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts = counts.lock().unwrap().clone();
        let total: usize = counts.values().sum();
        eprintln!(
            "channels: 0.3.0 published: {instances} decisions in {wall:.1?}, manager CPU {cpu:?}, \
             {} reconciles, {total} API requests ({:.2} per Instance)",
            env.metrics.reconciles.get() - reconciles,
            total as f64 / instances as f64
        );
        for (key, n) in &counts {
            eprintln!("channels:   {key:<40} {n:>6}");
        }
    });
    stop.cancel();
    let _ = manager_rt.block_on(controller);
}
