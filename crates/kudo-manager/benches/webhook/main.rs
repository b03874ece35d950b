//! Webhook performance: the review path alone (criterion), then HTTPS load
//! against the real webhook server and, in the same run, against a bare
//! rustls + hyper server that answers a fixed response (the ceiling).
//!
//! Reports reviews/s at saturation (closed loop, many keep-alive
//! connections) and latency percentiles at a fixed 1,000 reviews/s (open
//! loop: requests are issued on schedule whether or not earlier ones have
//! finished, so a slow server cannot hide queueing).
//!
//! `cargo bench -p kudo-manager --bench webhook`; knobs:
//! `WEBHOOK_BENCH_SECS` (default 5, at least 1, per server and round),
//! `WEBHOOK_BENCH_ROUNDS` (default 3), `WEBHOOK_BENCH_CONNECTIONS` (default 32),
//! `WEBHOOK_BENCH_RATE` (default 1000), `WEBHOOK_BENCH_ONLY` (`webhook`,
//! `bare`, `bare-review`, `json-skip`, `kube-decode` or
//! `webhook-ov-decode`: load only that server, for a profiler),
//! `WEBHOOK_BENCH_BODY` (`records`: statuses with history, conditions and
//! task records), `WEBHOOK_BENCH_PROTOCOL` (`h2`: the client speaks HTTP/2,
//! as the API server does to a webhook at a loopback URL, with
//! `WEBHOOK_BENCH_STREAMS` requests in flight per connection, default 1;
//! otherwise HTTP/1.1, as it calls a webhook behind a Service), `WEBHOOK_BENCH_SPLIT=1` (each round also loads bare
//! servers doing part of a review's work, see [`Answer`]: the webhook's
//! `Reviewer`, so the webhook server's own cost shows as the difference;
//! serde_json's skip of the body, the floor under any review that reads
//! it; kube's `AdmissionReview<DynamicObject>` decode, what a webhook on
//! kube-rs's types pays before its first rule; and the webhook server with
//! an OperatorVersion source that decodes a real-sized OperatorVersion per
//! review, as a live read on a cache miss does, without its network time).
//!
//! The webhook runs with the manager's limits: more than 64 requests in
//! flight (connections × streams) meet its review cap and are answered
//! 503, which fails the run; more than 512 connections meet its
//! connection cap.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../tests/support/admission.rs"]
mod admission;
mod load;
#[path = "../../tests/support/tls_client.rs"]
mod tls_client;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use admission::{fixture, operator_version_list, operator_versions};
use bytes::Bytes;
use criterion::Criterion;
use kudo_engine::admission::Subject;
use kudo_manager::webhook::{
    FnSource, LocalTls, OperatorVersionReadError, OperatorVersionSource, Reviewer, WebhookConfig,
    serve_listener, write_local_tls,
};
use load::Work::{JsonSkip, KubeDecode};
use load::{
    Answer, Answer::After, bare_server, bare_tls_config, connect, latency_at_rate, ms, send,
    throughput,
};
use tls_client::{ALL, client_config};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

/// The allocator the `kudo-manager` binary uses (src/main.rs), for both
/// servers and the client alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A bare server doing part of a review's work: loaded only with
/// `WEBHOOK_BENCH_SPLIT=1`, or alone with `WEBHOOK_BENCH_ONLY=<only>`.
struct Diagnostic {
    name: &'static str,
    only: &'static str,
    addr: SocketAddr,
}

/// Starts a bare server answering with `answer` on a fresh local port.
async fn start_bare(config: Arc<rustls::ServerConfig>, answer: Answer) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(bare_server(listener, config, answer));
    addr
}

/// Starts the webhook server, with metrics as the manager runs it, reading
/// OperatorVersions from `source`, on a fresh local port.
async fn start_webhook(tls: &LocalTls, source: impl OperatorVersionSource) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = WebhookConfig::new(addr, &tls.cert_path, &tls.key_path)
        .with_metrics(kudo_manager::metrics::Metrics::new());
    tokio::spawn(serve_listener(
        listener,
        config,
        source,
        std::future::pending(),
    ));
    addr
}

pub(crate) fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A realistic review, compact as the API server sends it: a parameter
/// update refused because deploy runs (reads the OV, walks the plan).
fn review_body() -> Bytes {
    let value: serde_json::Value =
        serde_json::from_slice(&fixture("deny/param-update-while-plan-runs.json")).unwrap();
    Bytes::from(serde_json::to_vec(&value).unwrap())
}

