//! # kudo-e2e
//!
//! End-to-end tests of kudo-rs. By default each test starts its own
//! in-process API server (kudo-sandbox), installs the kudo.dev CRDs, runs the
//! controller in-process (the smoke test runs the real `kudo-manager` binary)
//! and checks what happens to Instances and objects. With
//! `KUDO_E2E_KUBECONFIG` set the same tests run against that cluster instead,
//! each in a fresh namespace (see [`cluster`]).
//!
//! [`Env`] is the harness; waits are watches with a timeout, never sleeps.

pub mod channel_repo;
pub mod chaos;
pub mod cluster;
pub mod resilient;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::await_condition;
use kube::{Client, Resource};
use kudo_api::{ExecutionStatus, Instance};
use kudo_engine::EngineConfig;
use kudo_manager::admin::Readiness;
use kudo_manager::controller::{self, ControllerConfig};
use kudo_manager::install::{InstanceRequest, install_package};
use kudo_manager::metrics::Metrics;
use kudo_sandbox::{Sandbox, SandboxBuilder};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use cluster::{Cluster, on_real_cluster, skip_on_real_cluster, timeout};

/// Namespace the tests use on the sandbox (on a real cluster see [`Env::ns`]).
pub const NS: &str = "default";

/// Path of a fixture package under `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Path of an example package under `operators/`.
pub fn operator(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("operators")
        .join(name)
}

/// One API server, a namespace on it and (optionally) a controller running
/// against it.
pub struct Env {
    /// The API server: the in-process sandbox, or the cluster of
    /// `KUDO_E2E_KUBECONFIG`.
    pub sandbox: Cluster,
    /// A client for it (its default namespace is [`Env::ns`]).
    pub client: Client,
    /// The namespace of this test: [`NS`] on the sandbox, a fresh
    /// `kudo-e2e-xxxxxxxx` on a real cluster.
    pub ns: String,
    /// The running controller's metrics.
    pub metrics: Metrics,
    controller: Option<(CancellationToken, JoinHandle<kudo_manager::Result<()>>)>,
    // Declared last: dropped after the controller is stopped.
    _namespace: Option<cluster::NamespaceGuard>,
}

impl Env {
    /// The CRDs and a running controller, on a sandbox or the real cluster.
    pub async fn start() -> Result<Self> {
        Self::start_with(Sandbox::builder()).await
    }

    /// As [`Env::start`] with sandbox options (not used on a real cluster).
    pub async fn start_with(builder: SandboxBuilder) -> Result<Self> {
        if std::env::var_os("KUDO_E2E_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_env("KUDO_E2E_LOG"))
                .with_test_writer()
                .try_init();
        }
        if let Some(kubeconfig) = cluster::remote_kubeconfig() {
            return Self::start_remote(kubeconfig).await;
        }
        let sandbox = builder.start().await.map_err(|e| anyhow!("sandbox: {e}"))?;
        let client = sandbox
            .client()
            .map_err(|e| anyhow!("sandbox client: {e}"))?;
        cluster::install_crds_established(&client).await?;
        let mut env = Self {
            sandbox: Cluster::Sandbox(sandbox),
            client,
            ns: NS.to_string(),
            metrics: Metrics::new(),
            controller: None,
            _namespace: None,
        };
        env.grant_everything(NS).await?;
        env.start_controller();
        Ok(env)
    }

