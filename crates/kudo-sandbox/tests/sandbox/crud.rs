use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::json;

use crate::{code, configmap, namespace, start};

#[tokio::test]
async fn configmap_crud_round_trips_with_metadata() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let created = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    assert!(created.uid().is_some());
    assert!(created.creation_timestamp().is_some());
    assert_eq!(created.metadata.generation, Some(1));
    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["key"], "1");
    let mut changed = created.clone();
    changed.data = Some([("key".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(replaced.resource_version(), created.resource_version());
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(code(&api.get("a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn errors_are_status_objects_with_reasons() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let missing = api.get("nope").await.unwrap_err();
    let kube::Error::Api(s) = &missing else {
        panic!("{missing:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(s.message, "configmaps \"nope\" not found");
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let dup = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &dup else {
        panic!("{dup:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));
    let bad = api
        .create(&PostParams::default(), &configmap("Bad_Name", "1"))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &bad else {
        panic!("{bad:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
}

#[tokio::test]
async fn a_label_value_or_key_a_real_server_refuses_is_invalid_on_create_apply_and_update() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let labelled = |name: &str, key: &str, value: &str| {
        let mut cm = configmap(name, "1");
        cm.metadata.labels = Some([(key.to_string(), value.to_string())].into());
        cm
    };
    let long = "a".repeat(64);
    for (key, value) in [
        ("kudo.dev/instance", long.as_str()),
        ("app", "-dash"),
        ("app", "a b"),
        ("Bad Key", "x"),
        ("example.com/", "x"),
    ] {
        let err = api
            .create(&PostParams::default(), &labelled("c", key, value))
            .await
            .unwrap_err();
        assert_eq!(code(&err), 422, "{key}={value}");
        let err = api
            .patch(
                "c",
                &kube::api::PatchParams::apply("t").force(),
                &kube::api::Patch::Apply(labelled("c", key, value)),
            )
            .await
            .unwrap_err();
        assert_eq!(code(&err), 422, "apply {key}={value}");
    }
    let fine = api
        .create(
            &PostParams::default(),
            &labelled("c", "kudo.dev/instance", &"a".repeat(63)),
        )
        .await
        .unwrap();
    let mut changed = fine.clone();
    changed.metadata.labels = Some([("app".to_string(), long.clone())].into());
    let err = api
        .replace("c", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 422);
}

#[tokio::test]
async fn configmap_and_secret_data_over_one_mib_is_invalid() {
    let (_sb, client) = start().await;
    let maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let fits = configmap("fits", &"x".repeat((1 << 20) - 3));
    maps.create(&PostParams::default(), &fits).await.unwrap();
    let over = configmap("over", &"x".repeat(1 << 20));
    let err = maps
        .create(&PostParams::default(), &over)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 422);
    assert!(
        err.to_string().contains("must have at most 1048576 bytes"),
        "{err}"
    );
    let secrets: Api<Secret> = Api::default_namespaced(client);
    let big: Secret = serde_json::from_value(json!({"metadata": {"name": "big"},
        "stringData": {"k": "y".repeat(1 << 20)}}))
    .unwrap();
    assert_eq!(
        code(
            &secrets
                .create(&PostParams::default(), &big)
                .await
                .unwrap_err()
        ),
        422
    );
}

#[tokio::test]
async fn an_object_past_etcds_request_limit_is_refused_as_etcd_refuses_it() {
    let (_sb, client) = start().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let with_env = |name: &str, bytes: usize| -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
                "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "i",
                    "env": [{"name": "BIG", "value": "x".repeat(bytes)}]}]}}}
        }))
        .unwrap()
    };
    deployments
        .create(&PostParams::default(), &with_env("fits", 1 << 20))
        .await
        .unwrap();
    let err = deployments
        .create(&PostParams::default(), &with_env("over", 1600 << 10))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 500);
    assert!(err.to_string().contains("request is too large"), "{err}");
    assert!(deployments.get_opt("over").await.unwrap().is_none());
}