/// The same review with statuses as a long-lived Instance has them: 20
/// history entries, a condition, and per step a message, timestamps and a
/// task with five applied objects (records the rules never read).
fn review_body_with_records() -> Bytes {
    let mut value: serde_json::Value =
        serde_json::from_slice(&fixture("deny/param-update-while-plan-runs.json")).unwrap();
    let at = "2026-11-20T10:00:00Z";
    for field in ["object", "oldObject"] {
        let status = &mut value["request"][field]["status"];
        status["conditions"] = serde_json::json!([{"type": "Ready", "status": "False",
            "reason": "PlanRunning", "message": "plan deploy runs", "lastTransitionTime": at}]);
        status["history"] = (0..20)
            .map(|i| {
                serde_json::json!({"plan": "deploy", "uid": format!("run-{i}"),
                "trigger": "parameters (MEMORY)", "started": at, "finished": at,
                "result": "COMPLETE", "message": "all steps complete"})
            })
            .collect();
        for plan in status["planStatus"].as_object_mut().unwrap().values_mut() {
            for phase in plan["phases"].as_array_mut().unwrap() {
                for step in phase["steps"].as_array_mut().unwrap() {
                    step["message"] = "waiting for pods".into();
                    step["startedAt"] = at.into();
                    step["tasks"] = serde_json::json!([{"name": "app", "status": step["status"],
                        "objects": (0..5).map(|i| serde_json::json!({"apiVersion": "apps/v1",
                            "kind": "StatefulSet", "namespace": "default", "name": format!("zk-{i}")}))
                            .collect::<Vec<_>>()}]);
                }
            }
        }
    }
    Bytes::from(serde_json::to_vec(&value).unwrap())
}

/// The review's OperatorVersion as a live GET returns it: the fixture's
/// parameters and plans (so the verdict is the same) with the templates of
/// this repository's zookeeper package, which a real OperatorVersion
/// carries and the rules never read.
fn live_ov_json() -> Vec<u8> {
    let package =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../operators/zookeeper");
    let templates = kudo_package::load(&package)
        .unwrap()
        .to_operator_version("default")
        .spec
        .templates;
    let mut ov = operator_version_list().swap_remove(0);
    ov.spec.templates = templates;
    serde_json::to_vec(&ov).unwrap()
}

/// An OperatorVersion source that decodes [`live_ov_json`] on every read
/// as a live read through the API server does (without its network time):
/// what a review costs the webhook on a cache miss.
fn decoding_source() -> FnSource<impl Fn(&str, &str) -> OvRead + Send + Sync + 'static> {
    let json = live_ov_json();
    FnSource(move |_namespace: &str, name: &str| {
        let ov: kudo_api::OperatorVersion =
            serde_json::from_slice(&json).map_err(|e| OperatorVersionReadError(e.to_string()))?;
        Ok((ov.metadata.name.as_deref() == Some(name)).then(|| Arc::new(ov)))
    })
}

type OvRead = Result<Option<Arc<kudo_api::OperatorVersion>>, OperatorVersionReadError>;

/// `WEBHOOK_BENCH_BODY=records` loads the servers with
/// [`review_body_with_records`] instead of the plain fixture.
fn load_body() -> Bytes {
    match std::env::var("WEBHOOK_BENCH_BODY").as_deref() {
        Ok("records") => review_body_with_records(),
        _ => review_body(),
    }
}

fn bench_review_path(c: &mut Criterion, rt: &Runtime) {
    let reviewer = Reviewer::new(operator_versions(), Duration::from_secs(1));
    let body = review_body();
    // Where the time goes: decoding as kube's types would, and the
    // engine's rules alone.
    c.bench_function(
        "webhook/decode kube AdmissionReview<Instance> (before)",
        |b| {
            b.iter(|| {
            serde_json::from_slice::<kube::core::admission::AdmissionReview<kudo_api::Instance>>(
                &body,
            )
            .unwrap()
        });
        },
    );
    // The diagnostic servers' work alone: reading the body (serde_json's
    // skip is the floor under any review) and what kube's types cost.
    for (name, work) in [
        (
            "webhook/decode kube AdmissionReview<DynamicObject>",
            KubeDecode,
        ),
        ("webhook/serde_json skip of the body (IgnoredAny)", JsonSkip),
    ] {
        c.bench_function(name, |b| b.iter(|| assert!(work.run(&body))));
    }
    let review: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let new: Subject = serde_json::from_value(review["request"]["object"].clone()).unwrap();
    let old: Subject = serde_json::from_value(review["request"]["oldObject"].clone()).unwrap();
    let ovs = operator_version_list();
    let ov = &ovs[0];
    let now = jiff::Timestamp::now();
    c.bench_function("webhook/engine admission::review", |b| {
        b.iter(|| kudo_engine::admission::review(Some(&old), &new, Some(ov), Some(ov), Some(now)));
    });
    c.bench_function("webhook/review_path (decode + OV + engine + encode)", |b| {
        b.iter(|| rt.block_on(reviewer.review_to_json(&body)));
    });
    // What the live read adds in a cluster before any network time: the
    // whole OperatorVersion, and what the webhook decodes of it.
    let live_ov = live_ov_json();
    c.bench_function(
        &format!(
            "webhook/OperatorVersion decode, whole ({} bytes)",
            live_ov.len()
        ),
        |b| b.iter(|| serde_json::from_slice::<kudo_api::OperatorVersion>(&live_ov).unwrap()),
    );
    let with_records = review_body_with_records();
    c.bench_function("webhook/review_path, statuses with records", |b| {
        b.iter(|| rt.block_on(reviewer.review_to_json(&with_records)));
    });
}