    /// A client acting as the user `user` (impersonated), a tenant of
    /// `namespace`: a Role there with every right on Instances, Operators,
    /// OperatorVersions, ConfigMaps, Secrets and pods, and `impersonate` on
    /// its ServiceAccounts (as the `edit` role holds it: the webhook
    /// admits an Instance only from whoever may act as its account), and
    /// nothing else.
    /// The sandbox, like kube-apiserver, checks its requests against it.
    pub async fn tenant(&self, namespace: &str, user: &str) -> Result<Client> {
        use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
        let params = PatchParams::apply("kudo-e2e").force();
        let name = format!("tenant-{user}");
        let role: Role = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": namespace},
            "rules": [
                {"apiGroups": ["kudo.dev"], "resources": ["instances", "operators", "operatorversions"], "verbs": ["*"]},
                {"apiGroups": [""], "resources": ["configmaps", "secrets", "pods"], "verbs": ["*"]},
                {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
            ],
        }))?;
        Api::<Role>::namespaced(self.client.clone(), namespace)
            .patch(&name, &params, &Patch::Apply(&role))
            .await
            .context("making the tenant's Role")?;
        let binding: RoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))?;
        Api::<RoleBinding>::namespaced(self.client.clone(), namespace)
            .patch(&name, &params, &Patch::Apply(&binding))
            .await
            .context("binding the tenant's Role")?;
        let mut config = self.sandbox.kube_config()?;
        config.auth_info.impersonate = Some(user.to_string());
        config.default_namespace = namespace.to_string();
        Client::try_from(config).context("the tenant's client")
    }

    /// Lets the Instances of `namespace` write anything: binds its
    /// `kudo-instance` account (which the manager makes and writes their
    /// objects as, by default) to a ClusterRole of every right, as a cluster
    /// administrator does for packages that create cluster-scoped objects.
    /// The fixtures create namespaces, CRDs and cluster roles; tests of the
    /// default rights use a namespace without this grant.
    pub async fn grant_everything(&self, namespace: &str) -> Result<()> {
        use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
        let params = PatchParams::apply("kudo-e2e").force();
        let role: ClusterRole = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "kudo-e2e-everything"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        }))?;
        Api::<ClusterRole>::all(self.client.clone())
            .patch("kudo-e2e-everything", &params, &Patch::Apply(&role))
            .await
            .context("granting the test namespace's Instances every right")?;
        let name = format!("kudo-e2e-everything-{namespace}");
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kudo-e2e-everything"},
            "subjects": [{"kind": "ServiceAccount", "name": kudo_api::names::INSTANCE_ACCOUNT, "namespace": namespace}],
        }))?;
        Api::<ClusterRoleBinding>::all(self.client.clone())
            .patch(&name, &params, &Patch::Apply(&binding))
            .await
            .context("granting the test namespace's Instances every right")?;
        Ok(())
    }

    /// The CRDs and a running controller on the cluster `kubeconfig` names,
    /// in a fresh namespace deleted when the `Env` is dropped.
    pub async fn start_remote(kubeconfig: PathBuf) -> Result<Self> {
        let remote = cluster::connect(&kubeconfig).await?;
        let mut env = Self {
            sandbox: Cluster::Remote {
                kubeconfig,
                config: Box::new(remote.config),
            },
            client: remote.client,
            ns: remote.namespace,
            metrics: Metrics::new(),
            controller: None,
            _namespace: Some(remote.guard),
        };
        let ns = env.ns.clone();
        env.grant_everything(&ns).await?;
        env.start_controller();
        Ok(env)
    }

    /// The CRDs and no controller (tests that run the binary).
    pub async fn start_without_controller() -> Result<Self> {
        let mut env = Self::start().await?;
        env.stop_controller().await?;
        Ok(env)
    }

    /// Whether this environment is a real cluster rather than the in-process sandbox.
    pub fn is_remote(&self) -> bool {
        matches!(self.sandbox, Cluster::Remote { .. })
    }

    /// Start the controller (in-process) if it is not running. Its render
    /// book key lives in a Secret of the test namespace, as in a cluster,
    /// so a restarted controller trusts the books of the one before.
    pub fn start_controller(&mut self) {
        self.start_controller_with(ControllerConfig {
            engine: kudo_engine_config(),
            concurrency: 0,
            book_key_secret: Some((self.ns.clone(), "kudo-manager-render-key".into())),
            ..ControllerConfig::default()
        });
    }

    /// Start the controller with these settings if it is not running.
    pub fn start_controller_with(&mut self, config: ControllerConfig) {
        if self.controller.is_some() {
            return;
        }
        let stop = CancellationToken::new();
        let handle = tokio::spawn(controller::run(
            self.client.clone(),
            config,
            self.metrics.clone(),
            Readiness::default(),
            {
                let stop = stop.clone();
                async move { stop.cancelled().await }
            },
        ));
        self.controller = Some((stop, handle));
    }

    /// Stop the controller as a kill would: no more API calls after this returns.
    pub async fn stop_controller(&mut self) -> Result<()> {
        if let Some((stop, handle)) = self.controller.take() {
            handle.abort();
            stop.cancel();
            let _ = handle.await;
        }
        Ok(())
    }

    /// Whether the in-process controller has stopped on its own (returned
    /// or panicked) — false while it runs, and when none was started.
    pub fn controller_finished(&self) -> bool {
        self.controller
            .as_ref()
            .is_some_and(|(_, handle)| handle.is_finished())
    }

    /// Install a package with an Instance named `instance`.
    pub async fn install(
        &self,
        package: PathBuf,
        instance: &str,
        params: &[(&str, &str)],
    ) -> Result<()> {
        let parameters: BTreeMap<String, String> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        install_package(
            &self.client,
            &package,
            &self.ns,
            Some(InstanceRequest {
                name: Some(instance.to_string()),
                parameters,
            }),
        )
        .await?;
        Ok(())
    }

    /// Install a package with an Instance named `instance` and wait (up to
    /// `timeout`) until its deploy plan is COMPLETE.
    pub async fn install_deployed(
        &self,
        package: PathBuf,
        instance: &str,
        params: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Instance> {
        self.install(package, instance, params).await?;
        self.wait_for(instance, "deploy COMPLETE", timeout, |i| {
            plan_status(i, "deploy") == Some(ExecutionStatus::Complete)
        })
        .await
    }

    /// Install a package's Operator and OperatorVersion only; returns the OV name.
    pub async fn install_operator_version(&self, package: PathBuf) -> Result<String> {
        Ok(install_package(&self.client, &package, &self.ns, None)
            .await?
            .operator_version)
    }

    /// The Instance API in [`Env::ns`].
    pub fn instances(&self) -> Api<Instance> {
        self.api()
    }

    /// The API of a namespaced kind in [`Env::ns`].
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// An API for a cluster-scoped kind.
    pub fn api_all<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::ClusterResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// Merge-patch an Instance's spec.
    pub async fn patch_spec(&self, name: &str, spec: serde_json::Value) -> Result<()> {
        self.instances()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "spec": spec })),
            )
            .await
            .with_context(|| format!("patching Instance {name}"))?;
        Ok(())
    }

    /// Wait (watch, with a timeout) until `cond` holds for the Instance.
    pub async fn wait_for(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&Instance) -> bool,
    ) -> Result<Instance> {
        let api = self.instances();
        let waited = tokio::time::timeout(
            timeout,
            await_condition(api.clone(), name, move |i: Option<&Instance>| {
                i.is_some_and(&cond)
            }),
        )
        .await;
        match waited {
            Ok(Ok(Some(inst))) => Ok(inst),
            Ok(Ok(None)) => Err(anyhow!(
                "Instance {name} disappeared while waiting for {what}"
            )),
            Ok(Err(e)) => Err(anyhow!("watching Instance {name}: {e}")),
            Err(_) => {
                let now = api.get_opt(name).await.ok().flatten();
                let status = now
                    .and_then(|i| i.status)
                    .map(|s| serde_json::to_string_pretty(&s).unwrap_or_default())
                    .unwrap_or_else(|| "<no status>".into());
                Err(anyhow!(
                    "timed out after {timeout:?} waiting for {what} on Instance {name}; status:\n{status}"
                ))
            }
        }
    }

    /// Wait until the Instance is gone.
    pub async fn wait_gone(&self, name: &str, timeout: Duration) -> Result<()> {
        let api = self.instances();
        let waited = tokio::time::timeout(
            timeout,
            await_condition(api, name, |i: Option<&Instance>| i.is_none()),
        )
        .await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(anyhow!("watching Instance {name}: {e}")),
            Err(_) => Err(anyhow!("Instance {name} still exists after {timeout:?}")),
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.controller.take() {
            stop.cancel();
            handle.abort();
        }
    }
}

