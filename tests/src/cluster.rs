//! Where the tests run: an in-process sandbox (the default) or the cluster
//! `KUDO_E2E_KUBECONFIG` names. On a cluster every test gets its own
//! namespace, torn down when its [`Env`](crate::Env) is dropped, and tests in
//! one binary run one after another so their controllers never overlap.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, Config};
use kudo_api::Instance;
use kudo_manager::admin::Readiness;
use kudo_manager::controller::{self, ControllerConfig};
use kudo_manager::metrics::Metrics;
use kudo_sandbox::{Faults, Sandbox, SandboxError};
use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio_util::sync::CancellationToken;

/// Environment variable naming the kubeconfig of a real cluster to test against.
pub const KUBECONFIG_VAR: &str = "KUDO_E2E_KUBECONFIG";
/// Environment variable raising the wait timeouts, in seconds.
pub const TIMEOUT_VAR: &str = "KUDO_E2E_TIMEOUT_SECS";
/// Set to run on a cluster that has a `kudo-system` namespace anyway.
pub const ALLOW_INSTALLED_VAR: &str = "KUDO_E2E_ALLOW_INSTALLED_MANAGER";
/// Namespace both KUDO and kudo-manager (deploy/) install into.
const MANAGER_NAMESPACE: &str = "kudo-system";
/// Label on the namespaces the tests create on a real cluster.
pub const NAMESPACE_LABEL: &str = "kudo-e2e.kudo.dev/test";

/// How long teardown waits for Instances' cleanup plans before forcing them out.
const TEARDOWN_WAIT: Duration = Duration::from_secs(60);

/// The kubeconfig of the real cluster to test against, if one is set.
pub fn remote_kubeconfig() -> Option<PathBuf> {
    std::env::var_os(KUBECONFIG_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether the tests run against a real cluster.
pub fn on_real_cluster() -> bool {
    remote_kubeconfig().is_some()
}

/// A wait budget: at least `sandbox`, raised to `KUDO_E2E_TIMEOUT_SECS` when
/// that is set, and to three minutes on a real cluster without it (images
/// are pulled, pods really start).
pub fn timeout(sandbox: Duration) -> Duration {
    let configured = std::env::var(TIMEOUT_VAR)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    match configured {
        Some(t) => sandbox.max(t),
        None if on_real_cluster() => sandbox.max(Duration::from_secs(180)),
        None => sandbox,
    }
}

/// Prints why the calling test does not run on a real cluster and returns
/// true there; false on the sandbox. Use as `if skip_on_real_cluster(..) { return; }`.
pub fn skip_on_real_cluster(why: &str) -> bool {
    if !on_real_cluster() {
        return false;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    eprintln!("SKIPPED on a real cluster ({KUBECONFIG_VAR} is set): {test}: {why}");
    true
}

/// The API server the tests talk to.
pub enum Cluster {
    /// The in-process sandbox.
    Sandbox(Sandbox),
    /// A real cluster (or a standalone sandbox posing as one).
    Remote {
        /// Its kubeconfig.
        kubeconfig: PathBuf,
        /// The client configuration read from it.
        config: Box<Config>,
    },
}

impl Cluster {
    /// The in-process sandbox, when the tests run on one.
    pub fn as_sandbox(&self) -> Option<&Sandbox> {
        match self {
            Cluster::Sandbox(s) => Some(s),
            Cluster::Remote { .. } => None,
        }
    }

    /// The client configuration for this API server.
    pub fn kube_config(&self) -> Result<Config> {
        match self {
            Cluster::Sandbox(s) => s.kube_config().map_err(|e| anyhow!("{e}")),
            Cluster::Remote { config, .. } => Ok((**config).clone()),
        }
    }

    /// Write a kubeconfig for this API server (for the `kudo-manager` binary).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<()> {
        match self {
            Cluster::Sandbox(s) => s
                .write_kubeconfig(path)
                .map_err(|e: SandboxError| anyhow!("{e}")),
            Cluster::Remote { kubeconfig, .. } => {
                std::fs::copy(kubeconfig, path).with_context(|| {
                    format!("copying {} to {}", kubeconfig.display(), path.display())
                })?;
                Ok(())
            }
        }
    }

    /// Inject API faults; only the in-process sandbox can.
    pub fn set_faults(&self, faults: Faults) -> Result<()> {
        match self {
            Cluster::Sandbox(s) => {
                s.set_faults(faults);
                Ok(())
            }
            Cluster::Remote { .. } => Err(anyhow!(
                "fault injection needs the in-process sandbox; skip this test on a real cluster"
            )),
        }
    }
}

/// Tests of one binary take turns on a real cluster: the in-process
/// controller watches every namespace, so two at once would fight.
static SERIAL: LazyLock<Arc<Mutex<()>>> = LazyLock::new(|| Arc::new(Mutex::new(())));

/// A connection to the remote cluster with this test's namespace.
pub(crate) struct Remote {
    pub(crate) config: Config,
    pub(crate) client: Client,
    pub(crate) namespace: String,
    pub(crate) guard: NamespaceGuard,
}

/// Connect to the cluster `kubeconfig` names, install or upgrade the CRDs and
/// create a fresh namespace for one test.
pub(crate) async fn connect(kubeconfig: &Path) -> Result<Remote> {
    let serial = SERIAL.clone().lock_owned().await;
    let config = load_config(kubeconfig).await?;
    let namespace = format!("kudo-e2e-{:08x}", random_u32());
    let mut scoped = config.clone();
    scoped.default_namespace = namespace.clone();
    let client = Client::try_from(scoped.clone())
        .with_context(|| format!("a client for the cluster of {}", kubeconfig.display()))?;
    refuse_installed_manager(&client).await?;
    install_crds_established(&client).await?;
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "metadata": {"name": namespace, "labels": {NAMESPACE_LABEL: "true"}}
    }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating test namespace {namespace}"))?;
    Ok(Remote {
        config: scoped,
        client,
        namespace: namespace.clone(),
        guard: NamespaceGuard {
            config,
            namespace,
            _serial: serial,
        },
    })
}

/// The in-process controller watches every namespace; a manager already
/// running in the cluster would act on the test Instances too.
async fn refuse_installed_manager(client: &Client) -> Result<()> {
    if std::env::var_os(ALLOW_INSTALLED_VAR).is_some() {
        return Ok(());
    }
    let found = Api::<Namespace>::all(client.clone())
        .get_opt(MANAGER_NAMESPACE)
        .await
        .with_context(|| format!("looking for namespace {MANAGER_NAMESPACE}"))?;
    match found {
        None => Ok(()),
        Some(_) => Err(anyhow!(
            "namespace {MANAGER_NAMESPACE} exists, so KUDO or kudo-manager is probably running in \
             this cluster and would reconcile the test Instances alongside the tests' own \
             controller; use a cluster without it (e.g. a fresh kind cluster), or set \
             {ALLOW_INSTALLED_VAR}=1 if nothing there watches kudo.dev Instances"
        )),
    }
}

async fn load_config(kubeconfig: &Path) -> Result<Config> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {KUBECONFIG_VAR}={}", kubeconfig.display()))?;
    Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("using the kubeconfig {}", kubeconfig.display()))
}

