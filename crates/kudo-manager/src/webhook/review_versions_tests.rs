//! Who may change what an OperatorVersion holds.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use serde_json::{Value, json};

use super::*;
use crate::webhook::StaticOperatorVersions;
use crate::webhook::acting_as::tests::{Answers, WAIT, acting_as};

fn instance(namespace: &str, name: &str, ov: Value, account: Option<&str>) -> kudo_api::Instance {
    let mut spec = json!({"operatorVersion": ov});
    if let Some(account) = account {
        spec["serviceAccountName"] = json!(account);
    }
    serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec,
    }))
    .unwrap()
}

fn version(namespace: &str, templates: &str, shared_with: Option<&str>) -> Value {
    let mut ov = json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
        "metadata": {"name": "zk-1", "namespace": namespace, "labels": {"a": "b"}},
        "spec": {"version": "1", "templates": {"t.yaml": templates}},
    });
    if let Some(shared_with) = shared_with {
        ov["metadata"]["annotations"] = json!({"kudo.dev/shared-with": shared_with});
    }
    ov
}

fn review(operation: &str, user: &str, old: Value, new: Value) -> Vec<u8> {
    let namespace = new["metadata"]["namespace"].clone();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "OperatorVersion"},
            "resource": {"group": "kudo.dev", "version": "v1beta1", "resource": "operatorversions"},
            "name": "zk-1", "namespace": namespace, "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": new, "oldObject": old,
        }
    }))
    .unwrap()
}

fn reviewer(
    answers: &Arc<Answers>,
    instances: &[kudo_api::Instance],
) -> Reviewer<StaticOperatorVersions> {
    let mut source = StaticOperatorVersions::new();
    for instance in instances {
        source.insert_instance(instance);
    }
    Reviewer::new(source, WAIT).with_acting_as(Some(acting_as(answers)))
}

/// `None` when allowed, else the code and message.
fn refusal(review: &AdmissionReview<DynamicObject>) -> Option<(u16, String)> {
    let Some(response) = review.response.as_ref() else {
        panic!("a review without a response: {review:?}")
    };
    (!response.allowed).then(|| (response.result.code, response.result.message.clone()))
}

#[tokio::test]
async fn changing_a_version_an_instance_runs_needs_the_right_to_act_as_its_account() {
    let answers = Arc::new(Answers {
        allowed: vec![("alice", "team-a", "kudo-instance")],
        ..Default::default()
    });
    let zk = instance("team-a", "zk", json!({"name": "zk-1"}), None);
    let reviewer = reviewer(&answers, &[zk]);
    let (old, new) = (version("team-a", "a", None), version("team-a", "b", None));
    let body = review("UPDATE", "mallory", old.clone(), new.clone());
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(
        message.contains(
            "OperatorVersion team-a/zk-1 is run by Instance team-a/zk as ServiceAccount \
             team-a/kudo-instance, and user \"mallory\" may not act as it"
        ),
        "{message}"
    );
    assert!(message.contains("new OperatorVersion"), "{message}");
    let body = review("UPDATE", "alice", old, new);
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
}

