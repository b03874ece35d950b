//! Access reviews are answered from the RBAC rules, as kube-apiserver does.

use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SubjectAccessReview,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::{code, namespace, start};

fn attributes(namespace: &str, verb: &str, resource: &str, name: &str) -> Value {
    json!({"namespace": namespace, "verb": verb, "group": "", "resource": resource, "name": name})
}

async fn local_review(client: &Client, ns: &str, spec: Value) -> Result<bool, kube::Error> {
    let review: LocalSubjectAccessReview =
        serde_json::from_value(json!({"metadata": {"namespace": ns}, "spec": spec})).unwrap();
    let answered = Api::<LocalSubjectAccessReview>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answered.status.unwrap().allowed)
}

/// Lets `user` impersonate the ServiceAccount `account` of `ns`.
async fn grant_impersonate(admin: &Client, ns: &str, user: &str, account: &str) {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "act-as"},
        "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"], "resourceNames": [account]}],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "act-as"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "act-as"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_local_subject_access_review_follows_the_roles_bound_to_the_user() {
    let (_sandbox, admin) = start().await;
    namespace(&admin, "team-a").await;
    namespace(&admin, "team-b").await;
    grant_impersonate(&admin, "team-a", "alice", "kudo-instance").await;
    let ask = |ns: &'static str, user: &'static str, account: &'static str| {
        let admin = admin.clone();
        async move {
            let spec = json!({"user": user, "groups": ["system:authenticated"],
                "resourceAttributes": attributes(ns, "impersonate", "serviceaccounts", account)});
            local_review(&admin, ns, spec).await.unwrap()
        }
    };
    assert!(ask("team-a", "alice", "kudo-instance").await);
    assert!(!ask("team-a", "alice", "deployer").await, "another account");
    assert!(
        !ask("team-b", "alice", "kudo-instance").await,
        "another namespace"
    );
    assert!(
        !ask("team-a", "mallory", "kudo-instance").await,
        "another user"
    );
    // The group kube-apiserver authorizes for everything.
    let masters = json!({"user": "root", "groups": ["system:masters"],
        "resourceAttributes": attributes("team-b", "impersonate", "serviceaccounts", "x")});
    assert!(local_review(&admin, "team-b", masters).await.unwrap());
}

#[tokio::test]
async fn a_local_review_of_another_namespace_or_of_nobody_is_refused() {
    let (_sandbox, admin) = start().await;
    namespace(&admin, "team-a").await;
    let elsewhere = json!({"user": "alice",
        "resourceAttributes": attributes("team-b", "get", "pods", "p")});
    let refused = local_review(&admin, "team-a", elsewhere).await.unwrap_err();
    assert_eq!(code(&refused), 400);
    let nobody = json!({"resourceAttributes": attributes("team-a", "get", "pods", "p")});
    let refused = local_review(&admin, "team-a", nobody).await.unwrap_err();
    assert_eq!(code(&refused), 422);
}

#[tokio::test]
async fn cluster_and_self_reviews_answer_for_the_subject_they_name() {
    let (sandbox, admin) = start().await;
    namespace(&admin, "team-a").await;
    grant_impersonate(&admin, "team-a", "alice", "kudo-instance").await;
    let review: SubjectAccessReview = serde_json::from_value(json!({"spec": {"user": "alice",
        "resourceAttributes": attributes("team-a", "impersonate", "serviceaccounts", "kudo-instance")}}))
    .unwrap();
    let answered = Api::<SubjectAccessReview>::all(admin.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert!(answered.status.unwrap().allowed);

    // alice may ask about herself, not about others.
    let mut config = sandbox.kube_config().unwrap();
    config.auth_info.impersonate = Some("alice".into());
    let alice = Client::try_from(config).unwrap();
    let own: SelfSubjectAccessReview = serde_json::from_value(json!({"spec": {
        "resourceAttributes": attributes("team-a", "impersonate", "serviceaccounts", "kudo-instance")}}))
    .unwrap();
    let answered = Api::<SelfSubjectAccessReview>::all(alice.clone())
        .create(&PostParams::default(), &own)
        .await
        .unwrap();
    assert!(answered.status.unwrap().allowed);
    let spec = json!({"user": "alice",
        "resourceAttributes": attributes("team-a", "impersonate", "serviceaccounts", "kudo-instance")});
    assert_eq!(
        code(&local_review(&alice, "team-a", spec).await.unwrap_err()),
        403
    );
}
