//! Who may write an Instance: the account it runs as, and the answers kept.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Answers from a fixed list of (user, namespace, account) allowed; counts
/// the questions; fails every question when `broken`.
#[derive(Default)]
pub(crate) struct Answers {
    pub(crate) allowed: Vec<(&'static str, &'static str, &'static str)>,
    pub(crate) asked: AtomicUsize,
    pub(crate) broken: bool,
}

impl AccessReviews for Answers {
    fn may_impersonate<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &'a str,
        account: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = if self.broken {
            Err("connection refused".to_string())
        } else {
            Ok(self
                .allowed
                .iter()
                .any(|&(u, n, a)| u == user.username && n == namespace && a == account))
        };
        Box::pin(async move { answer })
    }
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.to_string(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    }
}

pub(crate) const WAIT: Duration = Duration::from_secs(1);

pub(crate) fn acting_as(answers: &Arc<Answers>) -> ActingAs {
    ActingAs::new(WriteAs::default(), answers.clone())
}

#[tokio::test]
async fn a_user_who_may_not_impersonate_the_account_is_refused_with_what_to_grant() {
    let answers = Arc::new(Answers::default());
    let refused = acting_as(&answers)
        .check(&user("mallory"), "team-a", "zk", None, WAIT)
        .await
        .unwrap_err();
    let NotAllowed::Denied(message) = refused else {
        panic!("{refused:?}")
    };
    assert!(message.contains("Instance team-a/zk"), "{message}");
    assert!(
        message.contains("ServiceAccount team-a/kudo-instance"),
        "{message}"
    );
    assert!(message.contains("\"mallory\""), "{message}");
    assert!(
        message.contains("impersonate on serviceaccounts"),
        "{message}"
    );
}

