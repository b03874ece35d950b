use super::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, PostParams};
use kudo_sandbox::Sandbox;
use kudo_sandbox::Verb;
use serde_json::json;

fn configmaps(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &ApiResource::erase::<ConfigMap>(&()))
}

async fn make(client: &kube::Client, ns: &str, name: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

async fn look(live: &mut LiveNames, api: &Api<DynamicObject>, name: &str) -> Seen {
    live.look_up(None, api, "v1", "ConfigMap", "default", name)
        .await
        .unwrap()
}

fn lists(sandbox: &Sandbox) -> usize {
    sandbox
        .requests()
        .iter()
        .filter(|r| r.verb == Some(Verb::List))
        .count()
}

#[tokio::test]
async fn one_listing_answers_for_every_name_of_its_kind_and_namespace() {
    let sandbox = Sandbox::builder().request_log(1000).start().await.unwrap();
    let client = sandbox.client().unwrap();
    make(&client, "default", "there").await;
    let api = configmaps(&client, "default");
    let mut live = LiveNames::default();
    // The first object of a kind in a pass is asked for alone.
    assert!(matches!(
        look(&mut live, &api, "first").await,
        Seen::Unknown
    ));
    assert_eq!(lists(&sandbox), 0);
    let Seen::Present(meta) = look(&mut live, &api, "there").await else {
        panic!("a listed object is present");
    };
    assert_eq!(meta["metadata"]["name"], "there");
    assert!(matches!(
        look(&mut live, &api, "missing").await,
        Seen::Absent
    ));
    assert!(matches!(look(&mut live, &api, "other").await, Seen::Absent));
    assert_eq!(lists(&sandbox), 1, "{:?}", sandbox.requests());

    // Another pass lists afresh and sees what was made since.
    make(&client, "default", "missing").await;
    let mut next = LiveNames::default();
    assert!(matches!(
        look(&mut next, &api, "missing").await,
        Seen::Unknown
    ));
    assert!(matches!(
        look(&mut next, &api, "missing").await,
        Seen::Present(_)
    ));
    assert_eq!(lists(&sandbox), 2);
}

#[tokio::test]
async fn more_objects_than_a_listing_keeps_are_asked_for_one_by_one() {
    let sandbox = Sandbox::start().await.unwrap();
    let client = sandbox.client().unwrap();
    for i in 0..=MAX_LISTED {
        make(&client, "default", &format!("cm-{i}")).await;
    }
    let api = configmaps(&client, "default");
    let mut live = LiveNames::default();
    for name in ["cm-0", "cm-1", "nope"] {
        assert!(matches!(look(&mut live, &api, name).await, Seen::Unknown));
    }
}

#[tokio::test]
async fn a_writer_that_may_not_list_is_asked_per_object() {
    let sandbox = Sandbox::start().await.unwrap();
    let admin = sandbox.client().unwrap();
    make(&admin, "default", "there").await;
    let user = "system:serviceaccount:default:nobody";
    let mut config = sandbox.kube_config().unwrap();
    config.auth_info.impersonate = Some(user.into());
    let nobody = kube::Client::try_from(config).unwrap();
    let api = configmaps(&nobody, "default");
    let mut live = LiveNames::default();
    for _ in 0..2 {
        let seen = live
            .look_up(Some(user), &api, "v1", "ConfigMap", "default", "there")
            .await
            .unwrap();
        assert!(matches!(seen, Seen::Unknown));
    }
}
