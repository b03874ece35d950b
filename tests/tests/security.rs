//! A parameter cannot make the manager create an object: values stay
//! values in the rendered YAML. And what a package's templates write is
//! applied as the Instance's ServiceAccount (impersonation), so a package
//! cannot create what that account may not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::PostParams;
use kudo_api::ExecutionStatus as S;
use kudo_e2e::{Env, fixture, kudo_engine_config, plan_status};
use kudo_manager::controller::ControllerConfig;
use kudo_manager::identity::WriteAs;
use serde_json::json;

const DEPLOYER: &str = "deployer";

/// A parameter that ends the ConfigMap document and starts a binding of
/// its own to cluster-admin.
fn hostile_note(ns: &str) -> String {
    format!(
        "hi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
         metadata:\n  name: kudo-e2e-grab\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  \
         kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: ServiceAccount\n  \
         name: {DEPLOYER}\n  namespace: {ns}\n"
    )
}

/// The deployer account may manage ConfigMaps in the test namespace, nothing else.
async fn grant_configmaps(env: &Env) {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": DEPLOYER},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                   "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}],
    }))
    .unwrap();
    env.api::<Role>()
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": DEPLOYER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": DEPLOYER},
        "subjects": [{"kind": "ServiceAccount", "name": DEPLOYER, "namespace": env.ns}],
    }))
    .unwrap();
    env.api::<RoleBinding>()
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_cluster_role_binding_is_refused_and_the_rest_applies() {
    let mut env = Env::start_without_controller().await.unwrap();
    grant_configmaps(&env).await;
    env.start_controller_with(ControllerConfig {
        engine: kudo_engine_config(),
        write_as: WriteAs::Account {
            name: DEPLOYER.into(),
            create: false,
        },
        ..ControllerConfig::default()
    });

    // What the account may do still works.
    env.install(fixture("note-op"), "friendly", &[("NOTE", "hello")])
        .await
        .unwrap();
    env.wait_for(
        "friendly",
        "deploy COMPLETE",
        Duration::from_secs(60),
        |i| plan_status(i, "deploy") == Some(S::Complete),
    )
    .await
    .unwrap();
    let note = env.api::<ConfigMap>().get("friendly-note").await.unwrap();
    assert_eq!(note.data.unwrap()["note"], "hello");

    // The smuggled binding is refused before any request is made.
    let note = hostile_note(&env.ns);
    env.install(fixture("note-op"), "hostile", &[("NOTE", &note)])
        .await
        .unwrap();
    let message = fails_with(&env, "hostile").await;
    assert!(
        message.contains("parameter NOTE starts a new YAML document"),
        "{message}"
    );
    let grabbed = kube::Api::<ClusterRoleBinding>::all(env.client.clone())
        .get_opt("kudo-e2e-grab")
        .await
        .unwrap();
    assert!(
        grabbed.is_none(),
        "the binding to cluster-admin was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_cannot_add_an_object_even_when_the_manager_writes_as_itself() {
    // No account configured: the manager's own rights would allow the binding.
    let env = Env::start().await.unwrap();
    let note = hostile_note(&env.ns);
    // A tenant of the namespace installs it.
    let tenant = env.tenant(&env.ns, "mallory").await.unwrap();
    kudo_manager::install::install_package(
        &tenant,
        &fixture("note-op"),
        &env.ns,
        Some(kudo_manager::install::InstanceRequest {
            name: Some("hostile".into()),
            parameters: [("NOTE".to_string(), note)].into(),
        }),
    )
    .await
    .unwrap();
    let message = fails_with(&env, "hostile").await;
    assert!(
        message.contains("parameter NOTE starts a new YAML document in note.yaml:"),
        "names parameter, template and line: {message}"
    );
    assert!(message.contains("quote it or use toYaml"), "{message}");
    let grabbed = kube::Api::<ClusterRoleBinding>::all(env.client.clone())
        .get_opt("kudo-e2e-grab")
        .await
        .unwrap();
    assert!(
        grabbed.is_none(),
        "the binding to cluster-admin was created"
    );
    // Nothing of that step was applied.
    let note = env
        .api::<ConfigMap>()
        .get_opt("hostile-note")
        .await
        .unwrap();
    assert!(note.is_none(), "the step applied its ConfigMap");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_that_names_an_account_writes_as_that_account() {
    // The manager itself may write anything here; the Instance's account may not.
    let env = Env::start().await.unwrap();
    let ov = env
        .install_operator_version(fixture("note-op"))
        .await
        .unwrap();
    let inst: kudo_api::Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "nobody", "namespace": env.ns},
        "spec": {"operatorVersion": {"name": ov}, "serviceAccountName": "nobody"},
    }))
    .unwrap();
    env.instances()
        .create(&PostParams::default(), &inst)
        .await
        .unwrap();
    let message = fails_with(&env, "nobody").await;
    let user = format!("system:serviceaccount:{}:nobody", env.ns);
    assert!(message.contains(&user), "{message}");
}

