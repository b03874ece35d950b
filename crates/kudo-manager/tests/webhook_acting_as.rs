//! Whoever writes an Instance, or its status, or the OperatorVersion it
//! runs, must be allowed to act as the account its plans run as: through
//! kudo-sandbox, which answers the webhook's access
//! reviews from its RBAC rules and tells the webhook who writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kudo_api::{Instance, OperatorVersion};
use kudo_manager::metrics::Metrics;
use kudo_sandbox::Sandbox;
use serde_json::{Value, json};
use support::local_webhook::{create_greeting_operator_version, install_crds, start_webhook};

/// Binds `rules` to `subject` in `default`, under `name`.
async fn grant(admin: &Client, name: &str, subject: Value, rules: Value) {
    grant_in(admin, "default", name, subject, rules).await;
}

/// Binds `rules` to `subject` in `namespace`, under `name`.
async fn grant_in(admin: &Client, namespace: &str, name: &str, subject: Value, rules: Value) {
    let role: Role =
        serde_json::from_value(json!({"metadata": {"name": name}, "rules": rules})).unwrap();
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// Objects of `default`, read and written as `user` (impersonated).
fn api_as<K>(sandbox: &Sandbox, user: &str) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    let mut config = sandbox.kube_config().unwrap();
    config.auth_info.impersonate = Some(user.into());
    Api::namespaced(Client::try_from(config).unwrap(), "default")
}

/// The template a hostile package writer puts in place.
fn rewrite() -> Value {
    json!({"spec": {"templates": {"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\n"}}})
}