#[tokio::test]
async fn creating_a_version_under_a_name_an_instance_runs_is_judged_like_a_change() {
    let answers = Arc::new(Answers::default());
    let zk = instance("team-a", "zk", json!({"name": "zk-1"}), Some("deployer"));
    let reviewer = reviewer(&answers, &[zk]);
    let body = review(
        "CREATE",
        "mallory",
        Value::Null,
        version("team-a", "a", None),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(
        message.contains("ServiceAccount team-a/deployer"),
        "{message}"
    );
}

#[tokio::test]
async fn a_version_no_instance_runs_is_written_without_asking() {
    let answers = Arc::new(Answers::default());
    let elsewhere = instance("team-a", "zk", json!({"name": "zk-2"}), None);
    let reviewer = reviewer(&answers, &[elsewhere]);
    let body = review(
        "UPDATE",
        "mallory",
        version("team-a", "a", None),
        version("team-a", "b", None),
    );
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
    assert_eq!(answers.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn metadata_writes_other_than_sharing_and_deletions_are_not_judged() {
    let answers = Arc::new(Answers::default());
    let zk = instance("team-a", "zk", json!({"name": "zk-1"}), None);
    let reviewer = reviewer(&answers, &[zk]);
    let old = version("team-a", "a", None);
    let mut labelled = old.clone();
    labelled["metadata"]["labels"] = json!({"c": "d"});
    let body = review("UPDATE", "mallory", old.clone(), labelled);
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
    let body = review("DELETE", "mallory", old, Value::Null);
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
    assert_eq!(answers.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn sharing_a_version_is_judged_by_the_instances_of_the_namespaces_it_newly_reaches() {
    let answers = Arc::new(Answers::default());
    let reference = json!({"name": "zk-1", "namespace": "team-a"});
    let users = [
        instance("team-a", "zk", json!({"name": "zk-1"}), None),
        instance("team-b", "zk", reference.clone(), None),
        instance("team-c", "zk", reference, None),
    ];
    let reviewer = reviewer(&answers, &users);
    let old = version("team-a", "a", Some("team-c"));
    // What runs in team-a and team-c does not change; team-b's Instance
    // would start running what mallory chose.
    let body = review(
        "UPDATE",
        "mallory",
        old,
        version("team-a", "a", Some("team-b,team-c")),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(
        message.contains("run by Instance team-b/zk as ServiceAccount team-b/kudo-instance"),
        "{message}"
    );
    assert_eq!(answers.asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_shared_version_is_judged_by_the_instances_of_the_namespaces_it_is_shared_with() {
    let answers = Arc::new(Answers {
        allowed: vec![("bob", "tenant-b", "kudo-instance")],
        ..Default::default()
    });
    let reference = json!({"name": "zk-1", "namespace": "tenant-b"});
    let users = [
        instance("tenant-a", "zk", reference.clone(), None),
        // Names it, but it is not shared with tenant-c: it does not run there.
        instance("tenant-c", "zk", reference, None),
    ];
    let reviewer = reviewer(&answers, &users);
    let old = version("tenant-b", "a", Some("tenant-a"));
    let body = review(
        "UPDATE",
        "bob",
        old.clone(),
        version("tenant-b", "b", Some("tenant-a")),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(
        message.contains("run by Instance tenant-a/zk as ServiceAccount tenant-a/kudo-instance"),
        "{message}"
    );
    // Shared no more, it runs in tenant-a no more.
    let body = review("UPDATE", "bob", old, version("tenant-b", "b", None));
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
}

#[tokio::test]
async fn a_question_left_unanswered_is_an_error_never_an_allow() {
    let answers = Arc::new(Answers {
        broken: true,
        ..Default::default()
    });
    let zk = instance("team-a", "zk", json!({"name": "zk-1"}), None);
    let reviewer = reviewer(&answers, &[zk]);
    let body = review("CREATE", "alice", Value::Null, version("team-a", "a", None));
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 500);
    assert!(message.contains("connection refused"), "{message}");
}

#[test]
fn each_namespace_and_account_is_asked_about_once_by_its_first_instance() {
    let named = |ns: &str, name: &str, account: Option<&str>| {
        InstanceUse::of(&instance(
            ns,
            name,
            json!({"name": "zk-1", "namespace": "team-a"}),
            account,
        ))
    };
    let found = [
        named("team-a", "b", None),
        named("team-a", "a", None),
        named("team-a", "c", Some("ops")),
        named("team-b", "d", None),
        named("team-c", "e", None),
    ];
    let target = Target {
        namespace: "team-a".into(),
        name: "zk-1".into(),
        annotations: Some([(SHARED_WITH_ANNOTATION.into(), "team-b".into())].into()),
        sharing_only: None,
    };
    let asked: Vec<(&str, &str)> = runners(&target, &found)
        .into_iter()
        .map(|i| (i.namespace(), i.name()))
        .collect();
    assert_eq!(asked, [("team-a", "a"), ("team-a", "c"), ("team-b", "d")]);
}

#[tokio::test]
async fn the_version_a_channel_moved_an_instance_to_is_judged_by_that_instance() {
    let answers = Arc::new(Answers::default());
    let mut moved = instance("team-a", "zk", json!({"name": "zk-0"}), None);
    moved.status = Some(kudo_api::InstanceStatus {
        upgrades: Some(kudo_api::upgrades::UpgradeStatus {
            operator_version: Some("zk-1".into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let reviewer = reviewer(&answers, &[moved]);
    let body = review(
        "UPDATE",
        "mallory",
        version("team-a", "a", None),
        version("team-a", "b", None),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(message.contains("run by Instance team-a/zk"), "{message}");
}

#[tokio::test]
async fn a_source_that_cannot_tell_which_instances_run_it_refuses_the_write() {
    let answers = Arc::new(Answers::default());
    let source = crate::webhook::FnSource(|_: &str, _: &str| Ok(None));
    let reviewer = Reviewer::new(source, WAIT).with_acting_as(Some(acting_as(&answers)));
    let body = review("CREATE", "alice", Value::Null, version("team-a", "a", None));
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 500);
    assert!(
        message.contains("cannot tell which Instances run OperatorVersion team-a/zk-1"),
        "{message}"
    );
}

#[tokio::test]
async fn changing_spec_and_sharing_at_once_is_judged_by_every_instance_that_would_run_it() {
    let answers = Arc::new(Answers {
        allowed: vec![("alice", "team-b", "kudo-instance")],
        ..Default::default()
    });
    let users = [
        instance("team-a", "zk", json!({"name": "zk-1"}), None),
        instance(
            "team-b",
            "zk",
            json!({"name": "zk-1", "namespace": "team-a"}),
            None,
        ),
    ];
    let reviewer = reviewer(&answers, &users);
    let body = review(
        "UPDATE",
        "alice",
        version("team-a", "a", None),
        version("team-a", "b", Some("team-b")),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403);
    assert!(message.contains("run by Instance team-a/zk"), "{message}");
}

#[tokio::test]
async fn an_instance_whose_account_cannot_be_one_runs_nothing_and_is_not_asked_about() {
    let answers = Arc::new(Answers::default());
    let broken = instance(
        "team-a",
        "zk",
        json!({"name": "zk-1"}),
        Some("Not An Account"),
    );
    let reviewer = reviewer(&answers, &[broken]);
    let body = review(
        "CREATE",
        "mallory",
        Value::Null,
        version("team-a", "a", None),
    );
    assert_eq!(refusal(&reviewer.review_bytes(&body).await), None);
    assert_eq!(answers.asked.load(Ordering::SeqCst), 0);
}

/// Fails the question about the first namespace, refuses the second, and
/// allows every other.
struct FailsThenRefuses(&'static str, &'static str);

impl crate::webhook::AccessReviews for FailsThenRefuses {
    fn may_impersonate<'a>(
        &'a self,
        _: &'a crate::webhook::UserInfo,
        namespace: &'a str,
        _: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<bool, String>> {
        let answer = if namespace == self.0 {
            Err("connection refused".to_string())
        } else {
            Ok(namespace != self.1)
        };
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn a_refusal_in_a_later_round_wins_over_an_unanswered_question() {
    let reference = json!({"name": "zk-1", "namespace": "team-a"});
    // Asked in namespace order: team-00's question fails in the first
    // round, team-a (the last) is refused in the second.
    let users: Vec<_> = (0..=CONCURRENT_QUESTIONS)
        .map(|i| instance(&format!("team-{i:02}"), "zk", reference.clone(), None))
        .chain([instance("team-a", "zk", json!({"name": "zk-1"}), None)])
        .collect();
    let mut source = StaticOperatorVersions::new();
    for instance in &users {
        source.insert_instance(instance);
    }
    let acting_as = crate::webhook::ActingAs::new(
        crate::identity::WriteAs::default(),
        Arc::new(FailsThenRefuses("team-00", "team-a")),
    );
    let reviewer = Reviewer::new(source, WAIT).with_acting_as(Some(acting_as));
    let body = review(
        "CREATE",
        "mallory",
        Value::Null,
        version("team-a", "a", Some("*")),
    );
    let (code, message) = refusal(&reviewer.review_bytes(&body).await).unwrap();
    assert_eq!(code, 403, "{message}");
    assert!(message.contains("run by Instance team-a/zk"), "{message}");
}