/// Deploy plan's FATAL_ERROR with every message of the plan, as one text.
async fn fails_with(env: &Env, instance: &str) -> String {
    let failed = env
        .wait_for(
            instance,
            "deploy FATAL_ERROR",
            Duration::from_secs(60),
            |i| plan_status(i, "deploy") == Some(S::FatalError),
        )
        .await
        .unwrap();
    serde_json::to_string(&failed.status.unwrap().plan_status["deploy"]).unwrap()
}

async fn completes(env: &Env, instance: &str) {
    env.wait_for(instance, "deploy COMPLETE", Duration::from_secs(60), |i| {
        plan_status(i, "deploy") == Some(S::Complete)
    })
    .await
    .unwrap();
}

fn owner_of(cm: &ConfigMap) -> String {
    cm.metadata.owner_references.as_ref().unwrap()[0]
        .name
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_cannot_take_over_another_instances_object() {
    let env = Env::start().await.unwrap();
    env.install(
        fixture("note-op"),
        "first",
        &[("NOTE_NAME", "shared"), ("NOTE", "one")],
    )
    .await
    .unwrap();
    completes(&env, "first").await;
    env.install(
        fixture("note-op"),
        "second",
        &[("NOTE_NAME", "shared"), ("NOTE", "two")],
    )
    .await
    .unwrap();
    let message = fails_with(&env, "second").await;
    assert!(
        message.contains(&format!(
            "ConfigMap {}/shared is controlled by Instance {}/first",
            env.ns, env.ns
        )),
        "{message}"
    );
    let shared = env.api::<ConfigMap>().get("shared").await.unwrap();
    assert_eq!(owner_of(&shared), "first");
    assert_eq!(shared.data.unwrap()["note"], "one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_kudo_did_not_create_is_taken_over_only_when_handed_over() {
    let env = Env::start().await.unwrap();
    let handmade = |name: &str, adopt_by: Option<String>| {
        let mut cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"note": "mine"}}))
                .unwrap();
        if let Some(to) = adopt_by {
            cm.metadata.annotations = Some([("kudo.dev/adopt-by".to_string(), to)].into());
        }
        cm
    };
    let configmaps = env.api::<ConfigMap>();
    configmaps
        .create(&PostParams::default(), &handmade("handmade", None))
        .await
        .unwrap();
    env.install(fixture("note-op"), "grabber", &[("NOTE_NAME", "handmade")])
        .await
        .unwrap();
    let message = fails_with(&env, "grabber").await;
    assert!(message.contains("was not created by kudo-rs"), "{message}");
    assert_eq!(
        configmaps.get("handmade").await.unwrap().data.unwrap()["note"],
        "mine"
    );

    let to = format!("{}/adopter", env.ns);
    configmaps
        .create(&PostParams::default(), &handmade("handed", Some(to)))
        .await
        .unwrap();
    env.install(fixture("note-op"), "adopter", &[("NOTE_NAME", "handed")])
        .await
        .unwrap();
    completes(&env, "adopter").await;
    let handed = configmaps.get("handed").await.unwrap();
    assert_eq!(owner_of(&handed), "adopter");
    assert_eq!(handed.data.unwrap()["note"], "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_sizing_a_render_past_its_budget_fails_the_step_and_the_manager_lives() {
    let mut env = Env::start_without_controller().await.unwrap();
    env.start_controller_with(ControllerConfig {
        engine: kudo_engine::EngineConfig {
            auto_suppress_on_failure: false,
            ..kudo_engine_config()
        },
        render_limits: kudo_package::render::RenderLimits {
            max_template_output: 64 << 10,
            ..Default::default()
        },
        ..ControllerConfig::default()
    });
    // 2 TB of spaces, as one parameter asked for in the field.
    env.install(fixture("pad-op"), "huge", &[("PAD", "2000000000000")])
        .await
        .unwrap();
    let message = fails_with(&env, "huge").await;
    assert!(
        message.contains("indent") && message.contains("pad.yaml"),
        "names the function and template: {message}"
    );
    // 100 kB is within the default 4 MiB but over the configured 64 KiB.
    env.install(fixture("pad-op"), "pad", &[("PAD", "100000")])
        .await
        .unwrap();
    let message = fails_with(&env, "pad").await;
    assert!(message.contains("pad.yaml"), "{message}");
    // The same manager still serves: a sane value completes.
    env.patch_spec("pad", json!({"parameters": {"PAD": "4"}}))
        .await
        .unwrap();
    completes(&env, "pad").await;
    let cm = env.api::<ConfigMap>().get("pad-pad").await.unwrap();
    assert_eq!(cm.data.unwrap()["pad"], "    x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_template_loop_fails_its_step_and_the_manager_lives() {
    let mut env = Env::start_without_controller().await.unwrap();
    env.start_controller_with(ControllerConfig {
        engine: kudo_engine::EngineConfig {
            auto_suppress_on_failure: false,
            ..kudo_engine_config()
        },
        ..ControllerConfig::default()
    });
    // 2000³ = 8·10⁹ iterations: without the step budget this renders for
    // minutes on a runtime worker.
    env.install(fixture("loop-op"), "runaway", &[("N", "2000")])
        .await
        .unwrap();
    let message = fails_with(&env, "runaway").await;
    assert!(
        message.contains("step budget exceeded") && message.contains("loop.yaml"),
        "names the budget and the template: {message}"
    );
    // The same manager serves the next Instance.
    env.install(fixture("loop-op"), "small", &[("N", "3")])
        .await
        .unwrap();
    completes(&env, "small").await;
    let cm = env.api::<ConfigMap>().get("small-loop").await.unwrap();
    assert_eq!(cm.data.unwrap()["dots"], ".".repeat(27));
}

/// A namespace whose Instances have only the default rights (no grant
/// beyond what the manager makes).
async fn plain_namespace(env: &Env, name: &str) {
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    let _ = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await;
}

async fn install_in(env: &Env, ns: &str, package: &str, instance: &str) {
    kudo_manager::install::install_package(
        &env.client,
        &fixture(package),
        ns,
        Some(kudo_manager::install::InstanceRequest {
            name: Some(instance.into()),
            ..Default::default()
        }),
    )
    .await
    .unwrap();
}

async fn plan_ends(env: &Env, ns: &str, instance: &str, status: S) -> kudo_api::Instance {
    let api: kube::Api<kudo_api::Instance> = kube::Api::namespaced(env.client.clone(), ns);
    tokio::time::timeout(
        Duration::from_secs(60),
        kube::runtime::wait::await_condition(api, instance, |i: Option<&kudo_api::Instance>| {
            i.is_some_and(|i| plan_status(i, "deploy") == Some(status))
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("deploy of {ns}/{instance} did not end {status:?}"))
    .unwrap()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_objects_are_written_as_the_namespaces_kudo_instance_account() {
    let env = Env::start().await.unwrap();
    let ns = format!("{}-plain", env.ns);
    plain_namespace(&env, &ns).await;
    // What a namespace's application needs: the manager makes the account
    // and its binding, and the plan completes.
    install_in(&env, &ns, "note-op", "notes").await;
    plan_ends(&env, &ns, "notes", S::Complete).await;
    let account = kube::Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        env.client.clone(),
        &ns,
    )
    .get_opt("kudo-instance")
    .await
    .unwrap();
    assert!(account.is_some(), "the account was made");
    let binding = kube::Api::<RoleBinding>::namespaced(env.client.clone(), &ns)
        .get("kudo-instance")
        .await
        .unwrap();
    assert_eq!(binding.role_ref.kind, "ClusterRole");
    assert_eq!(binding.role_ref.name, "kudo-instance");

    // A package asking for a cluster-scoped object is refused, saying who
    // asked and what an administrator grants.
    install_in(&env, &ns, "binding-op", "binder").await;
    let failed = plan_ends(&env, &ns, "binder", S::FatalError).await;
    let message = serde_json::to_string(&failed.status.unwrap().plan_status["deploy"]).unwrap();
    assert!(
        message.contains(&format!("system:serviceaccount:{ns}:kudo-instance")),
        "{message}"
    );
    assert!(
        message.contains("kudo-rs grants nothing cluster-scoped by default"),
        "{message}"
    );
    let made = kube::Api::<ClusterRoleBinding>::all(env.client.clone())
        .get_opt(&format!("{ns}-binder-view"))
        .await
        .unwrap();
    assert!(made.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_writes_as_itself_only_when_told_to() {
    let mut env = Env::start_without_controller().await.unwrap();
    env.start_controller_with(ControllerConfig {
        engine: kudo_engine_config(),
        write_as: WriteAs::Manager,
        ..ControllerConfig::default()
    });
    let ns = format!("{}-itself", env.ns);
    plain_namespace(&env, &ns).await;
    install_in(&env, &ns, "binding-op", "binder").await;
    plan_ends(&env, &ns, "binder", S::Complete).await;
    let account = kube::Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        env.client.clone(),
        &ns,
    )
    .get_opt("kudo-instance")
    .await
    .unwrap();
    assert!(
        account.is_none(),
        "no account is made when the manager writes as itself"
    );
}

/// An OperatorVersion a tenant makes with kubectl skips `package verify`:
/// the manager runs it, and an Instance of one with a Namespace template
/// (which would claim another tenant's namespace) waits, saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_version_made_with_kubectl_is_verified_before_it_runs() {
    let env = Env::start().await.unwrap();
    let tenant = env.tenant(&env.ns, "mallory").await.unwrap();
    let ov: kudo_api::OperatorVersion = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
        "metadata": {"name": "grab-0.1.0", "namespace": env.ns},
        "spec": {
            "operator": {"name": "grab"}, "version": "0.1.0",
            "templates": {"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-b\n"},
            "tasks": [{"name": "app", "kind": "Apply", "spec": {"resources": ["ns.yaml"]}}],
            "plans": {"deploy": {"strategy": "serial", "phases": [
                {"name": "main", "strategy": "serial", "steps": [{"name": "s", "tasks": ["app"]}]}
            ]}}
        }
    }))
    .unwrap();
    kube::Api::<kudo_api::OperatorVersion>::namespaced(tenant.clone(), &env.ns)
        .create(&PostParams::default(), &ov)
        .await
        .unwrap();
    let inst: kudo_api::Instance = serde_json::from_value(json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "grabber", "namespace": env.ns},
        "spec": {"operatorVersion": {"name": "grab-0.1.0"}},
    }))
    .unwrap();
    kube::Api::<kudo_api::Instance>::namespaced(tenant, &env.ns)
        .create(&PostParams::default(), &inst)
        .await
        .unwrap();
    // A reconcile before the OperatorVersion reached the manager's cache
    // says it is not found; the one after it arrived says why it waits.
    let blocked = env
        .wait_for(
            "grabber",
            "the verify blocker",
            Duration::from_secs(60),
            |i| {
                i.status.as_ref().is_some_and(|s| {
                    s.blockers
                        .iter()
                        .any(|b| b.message.contains("does not pass package verify"))
                })
            },
        )
        .await
        .unwrap();
    let status = blocked.status.unwrap();
    let message = &status.blockers[0].message;
    assert!(
        message.contains(&format!(
            "OperatorVersion {}/grab-0.1.0 does not pass package verify: templates/ns.yaml: template contains a Namespace",
            env.ns
        )),
        "{message}"
    );
    assert!(
        status
            .plan_status
            .get("deploy")
            .and_then(|p| p.status)
            .is_none_or(|s| s == S::NeverRun)
    );
    let made = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .get_opt("tenant-b")
        .await
        .unwrap();
    assert!(made.is_none(), "the namespace was made");
}