fn user(name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

fn instance(name: &str, account: Option<&str>) -> Instance {
    let mut spec = json!({"operatorVersion": {"name": "hello-0.1.0"}});
    if let Some(account) = account {
        spec["serviceAccountName"] = json!(account);
    }
    serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_writer_who_may_act_as_the_instances_account_may_create_or_change_it_or_its_status()
{
    let sandbox = Sandbox::start().await.unwrap();
    let admin = sandbox.client().unwrap();
    install_crds(&admin).await;
    create_greeting_operator_version(&admin, "hello").await;
    let certs = tempfile::tempdir().unwrap();
    let (_, stop, webhook) = start_webhook(&admin, certs.path(), &Metrics::new()).await;

    // mallory may write Instances, and nothing else.
    grant(
        &admin,
        "instances",
        user("mallory"),
        json!([{"apiGroups": ["kudo.dev"], "resources": ["instances"], "verbs": ["*"]}]),
    )
    .await;
    let mallory: Api<Instance> = api_as(&sandbox, "mallory");
    let refused = mallory
        .create(&PostParams::default(), &instance("hello", None))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(
            "runs its plans as ServiceAccount default/kudo-instance, and user \"mallory\" may not act as it"
        ),
        "{refused}"
    );
    assert!(
        Api::<Instance>::namespaced(admin.clone(), "default")
            .get_opt("hello")
            .await
            .unwrap()
            .is_none()
    );

    // The right the edit role holds for every account; here for one.
    grant(
        &admin,
        "act-as",
        user("mallory"),
        json!([{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"], "resourceNames": ["kudo-instance"]}]),
    )
    .await;
    mallory
        .create(&PostParams::default(), &instance("hello", None))
        .await
        .unwrap();
    // Another account is another right.
    let refused = mallory
        .create(&PostParams::default(), &instance("other", Some("deployer")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("ServiceAccount default/deployer"),
        "{refused}"
    );

    // An administrator's Instance names that account; mallory may not
    // change what it runs, and may still label it.
    Api::<Instance>::namespaced(admin.clone(), "default")
        .create(
            &PostParams::default(),
            &instance("admins", Some("deployer")),
        )
        .await
        .unwrap();
    let refused = mallory
        .patch(
            "admins",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parameters": {"GREETING": "hello"}}})),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("may not act as it"), "{refused}");
    mallory
        .patch(
            "admins",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
        )
        .await
        .unwrap();

    // The status names what runs (a channel's OperatorVersion, a run's
    // values): writing it asks the same right.
    grant(
        &admin,
        "instance-status",
        user("mallory"),
        json!([{"apiGroups": ["kudo.dev"], "resources": ["instances/status"], "verbs": ["*"]}]),
    )
    .await;
    let moved = Patch::Merge(json!({"status": {"upgrades": {"operatorVersion": "hello-0.1.0"}}}));
    let refused = mallory
        .patch_status("admins", &PatchParams::default(), &moved)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("ServiceAccount default/deployer, and user \"mallory\" may not act as it"),
        "{refused}"
    );
    mallory
        .patch_status("hello", &PatchParams::default(), &moved)
        .await
        .unwrap();
    Api::<Instance>::namespaced(admin.clone(), "default")
        .patch_status("admins", &PatchParams::default(), &moved)
        .await
        .unwrap();

    // A package's Instance, applied as the parent's account: it may run
    // as that account (itself), not reach another one.
    let account: Api<Instance> = api_as(&sandbox, "system:serviceaccount:default:kudo-instance");
    let account_subject =
        json!({"kind": "ServiceAccount", "name": "kudo-instance", "namespace": "default"});
    grant(
        &admin,
        "account",
        account_subject,
        kudo_api::rbac::instance_rules(),
    )
    .await;
    account
        .create(&PostParams::default(), &instance("child", None))
        .await
        .unwrap();
    let refused = account
        .create(&PostParams::default(), &instance("reach", Some("deployer")))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("\"system:serviceaccount:default:kudo-instance\" may not act as it"),
        "{refused}"
    );

    let _ = stop.send(());
    webhook.await.unwrap().unwrap();
    sandbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_writer_who_may_act_as_its_instances_accounts_may_change_or_replace_an_operator_version()
 {
    let sandbox = Sandbox::start().await.unwrap();
    let admin = sandbox.client().unwrap();
    install_crds(&admin).await;
    create_greeting_operator_version(&admin, "hello").await;
    create_greeting_operator_version(&admin, "spare").await;
    let certs = tempfile::tempdir().unwrap();
    let (_, stop, webhook) = start_webhook(&admin, certs.path(), &Metrics::new()).await;
    // An administrator's Instance runs hello-0.1.0 as a privileged account.
    // The next write is judged at once: the webhook lists the Instances of
    // the version's namespace live.
    Api::<Instance>::namespaced(admin.clone(), "default")
        .create(
            &PostParams::default(),
            &instance("admins", Some("deployer")),
        )
        .await
        .unwrap();

    // mallory may write packages, and nothing else.
    grant(
        &admin,
        "packages",
        user("mallory"),
        json!([{"apiGroups": ["kudo.dev"], "resources": ["operatorversions"], "verbs": ["*"]}]),
    )
    .await;
    let mallory: Api<OperatorVersion> = api_as(&sandbox, "mallory");
    let rewrite = rewrite();
    let patch = Patch::Merge(&rewrite);
    let refused = mallory
        .patch("hello-0.1.0", &PatchParams::default(), &patch)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(
            "OperatorVersion default/hello-0.1.0 is run by Instance default/admins as \
             ServiceAccount default/deployer, and user \"mallory\" may not act as it"
        ),
        "{refused}"
    );
    // A version no Instance runs is hers to change; labels are anyone's.
    mallory
        .patch("spare-0.1.0", &PatchParams::default(), &patch)
        .await
        .unwrap();
    mallory
        .patch(
            "hello-0.1.0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
    // Deleting it stops the Instance; putting another in its place is a
    // change like any other.
    let held = mallory.get("hello-0.1.0").await.unwrap();
    mallory
        .delete("hello-0.1.0", &Default::default())
        .await
        .unwrap();
    let mut replacement = held.clone();
    replacement.metadata = kube::api::ObjectMeta {
        name: held.metadata.name.clone(),
        namespace: held.metadata.namespace.clone(),
        ..Default::default()
    };
    replacement.spec.templates.insert(
        "configmap.yaml".into(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\n".into(),
    );
    let refused = mallory
        .create(&PostParams::default(), &replacement)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("is run by Instance default/admins as ServiceAccount default/deployer"),
        "{refused}"
    );
    // The administrator may.
    Api::<OperatorVersion>::namespaced(admin.clone(), "default")
        .create(&PostParams::default(), &replacement)
        .await
        .unwrap();

    let _ = stop.send(());
    webhook.await.unwrap().unwrap();
    sandbox.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_of_a_shared_operator_version_may_not_change_what_another_namespace_runs() {
    let sandbox = Sandbox::start().await.unwrap();
    let admin = sandbox.client().unwrap();
    install_crds(&admin).await;
    create_greeting_operator_version(&admin, "hello").await;
    let ovs = Api::<OperatorVersion>::namespaced(admin.clone(), "default");
    let share = json!({"metadata": {"annotations": {"kudo.dev/shared-with": "tenant-a"}}});
    ovs.patch(
        "hello-0.1.0",
        &PatchParams::default(),
        &Patch::Merge(&share),
    )
    .await
    .unwrap();
    let namespace: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "tenant-a"}})).unwrap();
    Api::all(admin.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    // tenant-a runs default's shared version. Made before the webhook
    // starts: other namespaces' Instances come from its watch, which lists
    // it first.
    let mut shared = instance("shared", None);
    shared.metadata.namespace = Some("tenant-a".into());
    shared.spec.operator_version.namespace = Some("default".into());
    Api::<Instance>::namespaced(admin.clone(), "tenant-a")
        .create(&PostParams::default(), &shared)
        .await
        .unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (_, stop, webhook) = start_webhook(&admin, certs.path(), &Metrics::new()).await;

    // bob owns default's packages, and may act as its account.
    grant(
        &admin,
        "owner",
        user("bob"),
        json!([
            {"apiGroups": ["kudo.dev"], "resources": ["operatorversions"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
        ]),
    )
    .await;
    let bob: Api<OperatorVersion> = api_as(&sandbox, "bob");
    let rewrite = rewrite();
    let refused = bob
        .patch(
            "hello-0.1.0",
            &PatchParams::default(),
            &Patch::Merge(&rewrite),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(
            "is run by Instance tenant-a/shared as ServiceAccount tenant-a/kudo-instance, and \
             user \"bob\" may not act as it"
        ),
        "{refused}"
    );
    // Once tenant-a's editors let bob act there too, he may.
    grant_in(
        &admin,
        "tenant-a",
        "owner",
        user("bob"),
        json!([{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}]),
    )
    .await;
    bob.patch(
        "hello-0.1.0",
        &PatchParams::default(),
        &Patch::Merge(&rewrite),
    )
    .await
    .unwrap();

    let _ = stop.send(());
    webhook.await.unwrap().unwrap();
    sandbox.stop().await;
}