/// Engine settings for tests: short backoff so retries happen within the test budget.
pub fn kudo_engine_config() -> EngineConfig {
    EngineConfig {
        initial_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_secs(2),
        recovery_backoff: Duration::from_secs(1),
        ..EngineConfig::default()
    }
}

/// Status of a plan in an Instance.
pub fn plan_status(inst: &Instance, plan: &str) -> Option<ExecutionStatus> {
    inst.status.as_ref()?.plan_status.get(plan)?.status
}

/// Execution uid of a plan in an Instance.
pub fn plan_uid(inst: &Instance, plan: &str) -> Option<String> {
    inst.status.as_ref()?.plan_status.get(plan)?.uid.clone()
}

/// Status of one step.
pub fn step_status(
    inst: &Instance,
    plan: &str,
    phase: &str,
    step: &str,
) -> Option<ExecutionStatus> {
    inst.status
        .as_ref()?
        .plan_status
        .get(plan)?
        .phase(phase)?
        .step(step)?
        .status
}

/// Whether `plan` is COMPLETE in a run other than `previous_uid`.
pub fn completed_new_run(inst: &Instance, plan: &str, previous_uid: Option<&str>) -> bool {
    plan_status(inst, plan) == Some(ExecutionStatus::Complete)
        && plan_uid(inst, plan).as_deref() != previous_uid
}

/// The object reference Events about an Instance carry.
pub fn instance_uid(inst: &Instance) -> Option<String> {
    inst.meta().uid.clone()
}
