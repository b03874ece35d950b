use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kudo_sandbox::{Faults, Verb};

use crate::{code, configmap, start};

#[tokio::test]
async fn every_create_fails_with_the_configured_code() {
    let (sb, _) = start().await;
    // kube retries 429 by default; this test wants to see it.
    let mut config = sb.kube_config().unwrap();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sb.set_faults(Faults::none().fail(Verb::Create, 1.0, 500));
    let err = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 500);
    assert!(
        api.list(&Default::default()).await.is_ok(),
        "other verbs are unaffected"
    );
    sb.set_faults(Faults::none().fail(Verb::Get, 1.0, 429));
    assert_eq!(code(&api.get("a").await.unwrap_err()), 429);
    sb.set_faults(Faults::none());
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_fraction_of_requests_fail() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sb.set_faults(Faults::none().fail(Verb::List, 0.5, 409));
    let mut failures = 0;
    for _ in 0..200 {
        if api.list(&Default::default()).await.is_err() {
            failures += 1;
        }
    }
    assert!((40..160).contains(&failures), "{failures} of 200 failed");
}

#[tokio::test]
async fn latency_is_added() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    sb.set_faults(Faults::none().latency(Duration::from_millis(100)));
    let started = Instant::now();
    api.list(&Default::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn watches_close_after_n_events() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..5 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}"), "1"))
            .await
            .unwrap();
    }
    sb.set_faults(Faults::none().close_watches_after(2));
    let stream = api
        .watch(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap();
    let events: Vec<WatchEvent<ConfigMap>> =
        tokio::time::timeout(Duration::from_secs(5), stream.try_collect())
            .await
            .unwrap()
            .unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(sb.fault_stats().watches_closed, 1);
}

#[tokio::test]
async fn watches_open_before_the_faults_are_set_are_closed_too() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let stream = api
        .watch(&WatchParams::default().timeout(10), "0")
        .await
        .unwrap();
    sb.set_faults(Faults::none().close_watches_after(2));
    for i in 0..5 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}"), "1"))
            .await
            .unwrap();
    }
    let events: Vec<WatchEvent<ConfigMap>> =
        tokio::time::timeout(Duration::from_secs(5), stream.try_collect())
            .await
            .unwrap()
            .unwrap();
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn service_unavailable_is_retried_by_the_kube_client() {
    let (sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    // Half the reads answer 503; kube's default retry policy hides most.
    sb.set_faults(Faults::none().fail(Verb::Get, 0.5, 503));
    for _ in 0..20 {
        let _ = api.get("a").await;
    }
    let injected = sb.fault_stats().errors.get(&503).copied().unwrap_or(0);
    assert!(injected > 0, "no 503 was injected in 20+ reads");
}