/// A render that loops until the default step budget stops it (what a
/// hostile template costs the manager).
fn runaway_render() -> bool {
    let text = "{{ range until 2000 }}{{ range until 2000 }}{{ range until 2000 }}{{ end }}{{ end }}{{ end }}";
    kudo_template::Template::parse("runaway.yaml", text)
        .is_ok_and(|t| t.render(&serde_json::json!({})).is_err())
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    // The review path alone, on the current thread.
    let local = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    bench_review_path(&mut criterion, &local);
    criterion.final_summary();

    // At least a second: the latency run needs samples after its warm-up.
    let secs = env_or("WEBHOOK_BENCH_SECS", 5).max(1);
    let connections = env_or("WEBHOOK_BENCH_CONNECTIONS", 32);
    let rate = env_or("WEBHOOK_BENCH_RATE", 1000);
    let duration = Duration::from_secs(secs);

    // Servers on a 2-worker runtime (the target is "2 cores"); the client on
    // its own runtime in the same process, so it competes for the same cores
    // (threads named bench-server and bench-client, for a profiler):
    // the numbers are a lower bound for the server.
    let servers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-server")
        .enable_all()
        .build()
        .unwrap();
    let client = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-client")
        .enable_all()
        .build()
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let body = load_body();
    let (webhook_addr, bare_addr, diagnostics, answer) = servers.block_on(async {
        let webhook_addr = start_webhook(&tls, operator_versions()).await;
        // The same webhook server decoding the OperatorVersion per review.
        let decoding_addr = start_webhook(&tls, decoding_source()).await;
        // The bare server answers what the webhook answers, byte for byte.
        let reviewer = Arc::new(Reviewer::new(operator_versions(), Duration::from_secs(1)));
        let answer = Bytes::from(reviewer.review_to_json(&body).await);
        let config = bare_tls_config(&tls);
        let bare_addr = start_bare(config.clone(), Answer::Fixed(answer.clone())).await;
        let mut diagnostics = Vec::new();
        for (name, only, serves) in [
            ("bare + review", "bare-review", Answer::Review(reviewer)),
            (
                "bare + JSON skip",
                "json-skip",
                After(JsonSkip, answer.clone()),
            ),
            (
                "bare + kube decode",
                "kube-decode",
                After(KubeDecode, answer.clone()),
            ),
        ] {
            let addr = start_bare(config.clone(), serves).await;
            diagnostics.push(Diagnostic { name, only, addr });
        }
        diagnostics.push(Diagnostic {
            name: "webhook, OV decoded per review",
            only: "webhook-ov-decode",
            addr: decoding_addr,
        });
        (webhook_addr, bare_addr, diagnostics, answer)
    });
    let config = client_config(&tls.ca_pem, ALL);

    let (webhook_rps, bare_rps, webhook_lat, bare_lat, loaded_lat, runaway) =
        client.block_on(async {
            // Sanity: the webhook really reviews (denies this update) and matches the bare answer.
            let mut sender = connect(webhook_addr, config.clone()).await;
            let reply = send(&mut sender, &body).await;
            assert_eq!(
                reply, answer,
                "webhook answer differs from the fixed answer"
            );
            assert!(String::from_utf8_lossy(&reply).contains("\"allowed\":false"));
            for diagnostic in &diagnostics {
                let mut sender = connect(diagnostic.addr, config.clone()).await;
                assert_eq!(
                    send(&mut sender, &body).await,
                    answer,
                    "{} answers differently",
                    diagnostic.name
                );
            }

            // Closed-loop throughput against one server, with this run's settings.
            let load = |addr| throughput(addr, config.clone(), body.clone(), connections, duration);
            let only = std::env::var("WEBHOOK_BENCH_ONLY").unwrap_or_default();
            if !only.is_empty() {
                let addr = match only.as_str() {
                    "bare" => bare_addr,
                    "webhook" => webhook_addr,
                    other => diagnostics
                        .iter()
                        .find(|d| d.only == other)
                        .map_or(webhook_addr, |d| d.addr),
                };
                let rps = load(addr).await;
                println!("{only} only: {rps:.0} req/s");
                std::process::exit(0);
            }
            // Alternate the two servers in rounds so that background load on
            // the machine hits both alike; report the totals.
            let rounds = env_or("WEBHOOK_BENCH_ROUNDS", 3).max(1);
            let split = env_or("WEBHOOK_BENCH_SPLIT", 0) == 1;
            let (mut bare_sum, mut webhook_sum) = (0.0, 0.0);
            let mut diagnostic_sums = vec![0.0; diagnostics.len()];
            for round in 1..=rounds {
                let bare = load(bare_addr).await;
                let webhook = load(webhook_addr).await;
                println!(
                    "  round {round}: webhook {webhook:.0}/s, bare {bare:.0}/s, ratio {:.1}%",
                    100.0 * webhook / bare
                );
                bare_sum += bare;
                webhook_sum += webhook;
                if split {
                    for (diagnostic, sum) in diagnostics.iter().zip(&mut diagnostic_sums) {
                        let rps = load(diagnostic.addr).await;
                        println!(
                            "           {} {rps:.0}/s, {:.1}% of bare",
                            diagnostic.name,
                            100.0 * rps / bare
                        );
                        *sum += rps;
                    }
                }
            }
            if split {
                for (diagnostic, sum) in diagnostics.iter().zip(&diagnostic_sums) {
                    println!(
                        "  {} over all rounds: {:.1}% of bare",
                        diagnostic.name,
                        100.0 * sum / bare_sum
                    );
                }
                println!(
                    "  (webhook over all rounds: {:.1}%)",
                    100.0 * webhook_sum / bare_sum
                );
            }
            let (bare_rps, webhook_rps) = (bare_sum / rounds as f64, webhook_sum / rounds as f64);
            let bare_lat =
                latency_at_rate(bare_addr, config.clone(), body.clone(), rate, duration).await;
            let webhook_lat =
                latency_at_rate(webhook_addr, config.clone(), body.clone(), rate, duration).await;
            // The same, while the manager's render pool runs templates that
            // loop until their step budget stops them, four at a time.
            let (stop, renders) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicUsize::new(0)),
            );
            let pool = kudo_manager::render_pool::RenderPool::new(Duration::from_secs(10));
            let busy: Vec<_> = (0..4)
                .map(|_| {
                    let (pool, stop, renders) = (pool.clone(), stop.clone(), renders.clone());
                    tokio::spawn(async move {
                        while !stop.load(Ordering::Relaxed) {
                            let _ = pool.run(runaway_render).await;
                            renders.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            let loaded_lat =
                latency_at_rate(webhook_addr, config.clone(), body.clone(), rate, duration).await;
            stop.store(true, Ordering::Relaxed);
            for task in busy {
                let _ = task.await;
            }
            let runaway = renders.load(Ordering::Relaxed);
            (
                webhook_rps,
                bare_rps,
                webhook_lat,
                bare_lat,
                loaded_lat,
                runaway,
            )
        });

    let protocol = if load::use_h2() {
        format!(
            "HTTP/2 with {} streams each",
            env_or("WEBHOOK_BENCH_STREAMS", 1).max(1)
        )
    } else {
        "HTTP/1.1".to_string()
    };
    println!();
    println!(
        "webhook HTTPS load ({} cores visible, {connections} keep-alive connections, {protocol}, {secs}s per run, body {} bytes)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        body.len()
    );
    println!(
        "  throughput   webhook {webhook_rps:>9.0} reviews/s   bare rustls+hyper {bare_rps:>9.0} req/s   ratio {:.1}%",
        100.0 * webhook_rps / bare_rps
    );
    println!(
        "  while budget-exceeding renders run ({runaway} renders of 10^6 steps, 4 at a time):"
    );
    for (name, l) in [
        ("webhook", &webhook_lat),
        ("bare   ", &bare_lat),
        ("webhook, renders running", &loaded_lat),
    ] {
        println!(
            "  at {rate}/s    {name}  achieved {:.0}/s  p50 {}  p99 {}  p99.9 {}  max {}",
            l.achieved_rate,
            ms(l.p50),
            ms(l.p99),
            ms(l.p999),
            ms(l.max)
        );
    }
    println!(
        "  targets: >= 40000 reviews/s [{}], p99 < 1 ms at {rate}/s [{}]",
        if webhook_rps >= 40_000.0 {
            "met"
        } else {
            "NOT met"
        },
        if webhook_lat.p99 < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        },
    );
    servers.shutdown_background();
}