#[tokio::test]
async fn a_user_who_may_impersonate_the_named_account_is_admitted() {
    let answers = Arc::new(Answers {
        allowed: vec![("alice", "team-a", "deployer")],
        ..Default::default()
    });
    let check = acting_as(&answers);
    check
        .check(&user("alice"), "team-a", "zk", Some("deployer"), WAIT)
        .await
        .unwrap();
    // The default account is another one: not allowed.
    assert!(
        check
            .check(&user("alice"), "team-a", "zk", None, WAIT)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_account_writing_an_instance_that_runs_as_itself_is_not_asked_about() {
    let answers = Arc::new(Answers::default());
    let parent = user("system:serviceaccount:team-a:kudo-instance");
    acting_as(&answers)
        .check(&parent, "team-a", "child", None, WAIT)
        .await
        .unwrap();
    // The same account name in another namespace is another account.
    assert!(
        acting_as(&answers)
            .check(&parent, "team-b", "child", None, WAIT)
            .await
            .is_err()
    );
    assert_eq!(answers.asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn instances_that_run_as_the_manager_are_not_checked_unless_they_name_an_account() {
    let answers = Arc::new(Answers::default());
    let check = ActingAs::new(WriteAs::Manager, answers.clone());
    check
        .check(&user("mallory"), "team-a", "zk", None, WAIT)
        .await
        .unwrap();
    assert!(
        check
            .check(&user("mallory"), "team-a", "zk", Some("deployer"), WAIT)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_account_name_that_cannot_be_one_is_refused_without_asking() {
    let answers = Arc::new(Answers::default());
    let refused = acting_as(&answers)
        .check(&user("alice"), "team-a", "zk", Some("Not/An:Account"), WAIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, NotAllowed::Denied(m) if m.contains("not a valid ServiceAccount name")),
        "{refused:?}"
    );
    assert_eq!(answers.asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_unanswered_question_refuses_the_write_as_an_error() {
    let answers = Arc::new(Answers {
        broken: true,
        ..Default::default()
    });
    let refused = acting_as(&answers)
        .check(&user("alice"), "team-a", "zk", None, WAIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, NotAllowed::Unanswered(m) if m.contains("connection refused")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_answer_is_kept_per_user_and_account() {
    let answers = Arc::new(Answers {
        allowed: vec![("alice", "team-a", "kudo-instance")],
        ..Default::default()
    });
    let check = acting_as(&answers);
    for _ in 0..3 {
        check
            .check(&user("alice"), "team-a", "zk", None, WAIT)
            .await
            .unwrap();
    }
    assert_eq!(answers.asked.load(Ordering::SeqCst), 1);
    // Another group set is another question.
    let mut admin = user("alice");
    admin.groups.push("admins".into());
    check
        .check(&admin, "team-a", "zk", None, WAIT)
        .await
        .unwrap();
    assert_eq!(answers.asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refusal_is_asked_again_so_a_new_grant_holds_at_the_next_write() {
    let answers = Arc::new(Answers::default());
    let check = acting_as(&answers);
    for _ in 0..2 {
        assert!(
            check
                .check(&user("mallory"), "team-a", "zk", None, WAIT)
                .await
                .is_err()
        );
    }
    assert_eq!(answers.asked.load(Ordering::SeqCst), 2);
}

#[test]
fn answers_kept_stay_within_their_bound() {
    let check = acting_as(&Arc::new(Answers::default()));
    for i in 0..MAX_ANSWERS + 10 {
        check.keep((user(&format!("u{i}")), "ns".into(), "sa".into()));
    }
    assert_eq!(check.answers.lock().unwrap().len(), MAX_ANSWERS);
}

/// The reviewer's part: which writes are checked, and how a refusal reads.
mod reviews {
    use super::*;
    use crate::webhook::{Reviewer, StaticOperatorVersions};
    use kube::core::DynamicObject;
    use kube::core::admission::AdmissionReview;

    fn review(
        operation: &str,
        user: &str,
        old: serde_json::Value,
        new: serde_json::Value,
    ) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "Instance"},
                "resource": {"group": "kudo.dev", "version": "v1beta1", "resource": "instances"},
                "name": "zk", "namespace": "team-a",
                "operation": operation,
                "userInfo": {"username": user, "groups": ["system:authenticated"]},
                "object": new,
                "oldObject": old,
            }
        }))
        .unwrap()
    }

    fn zk(parameters: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": "zk", "namespace": "team-a"},
            "spec": {"operatorVersion": {"name": "zk-1"}, "parameters": parameters}
        })
    }

    fn reviewer(answers: &Arc<Answers>) -> Reviewer<StaticOperatorVersions> {
        Reviewer::new(StaticOperatorVersions::new(), WAIT).with_acting_as(Some(acting_as(answers)))
    }

    fn refusal(review: &AdmissionReview<DynamicObject>) -> (u16, String) {
        let response = review.response.as_ref().unwrap();
        assert!(!response.allowed, "{response:?}");
        (response.result.code, response.result.message.clone())
    }

    #[tokio::test]
    async fn creating_an_instance_without_the_right_to_act_as_its_account_is_forbidden() {
        let answers = Arc::new(Answers::default());
        let body = review(
            "CREATE",
            "mallory",
            serde_json::Value::Null,
            zk(serde_json::json!({})),
        );
        let (code, message) = refusal(&reviewer(&answers).review_bytes(&body).await);
        assert_eq!(code, 403);
        assert!(message.contains("may not act as it"), "{message}");
    }

    #[tokio::test]
    async fn a_parameter_change_is_checked_and_a_metadata_or_deletion_write_is_not() {
        let answers = Arc::new(Answers::default());
        let reviewer = reviewer(&answers);
        let old = zk(serde_json::json!({"A": "1"}));
        let changed = review(
            "UPDATE",
            "mallory",
            old.clone(),
            zk(serde_json::json!({"A": "2"})),
        );
        let (code, _) = refusal(&reviewer.review_bytes(&changed).await);
        assert_eq!(code, 403);
        assert_eq!(answers.asked.load(Ordering::SeqCst), 1);

        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = serde_json::json!({"team": "a"});
        let relabel = review("UPDATE", "mallory", old.clone(), labelled);
        let deletion = review("DELETE", "mallory", old, serde_json::Value::Null);
        for body in [relabel, deletion] {
            let answered = reviewer.review_bytes(&body).await;
            assert!(answered.response.as_ref().unwrap().allowed, "{answered:?}");
        }
        assert_eq!(answers.asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn turning_on_crd_deletion_is_checked_like_a_spec_change() {
        let answers = Arc::new(Answers {
            allowed: vec![("alice", "team-a", "kudo-instance")],
            ..Default::default()
        });
        let reviewer = reviewer(&answers);
        let plain = zk(serde_json::json!({}));
        let mut deleting = plain.clone();
        deleting["metadata"]["annotations"] = serde_json::json!({"kudo.dev/delete-crds": "true"});
        let by_mallory = review("UPDATE", "mallory", plain.clone(), deleting.clone());
        let (code, message) = refusal(&reviewer.review_bytes(&by_mallory).await);
        assert_eq!(code, 403);
        assert!(message.contains("may not act as it"), "{message}");
        let by_alice = review("UPDATE", "alice", plain.clone(), deleting.clone());
        let answered = reviewer.review_bytes(&by_alice).await;
        assert!(answered.response.as_ref().unwrap().allowed, "{answered:?}");
        // Turning it off asks nothing.
        let asked = answers.asked.load(Ordering::SeqCst);
        let off = review("UPDATE", "mallory", deleting, plain);
        let answered = reviewer.review_bytes(&off).await;
        assert!(answered.response.as_ref().unwrap().allowed, "{answered:?}");
        assert_eq!(answers.asked.load(Ordering::SeqCst), asked);
    }

    /// `body` as a write of the subresource `sub`.
    fn of_subresource(body: &[u8], sub: &str) -> Vec<u8> {
        let mut review: serde_json::Value = serde_json::from_slice(body).unwrap();
        review["request"]["subResource"] = serde_json::json!(sub);
        serde_json::to_vec(&review).unwrap()
    }

    #[tokio::test]
    async fn a_status_write_is_judged_by_who_writes_it_and_other_subresources_are_not() {
        let answers = Arc::new(Answers {
            allowed: vec![("alice", "team-a", "kudo-instance")],
            ..Default::default()
        });
        let reviewer = reviewer(&answers);
        let old = zk(serde_json::json!({}));
        // Points a channel's move at another OperatorVersion.
        let mut moved = old.clone();
        moved["status"] = serde_json::json!({"upgrades": {"operatorVersion": "zk-evil"}});
        let by_mallory = review("UPDATE", "mallory", old.clone(), moved.clone());
        let (code, message) = refusal(
            &reviewer
                .review_bytes(&of_subresource(&by_mallory, "status"))
                .await,
        );
        assert_eq!(code, 403);
        assert!(message.contains("may not act as it"), "{message}");
        let by_alice = review("UPDATE", "alice", old.clone(), moved.clone());
        let answered = reviewer
            .review_bytes(&of_subresource(&by_alice, "status"))
            .await;
        assert!(answered.response.as_ref().unwrap().allowed, "{answered:?}");
        let asked = answers.asked.load(Ordering::SeqCst);
        let other = reviewer
            .review_bytes(&of_subresource(&by_mallory, "finalizers"))
            .await;
        assert!(other.response.as_ref().unwrap().allowed, "{other:?}");
        assert_eq!(answers.asked.load(Ordering::SeqCst), asked);
    }

    #[tokio::test]
    async fn a_failed_question_is_an_error_answer_never_an_allow() {
        let answers = Arc::new(Answers {
            broken: true,
            ..Default::default()
        });
        let body = review(
            "CREATE",
            "alice",
            serde_json::Value::Null,
            zk(serde_json::json!({})),
        );
        let (code, message) = refusal(&reviewer(&answers).review_bytes(&body).await);
        assert_eq!(code, 500);
        assert!(message.contains("connection refused"), "{message}");
    }
}

#[test]
fn user_info_with_null_fields_decodes_as_empty() {
    let user: UserInfo = serde_json::from_value(serde_json::json!({
        "username": "alice", "uid": null, "groups": null,
        "extra": {"scopes": null, "token-id": ["t1"]},
    }))
    .unwrap();
    assert_eq!(user.username, "alice");
    assert!(user.groups.is_empty());
    assert_eq!(user.extra["scopes"], Vec::<String>::new());
    let user: UserInfo = serde_json::from_value(serde_json::json!({"extra": null})).unwrap();
    assert_eq!(user, UserInfo::default());
}

#[tokio::test]
async fn the_answer_for_a_very_large_user_is_not_kept() {
    let answers = Arc::new(Answers {
        allowed: vec![("alice", "team-a", "kudo-instance")],
        ..Default::default()
    });
    let check = acting_as(&answers);
    let mut alice = user("alice");
    alice.groups = (0..1000).map(|i| format!("group-{i}")).collect();
    for _ in 0..2 {
        check
            .check(&alice, "team-a", "zk", None, WAIT)
            .await
            .unwrap();
    }
    assert_eq!(answers.asked.load(Ordering::SeqCst), 2);
    assert!(check.answers.lock().unwrap().is_empty());
}
