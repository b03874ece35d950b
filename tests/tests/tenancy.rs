//! Tenant input: an Instance runs another namespace's OperatorVersion only
//! when that namespace shares it, and nothing of an unshared one (its
//! default parameter values included) reaches the Instance's namespace;
//! and a channel moves an Instance only to an OperatorVersion that holds the
//! release's package, not to one planted under its name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kudo_api::names::SHARED_WITH_ANNOTATION;
use kudo_api::{ExecutionStatus as S, Instance, OperatorVersion};
use kudo_e2e::{Env, fixture, plan_status, skip_on_real_cluster};
use kudo_manager::install::install_package;
use serde_json::json;

/// The blocker of an Instance of tenant-a naming `ov` of tenant-b.
fn refusal(ov: &str) -> String {
    format!(
        "OperatorVersion {ov:?} of namespace tenant-b is not shared with namespace tenant-a; \
         use an OperatorVersion of namespace tenant-a, or ask the owner of tenant-b to add \
         tenant-a to the kudo.dev/shared-with annotation of that OperatorVersion"
    )
}

async fn create_namespace(env: &Env, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Waits (watching, with a timeout) until `cond` holds for Instance
/// tenant-a/`name`.
async fn wait_in_tenant_a(env: &Env, name: &str, cond: impl Fn(&Instance) -> bool) -> Instance {
    let api: Api<Instance> = Api::namespaced(env.client.clone(), "tenant-a");
    let waited = tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(api.clone(), name, move |i: Option<&Instance>| {
            i.is_some_and(&cond)
        }),
    )
    .await;
    match waited {
        Ok(Ok(Some(inst))) => inst,
        other => {
            let now = api.get_opt(name).await.unwrap();
            panic!("{other:?}; the Instance is now {now:#?}")
        }
    }
}

fn blocked_by(inst: &Instance) -> Vec<String> {
    inst.status
        .iter()
        .flat_map(|s| &s.blockers)
        .map(|b| b.message.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_namespaces_operator_version_deploys_only_once_shared() {
    if skip_on_real_cluster("creates namespaces of fixed names") {
        return;
    }
    let env = Env::start().await.unwrap();
    create_namespace(&env, "tenant-a").await;
    create_namespace(&env, "tenant-b").await;
    let ov = install_package(&env.client, &fixture("note-op"), "tenant-b", None)
        .await
        .unwrap()
        .operator_version;

    // The missing and the unshared OperatorVersion read alike.
    // Written by a tenant of tenant-a (a Role there, nothing elsewhere).
    let alice = env.tenant("tenant-a", "alice").await.unwrap();
    let instances: Api<Instance> = Api::namespaced(alice, "tenant-a");
    for (name, ov_name) in [("ghost", "nothing-0.1.0"), ("borrower", ov.as_str())] {
        let inst: Instance = serde_json::from_value(json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": name, "namespace": "tenant-a"},
            "spec": {"operatorVersion": {"name": ov_name, "namespace": "tenant-b"}},
        }))
        .unwrap();
        instances
            .create(&PostParams::default(), &inst)
            .await
            .unwrap();
    }
    let ghost = wait_in_tenant_a(&env, "ghost", |i| !blocked_by(i).is_empty()).await;
    assert_eq!(blocked_by(&ghost), [refusal("nothing-0.1.0")]);
    let borrower = wait_in_tenant_a(&env, "borrower", |i| !blocked_by(i).is_empty()).await;
    assert_eq!(blocked_by(&borrower), [refusal(&ov)]);
    assert_eq!(plan_status(&borrower, "deploy"), None, "no plan started");
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), "tenant-a");
    let note = configmaps.get_opt("borrower-note").await.unwrap();
    assert!(note.is_none(), "tenant-b's defaults landed in tenant-a");

    // Its owner shares it: the Instance that waited deploys.
    Api::<OperatorVersion>::namespaced(env.client.clone(), "tenant-b")
        .patch(
            &ov,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {SHARED_WITH_ANNOTATION: "tenant-a"}}}),
            ),
        )
        .await
        .unwrap();
    let deployed = wait_in_tenant_a(&env, "borrower", |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await;
    assert!(blocked_by(&deployed).is_empty());
    let note = configmaps.get("borrower-note").await.unwrap();
    assert_eq!(note.data.unwrap()["note"], "hello");
}

/// Whoever may create OperatorVersions in a namespace could make the one a
/// channel will move to before it does, or change it before the Instance's
/// status names it; the manager moves only to an OperatorVersion that holds
/// the release's package, and runs it only while it still does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_planted_under_the_name_of_a_channels_next_release_is_not_moved_to() {
    use kudo_e2e::channel_repo::{NEW_OV, Repo, reason, runs, t};
    use kudo_e2e::operator;
    let env = Env::start().await.unwrap();
    env.install_deployed(operator("first-operator"), "web", &[], t())
        .await
        .unwrap();
    let web = env.instances().get("web").await.unwrap();
    let installed = web.spec.operator_version.name.unwrap();
    let ovs = env.api::<OperatorVersion>();
    let mut planted = ovs.get(&installed).await.unwrap();
    planted.metadata = kube::api::ObjectMeta {
        name: Some(NEW_OV.into()),
        namespace: Some(env.ns.clone()),
        ..Default::default()
    };
    planted.spec.version = Some("0.3.0".into());
    let (file, template) = planted.spec.templates.iter_mut().next().unwrap();
    let file = file.clone();
    template.push_str("\n# planted\n");
    ovs.create(&PostParams::default(), &planted).await.unwrap();

    let repo = Repo::new();
    repo.publish("0.3.0");
    let name = format!("planted-{}", env.ns);
    repo.follow(&env, &name).await;
    env.patch_spec("web", json!({"upgrades": {"repository": name}}))
        .await
        .unwrap();
    let held = env
        .wait_for("web", "the planted version refused", t(), |i| {
            reason(i).contains("exists with other content than the release's package")
        })
        .await
        .unwrap();
    assert!(
        reason(&held).contains(&format!("templates/{file} differs")),
        "{}",
        reason(&held)
    );
    assert!(!runs(&held, NEW_OV));

    // Gone, it is made from the package, and the move goes on.
    ovs.delete(NEW_OV, &Default::default()).await.unwrap();
    env.wait_for("web", "running 0.3.0", t(), |i| runs(i, NEW_OV))
        .await
        .unwrap();

    // Changed after the move, it is not run; put back, it is again.
    let made = ovs.get(NEW_OV).await.unwrap();
    let mut changed = made.clone();
    changed
        .spec
        .templates
        .get_mut(&file)
        .unwrap()
        .push_str("\n# changed\n");
    let changed = ovs
        .replace(NEW_OV, &PostParams::default(), &changed)
        .await
        .unwrap();
    let blocked = |i: &Instance| {
        blocked_by(i)
            .iter()
            .any(|m| m.contains("was changed since its channel moved the Instance"))
    };
    env.wait_for("web", "the changed version blocked", t(), blocked)
        .await
        .unwrap();
    let mut restored = changed;
    restored.spec = made.spec;
    ovs.replace(NEW_OV, &PostParams::default(), &restored)
        .await
        .unwrap();
    env.wait_for("web", "unblocked", t(), |i| !blocked(i))
        .await
        .unwrap();
}
