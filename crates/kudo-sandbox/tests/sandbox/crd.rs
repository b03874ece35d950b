use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

use crate::start;

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap()
}

async fn install(client: &kube::Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(
            crds,
            "widgets.example.com",
            conditions::is_crd_established(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::default_namespaced_with(client.clone(), &ar)
}

fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": size, "anything": {"goes": true}}
    }))
    .unwrap()
}

#[tokio::test]
async fn crd_kinds_are_served_once_established() {
    let (_sb, client) = start().await;
    let api = install(&client).await;
    let created = api
        .create(&PostParams::default(), &widget("w", 3))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["anything"]["goes"], true);
    let got = api.get("w").await.unwrap();
    assert_eq!(got.data["spec"]["size"], 3);
}

#[tokio::test]
async fn crd_status_subresource_is_separate() {
    let (_sb, client) = start().await;
    let api = install(&client).await;
    api.create(&PostParams::default(), &widget("w", 3))
        .await
        .unwrap();
    let out = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}, "status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert!(out.data.get("status").is_none());
    assert_eq!(out.metadata.generation, Some(2));
    let out = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(out.data["status"]["ready"], true);
    assert_eq!(out.metadata.generation, Some(2));
}

#[tokio::test]
async fn unknown_kind_before_crd_is_not_found() {
    let (_sb, client) = start().await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    match api
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap_err()
    {
        kube::Error::Api(s) => assert_eq!(s.code, 404),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn kudo_crds_from_the_repository_install() {
    let (_sb, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).unwrap();
        let created = crds.create(&PostParams::default(), &crd).await.unwrap();
        let established = created
            .status
            .unwrap()
            .conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established);
        count += 1;
    }
    assert_eq!(count, 5);
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kudo.dev", "v1beta1", "Instance"),
        "instances",
    );
    let instances: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    let inst: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "metadata": {"name": "i"},
        "spec": {"operatorVersion": {"name": "op-1.0"}}
    }))
    .unwrap();
    instances
        .create(&PostParams::default(), &inst)
        .await
        .unwrap();
    assert_eq!(
        instances
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn a_crd_in_a_kubernetes_owned_group_needs_the_api_approval_annotation() {
    let (_sb, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let mut crd = widget_crd();
    crd.metadata.name = Some("widgets.example.k8s.io".into());
    crd.spec.group = "example.k8s.io".into();
    match crds.create(&PostParams::default(), &crd).await.unwrap_err() {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            assert_eq!(
                s.message,
                "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.k8s.io\" is \
                 invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: \
                 protected groups must have approval annotation \"api-approved.kubernetes.io\", \
                 see https://github.com/kubernetes/enhancements/pull/1111"
            );
        }
        other => panic!("{other:?}"),
    }
    crd.metadata.annotations = Some(
        [(
            "api-approved.kubernetes.io".to_string(),
            "unapproved, experimental-only".to_string(),
        )]
        .into(),
    );
    crds.create(&PostParams::default(), &crd).await.unwrap();
    // Taking the annotation away again is refused too.
    let removed = crds
        .patch(
            "widgets.example.k8s.io",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"api-approved.kubernetes.io": null}}}),
            ),
        )
        .await;
    assert!(
        matches!(&removed, Err(kube::Error::Api(s)) if s.code == 422),
        "{removed:?}"
    );
}

fn condition(crd: &CustomResourceDefinition, type_: &str) -> Option<(String, String)> {
    let conditions = crd.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

fn rv(meta: &kube::api::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_delayed_crd_serves_its_kind_only_once_established() {
    let sandbox = kudo_sandbox::Sandbox::builder()
        .crd_establish_delay(Duration::from_secs(1))
        .start()
        .await
        .unwrap();
    let client = sandbox.client().unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let created = crds
        .create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    // Stored as a real API server stores it before its CRD controllers run.
    assert_eq!(condition(&created, "NamesAccepted"), None);
    assert_eq!(condition(&created, "Established"), None);
    assert_eq!(
        created
            .status
            .as_ref()
            .unwrap()
            .accepted_names
            .as_ref()
            .map(|n| n.plural.as_str()),
        Some("")
    );
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &ar);
    let early = api
        .create(&PostParams::default(), &widget("early", 1))
        .await;
    let discovered = kube::discovery::pinned_kind(&client, &gvk).await;
    let after = crds.get("widgets.example.com").await.unwrap();
    if condition(&after, "Established").is_none() {
        // Both requests came while the CRD was not Established.
        assert!(
            matches!(&early, Err(kube::Error::Api(s)) if s.code == 404),
            "{early:?}"
        );
        assert!(discovered.is_err(), "{discovered:?}");
    } else if let Ok(w) = &early {
        // A slow machine: the create may only succeed after Established.
        assert!(
            rv(&w.metadata) > rv(&after.metadata),
            "served before Established"
        );
    }
    let established = tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(
            crds.clone(),
            "widgets.example.com",
            conditions::is_crd_established(),
        ),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(
        condition(&established, "NamesAccepted"),
        Some(("True".into(), "NoConflicts".into()))
    );
    assert_eq!(
        condition(&established, "Established"),
        Some(("True".into(), "InitialNamesAccepted".into()))
    );
    let names = established
        .status
        .as_ref()
        .unwrap()
        .accepted_names
        .clone()
        .unwrap();
    assert_eq!(
        (names.plural.as_str(), names.list_kind.as_deref()),
        ("widgets", Some("WidgetList"))
    );
    kube::discovery::pinned_kind(&client, &gvk).await.unwrap();
    api.create(&PostParams::default(), &widget("late", 2))
        .await
        .unwrap();
    // An update of an Established CRD keeps it Established.
    let updated = crds
        .patch(
            "widgets.example.com",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        condition(&updated, "Established").map(|c| c.0),
        Some("True".into())
    );
}