#[tokio::test]
async fn stale_resource_version_is_a_conflict() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let v1 = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let mut first = v1.clone();
    first.data = Some([("key".to_string(), "2".to_string())].into());
    api.replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    let mut second = v1.clone();
    second.data = Some([("key".to_string(), "3".to_string())].into());
    let err = api
        .replace("a", &PostParams::default(), &second)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 409);
}

#[tokio::test]
async fn generation_changes_on_spec_only() {
    let (_sb, client) = start().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    let mut relabeled = created.clone();
    relabeled.labels_mut().insert("x".into(), "y".into());
    let relabeled = api
        .replace("web", &PostParams::default(), &relabeled)
        .await
        .unwrap();
    assert_eq!(relabeled.metadata.generation, Some(1));
    let mut scaled = relabeled.clone();
    scaled.spec.replicas = Some(3);
    let scaled = api
        .replace("web", &PostParams::default(), &scaled)
        .await
        .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let (_sb, client) = start().await;
    namespace(&client, "other").await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut a = configmap("a", "1");
    a.labels_mut().insert("app".into(), "web".into());
    api.create(&PostParams::default(), &a).await.unwrap();
    api.create(&PostParams::default(), &configmap("b", "1"))
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "other")
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
    let by_label = api
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(
        by_label
            .items
            .iter()
            .map(|c| c.name_any())
            .collect::<Vec<_>>(),
        vec!["a"]
    );
    let all: Api<ConfigMap> = Api::all(client);
    let by_field = all
        .list(&ListParams::default().fields("metadata.name=a"))
        .await
        .unwrap();
    assert_eq!(by_field.items.len(), 2);
    let by_ns = all
        .list(&ListParams::default().fields("metadata.namespace=other"))
        .await
        .unwrap();
    assert_eq!(by_ns.items.len(), 1);
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for i in 0..5 {
        api.create(&PostParams::default(), &configmap(&format!("c{i}"), "1"))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let token = first.metadata.continue_.clone().unwrap();
    let second = api
        .list(&ListParams::default().limit(10).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(second.items.len(), 3);
    assert_eq!(second.items[0].name_any(), "c2");
}

#[tokio::test]
async fn secrets_events_and_leases_are_served() {
    let (_sb, client) = start().await;
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"pw": "hunter2"}}))
            .unwrap();
    let created = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(created.data.unwrap()["pw"].0, b"hunter2");
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let l: Lease = serde_json::from_value(
        json!({"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}}),
    )
    .unwrap();
    leases.create(&PostParams::default(), &l).await.unwrap();
    assert_eq!(
        leases
            .get("leader")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("me")
    );
    let events: Api<Event> = Api::default_namespaced(client);
    let e: Event = serde_json::from_value(json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Lease", "name": "leader"}, "reason": "Elected"})).unwrap();
    events.create(&PostParams::default(), &e).await.unwrap();
    let found = events
        .list(&ListParams::default().fields("involvedObject.name=leader"))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
}

#[tokio::test]
async fn discovery_reports_scopes_and_kinds() {
    let (_sb, client) = start().await;
    let discovery = Discovery::new(client).run().await.unwrap();
    let mut seen = 0;
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            match ar.plural.as_str() {
                "deployments" => {
                    assert_eq!(caps.scope, Scope::Namespaced);
                    assert!(caps.subresources.iter().any(|(s, _)| s.plural == "status"));
                    seen += 1;
                }
                "namespaces" | "customresourcedefinitions" | "clusterroles" => {
                    assert_eq!(caps.scope, Scope::Cluster);
                    seen += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(seen, 4);
}

#[tokio::test]
async fn creating_in_missing_namespace_is_not_found() {
    let (_sb, client) = start().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "ghost");
    let err = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap_err();
    assert_eq!(code(&err), 404);
}
