//! An Instance may use another namespace's OperatorVersion only when it is
//! shared with its own; the answer tells nothing more.

use super::*;

/// `inject_ov` kept in namespace `other`, shared as `shared_with` says.
fn foreign_ov(shared_with: Option<&str>) -> OperatorVersion {
    let mut ov = inject_ov();
    ov.metadata.namespace = Some("other".into());
    ov.metadata.annotations = shared_with.map(|to| {
        [(
            kudo_api::names::SHARED_WITH_ANNOTATION.to_string(),
            to.into(),
        )]
        .into_iter()
        .collect()
    });
    ov
}

/// An Instance of `ns` (namespace given by the request only) running
/// `inject-0.1.0` of namespace `other`, with a value its template refuses.
fn naming_other_namespace() -> Vec<u8> {
    let mut inst = with_greeting("x\nkind: Secret");
    inst["metadata"] = serde_json::json!({"name": "zk"});
    inst["spec"]["operatorVersion"]["namespace"] = "other".into();
    review_json("CREATE", inst)
}

#[tokio::test]
async fn another_namespaces_operator_version_is_refused_alike_whether_it_exists_or_not() {
    let refused_with = |source: StaticOperatorVersions| async move {
        let reviewer = Reviewer::new(source, Duration::from_secs(1));
        let review = reviewer.review_bytes(&naming_other_namespace()).await;
        refusal(&review, 403).to_string()
    };
    let unshared = refused_with(StaticOperatorVersions::from_iter([foreign_ov(None)])).await;
    let missing = refused_with(StaticOperatorVersions::new()).await;
    let elsewhere =
        refused_with(StaticOperatorVersions::from_iter([foreign_ov(Some("ns2"))])).await;
    assert_eq!(
        unshared,
        "Instance ns/zk: OperatorVersion \"inject-0.1.0\" of namespace other is not shared with \
         namespace ns; use an OperatorVersion of namespace ns, or ask the owner of other to add ns \
         to the kudo.dev/shared-with annotation of that OperatorVersion"
    );
    assert_eq!(missing, unshared, "the answer tells whether it exists");
    assert_eq!(elsewhere, unshared);
}

#[tokio::test]
async fn another_namespaces_operator_version_shared_with_this_one_is_reviewed_as_usual() {
    let reviewer = Reviewer::new(
        StaticOperatorVersions::from_iter([foreign_ov(Some("ns"))]),
        Duration::from_secs(1),
    );
    let review = reviewer.review_bytes(&naming_other_namespace()).await;
    assert!(refusal(&review, 403).contains("parameter GREETING adds"));
}

#[tokio::test]
async fn an_update_away_from_a_cross_namespace_operator_version_reads_only_its_own_namespace() {
    let (reviewer, seen) = recording_reviewer();
    let mut old = zk("zk-1");
    old["spec"]["operatorVersion"]["namespace"] = "other".into();
    let mut body: serde_json::Value =
        serde_json::from_slice(&review_json("UPDATE", zk("zk-2"))).unwrap();
    body["request"]["oldObject"] = old;
    reviewer
        .review_bytes(&serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(*seen.lock().unwrap(), ["ns/zk-2".to_string()]);
}
