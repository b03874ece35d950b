//! Sandbox throughput and watch latency through an ordinary kube::Client.
//!
//! - `create_1000_then_get_1000`: 1,000 sequential ConfigMap creates followed
//!   by 1,000 gets over loopback (target: under 1 s).
//! - `watch_event_latency`: time from issuing a create until a watch that is
//!   already open delivers the ADDED event (target: under 5 ms).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kudo_sandbox::Sandbox;
use serde_json::json;

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn create_then_get(c: &mut Criterion) {
    let rt = runtime();
    let (sandbox, client) = rt.block_on(async {
        let sb = Sandbox::start().await.unwrap();
        let client = sb.client().unwrap();
        (sb, client)
    });
    let mut round = 0u64;
    let mut group = c.benchmark_group("sandbox");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("create_1000_then_get_1000", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let ns_name = format!("bench-{round}");
                    let ns: Namespace =
                        serde_json::from_value(json!({"metadata": {"name": ns_name}})).unwrap();
                    Api::<Namespace>::all(client.clone())
                        .create(&PostParams::default(), &ns)
                        .await
                        .unwrap();
                    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns_name);
                    let start = Instant::now();
                    for i in 0..1000 {
                        api.create(&PostParams::default(), &configmap(&format!("c{i}")))
                            .await
                            .unwrap();
                    }
                    for i in 0..1000 {
                        api.get(&format!("c{i}")).await.unwrap();
                    }
                    total += start.elapsed();
                }
                total
            })
        })
    });
    group.finish();
    drop(sandbox);
}

fn watch_latency(c: &mut Criterion) {
    let rt = runtime();
    let (sandbox, api) = rt.block_on(async {
        let sb = Sandbox::start().await.unwrap();
        let api: Api<ConfigMap> = Api::default_namespaced(sb.client().unwrap());
        (sb, api)
    });
    let mut stream = rt.block_on(async {
        let wp = WatchParams {
            bookmarks: false,
            ..Default::default()
        }
        .timeout(290);
        let rv = sandbox.resource_version().to_string();
        api.watch(&wp, &rv).await.unwrap().boxed()
    });
    let mut n = 0u64;
    let mut group = c.benchmark_group("sandbox");
    group.sample_size(50);
    group.bench_function("watch_event_latency", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let name = format!("w{n}");
                    let start = Instant::now();
                    let api = api.clone();
                    let cm = configmap(&name);
                    let create = tokio::spawn(async move {
                        api.create(&PostParams::default(), &cm).await.unwrap()
                    });
                    loop {
                        match stream.try_next().await.unwrap() {
                            Some(WatchEvent::Added(cm))
                                if cm.metadata.name.as_deref() == Some(name.as_str()) =>
                            {
                                break;
                            }
                            Some(_) => {}
                            None => panic!("watch ended"),
                        }
                    }
                    total += start.elapsed();
                    create.await.unwrap();
                }
                total
            })
        })
    });
    group.finish();
    drop(sandbox);
}

criterion_group!(benches, create_then_get, watch_latency);
criterion_main!(benches);
