use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kudo_sandbox::{Faults, ObjectIdentity, Sandbox, Verb};
use serde_json::json;

use crate::configmap;

#[tokio::test]
async fn the_request_log_is_off_unless_asked_for() {
    let (sb, client) = crate::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    assert!(sb.requests().is_empty());
    sb.set_request_log(10);
    api.get("a").await.unwrap();
    assert_eq!(sb.requests().len(), 1);
}

#[tokio::test]
async fn the_request_log_names_verb_field_manager_object_and_code() {
    let sb = Sandbox::builder().request_log(100).start().await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client().unwrap());
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let apply = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
    api.patch("b", &PatchParams::apply("me"), &Patch::Apply(&apply))
        .await
        .unwrap();
    assert!(api.get("missing").await.is_err());
    let log = sb.requests();
    let seen: Vec<_> = log
        .iter()
        .map(|r| {
            (
                r.verb,
                r.object.as_ref().and_then(|o| o.name.as_deref()),
                r.field_manager.as_deref(),
                r.code,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (Some(Verb::Create), Some("a"), None, 201),
            (Some(Verb::Patch), Some("b"), Some("me"), 201),
            (Some(Verb::Get), Some("missing"), None, 404),
        ]
    );
    assert_eq!(
        log[1].object,
        Some(ObjectIdentity {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            name: Some("b".into()),
            subresource: None,
        })
    );
    assert!(log[1].is_apply() && log[1].is_write() && log[1].succeeded());
    assert!(!log[0].is_apply() && !log[2].is_write());
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/api/v1/namespaces/default/configmaps");
    assert!(log.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[tokio::test]
async fn the_request_log_keeps_the_newest_up_to_its_bound() {
    let sb = Sandbox::builder().request_log(3).start().await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(sb.client().unwrap());
    for _ in 0..5 {
        let _ = api.get("x").await;
    }
    let log = sb.requests();
    assert_eq!(log.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![2, 3, 4]);
    assert_eq!(sb.requests_dropped(), 2);
    sb.clear_requests();
    assert!(sb.requests().is_empty());
    assert_eq!(sb.requests_dropped(), 0);
}

#[tokio::test]
async fn injected_faults_are_marked_in_the_log_and_counted() {
    let sb = Sandbox::builder().request_log(100).start().await.unwrap();
    let mut config = sb.kube_config().unwrap();
    config.default_retry = false;
    let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());
    sb.set_faults(Faults::none().fail(Verb::Get, 1.0, 503));
    assert_eq!(crate::code(&api.get("a").await.unwrap_err()), 503);
    sb.set_faults(Faults::none());
    assert_eq!(crate::code(&api.get("a").await.unwrap_err()), 404);
    let log = sb.requests();
    assert_eq!(
        log.iter().map(|r| (r.code, r.injected)).collect::<Vec<_>>(),
        vec![(503, true), (404, false)]
    );
    assert_eq!(sb.fault_stats().errors.get(&503), Some(&1));
    assert_eq!(sb.fault_stats().total_errors(), 1);
}