fn random_u32() -> u32 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    // Truncation is the point: eight hex digits are enough.
    (h.finish() & u64::from(u32::MAX)) as u32
}

/// Server-side apply the kudo.dev CRDs and wait until they are Established.
pub(crate) async fn install_crds_established(client: &Client) -> Result<()> {
    kudo_manager::install::install_crds(client).await?;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kudo_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        tokio::time::timeout(
            Duration::from_secs(60),
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .map_err(|_| anyhow!("CustomResourceDefinition {name} not Established after 60 s"))?
        .with_context(|| format!("watching CustomResourceDefinition {name}"))?;
    }
    Ok(())
}

/// Deletes the test namespace when dropped, also when the test failed.
pub(crate) struct NamespaceGuard {
    config: Config,
    namespace: String,
    _serial: OwnedMutexGuard<()>,
}

impl Drop for NamespaceGuard {
    fn drop(&mut self) {
        // The test's runtime may be the one being torn down (or blocked right
        // here), so teardown gets its own thread, runtime and client.
        let (config, namespace) = (self.config.clone(), self.namespace.clone());
        let joined = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("a runtime for namespace teardown")?;
            rt.block_on(teardown(config, &namespace))
        })
        .join();
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!(
                "kudo-e2e: tearing down namespace {} failed: {e:#}; delete it with `kubectl delete namespace -l {NAMESPACE_LABEL}`",
                self.namespace
            ),
            Err(_) => eprintln!(
                "kudo-e2e: the teardown of namespace {} panicked",
                self.namespace
            ),
        }
    }
}

/// Delete the test's Instances with a controller running (so cleanup plans
/// run and cluster-scoped objects go), then the namespace.
async fn teardown(config: Config, namespace: &str) -> Result<()> {
    let client = Client::try_from(config)?;
    let instances: Api<Instance> = Api::namespaced(client.clone(), namespace);
    let names: Vec<String> = instances
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|i| i.metadata.name)
        .collect();
    if !names.is_empty() {
        let stop = CancellationToken::new();
        let running = tokio::spawn(controller::run(
            client.clone(),
            ControllerConfig {
                engine: crate::kudo_engine_config(),
                concurrency: 0,
                ..ControllerConfig::default()
            },
            Metrics::new(),
            Readiness::default(),
            {
                let stop = stop.clone();
                async move { stop.cancelled().await }
            },
        ));
        for name in &names {
            let _ = instances.delete(name, &DeleteParams::background()).await;
        }
        let all_gone = async {
            for name in &names {
                let gone = |i: Option<&Instance>| i.is_none();
                let _ = await_condition(instances.clone(), name, gone).await;
            }
        };
        let finished = tokio::time::timeout(TEARDOWN_WAIT, all_gone).await.is_ok();
        stop.cancel();
        running.abort();
        let _ = running.await;
        if !finished {
            force_out(&instances, &names).await;
        }
    }
    Api::<Namespace>::all(client)
        .delete(namespace, &DeleteParams::background())
        .await
        .with_context(|| format!("deleting namespace {namespace}"))?;
    Ok(())
}

