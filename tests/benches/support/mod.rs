//! What the benches share: a client that counts the requests it sends, and
//! CPU time read from /proc.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::client::ClientBuilder;
use kudo_e2e::{Env, kudo_engine_config};
use kudo_manager::admin::Readiness;
use kudo_manager::controller::{self, ControllerConfig};
use tokio_util::sync::CancellationToken;

/// Requests by `VERB resource[/subresource]` (WATCH for watch requests),
/// marked `(metadata)` for metadata-only requests.
pub type Counts = Arc<Mutex<BTreeMap<String, usize>>>;

pub fn request_key<B>(req: &http::Request<B>) -> String {
    let path = req.uri().path();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]] or /apis/G/V/[namespaces/NS/]PLURAL[/NAME[/SUB]]
    let skip = if segments.first() == Some(&"api") {
        2
    } else {
        3
    };
    let rest = segments.get(skip..).unwrap_or_default();
    let rest = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let resource = match rest {
        [plural, _, sub, ..] => format!("{plural}/{sub}"),
        [plural, ..] => (*plural).to_string(),
        [] => path.to_string(),
    };
    let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
    let verb = if watch {
        "WATCH"
    } else {
        req.method().as_str()
    };
    // Metadata-only reads (drift checks) apart from whole-object reads.
    let metadata_only = req
        .headers()
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("PartialObjectMetadata"));
    let kind = if metadata_only { " (metadata)" } else { "" };
    format!("{verb} {resource}{kind}")
}

/// A client for the sandbox that counts every request it sends.
pub fn counting_client(env: &Env) -> (kube::Client, Counts) {
    let counts: Counts = Arc::default();
    let layer = tower::util::MapRequestLayer::new({
        let counts = counts.clone();
        move |req: http::Request<kube::client::Body>| {
            *counts.lock().unwrap().entry(request_key(&req)).or_default() += 1;
            req
        }
    });
    let config = env.sandbox.kube_config().unwrap();
    let client = ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    (client, counts)
}

/// CPU time (user + system, all threads) this process has used so far;
/// zero where /proc is not there. Unlike wall time it hardly moves when
/// other processes load the machine.
pub fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // USER_HZ is 100 on Linux.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// CPU time (user + system) of this process's threads whose name starts
/// with `prefix`: a runtime whose worker threads are named apart from the
/// rest of the process is measured alone. Threads that have ended are not
/// counted.
pub fn threads_cpu(prefix: &str) -> Duration {
    let mut ticks = 0;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let name = head.split_once('(').map_or("", |(_, n)| n);
        if !name.starts_with(prefix) {
            continue;
        }
        let fields: Vec<u64> = rest
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        ticks += fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    }
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// The controller, counting its requests, on `rt` (its client's tasks run
/// there too); cancel the token and await the handle to stop it.
pub fn spawn_controller(
    rt: &tokio::runtime::Runtime,
    env: &Env,
) -> (
    Counts,
    CancellationToken,
    tokio::task::JoinHandle<kudo_manager::Result<()>>,
) {
    let (client, counts) = {
        let _guard = rt.enter();
        counting_client(env)
    };
    let stop = CancellationToken::new();
    let controller = rt.spawn(controller::run(
        client,
        ControllerConfig {
            engine: kudo_engine_config(),
            concurrency: 0,
            ..ControllerConfig::default()
        },
        env.metrics.clone(),
        Readiness::default(),
        {
            let stop = stop.clone();
            async move { stop.cancelled().await }
        },
    ));
    (counts, stop, controller)
}