/// Drop the finalizers of Instances whose cleanup did not finish in time.
async fn force_out(instances: &Api<Instance>, names: &[String]) {
    for name in names {
        let patch = Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}}));
        if let Err(e) = instances.patch(name, &PatchParams::default(), &patch).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 404)
        {
            eprintln!("kudo-e2e: could not remove the finalizers of Instance {name}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Env, fixture, plan_status};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kudo_api::ExecutionStatus;

    /// A standalone sandbox on its own thread and runtime, standing in for a
    /// remote cluster (the test's runtime blocks while an `Env` tears down).
    fn remote_sandbox(dir: &Path) -> (PathBuf, std::sync::mpsc::Sender<()>) {
        let kubeconfig = dir.join("kubeconfig");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let path = kubeconfig.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let sandbox = rt.block_on(Sandbox::start()).unwrap();
            sandbox.write_kubeconfig(&path).unwrap();
            ready_tx.send(()).unwrap();
            let _ = stop_rx.recv();
            drop(sandbox);
        });
        ready_rx.recv().unwrap();
        (kubeconfig, stop_tx)
    }

    #[tokio::test]
    async fn remote_env_uses_a_fresh_namespace_and_tears_it_down_with_its_instances() {
        let dir = tempfile::tempdir().unwrap();
        let (kubeconfig, _stop) = remote_sandbox(dir.path());
        let env = Env::start_remote(kubeconfig.clone()).await.unwrap();
        let ns = env.ns.clone();
        assert!(ns.starts_with("kudo-e2e-"), "{ns}");
        env.install(fixture("e2e-op-v1"), "tear", &[])
            .await
            .unwrap();
        env.wait_for("tear", "deploy COMPLETE", Duration::from_secs(30), |i| {
            plan_status(i, "deploy") == Some(ExecutionStatus::Complete)
        })
        .await
        .unwrap();
        let cluster_scoped = format!("{ns}-tear-reader");
        let namespaces: Api<Namespace> = Api::all(env.client.clone());
        let labels = namespaces.get(&ns).await.unwrap().metadata.labels.unwrap();
        assert_eq!(
            labels.get(NAMESPACE_LABEL).map(String::as_str),
            Some("true")
        );
        let roles: Api<ClusterRole> = Api::all(env.client.clone());
        assert!(roles.get_opt(&cluster_scoped).await.unwrap().is_some());
        drop(env);

        // A second Env on the same cluster sees the first one's leftovers gone:
        // its namespace, and (through the cleanup plan) its cluster-scoped
        // ClusterRole.
        let after = Env::start_remote(kubeconfig).await.unwrap();
        let namespaces: Api<Namespace> = Api::all(after.client.clone());
        let roles: Api<ClusterRole> = Api::all(after.client.clone());
        assert_ne!(after.ns, ns);
        let gone = tokio::time::timeout(
            Duration::from_secs(30),
            await_condition(namespaces, &ns, |n: Option<&Namespace>| n.is_none()),
        )
        .await
        .is_ok();
        assert!(gone, "test namespace {ns} was not deleted");
        let gone = tokio::time::timeout(
            Duration::from_secs(30),
            await_condition(roles, &cluster_scoped, |r: Option<&ClusterRole>| {
                r.is_none()
            }),
        )
        .await
        .is_ok();
        assert!(
            gone,
            "{cluster_scoped} outlived the Instance that created it"
        );
    }

    #[tokio::test]
    async fn refuses_a_cluster_where_a_manager_is_installed() {
        if std::env::var_os(ALLOW_INSTALLED_VAR).is_some() {
            eprintln!("SKIPPED: {ALLOW_INSTALLED_VAR} is set, so the check is off");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (kubeconfig, _stop) = remote_sandbox(dir.path());
        let client = Client::try_from(load_config(&kubeconfig).await.unwrap()).unwrap();
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": MANAGER_NAMESPACE}}))
                .unwrap();
        Api::<Namespace>::all(client)
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let err = Env::start_remote(kubeconfig)
            .await
            .err()
            .expect("a cluster with kudo-system must be refused");
        let message = format!("{err:#}");
        assert!(
            message.contains("namespace kudo-system exists"),
            "{message}"
        );
        assert!(message.contains(ALLOW_INSTALLED_VAR), "{message}");
    }
}
