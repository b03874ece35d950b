//! # kudo-sandbox
//!
//! An in-process Kubernetes API server speaking the real REST protocol on
//! 127.0.0.1, so kube-rs clients, kube-runtime controllers and `kubectl` use
//! it unchanged: discovery, CRUD on built-in and CRD-defined kinds, watch,
//! optimistic concurrency, status subresource, patches including server-side
//! apply, finalizers and garbage collection, validating webhooks, simulated
//! workload readiness, simulated pods (StatefulSet, Deployment/ReplicaSet,
//! scheduling onto Nodes, evictions checked against PodDisruptionBudgets)
//! and fault injection.
//!
//! It is a development and test tool; production runs on real Kubernetes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kudo_sandbox::SandboxError> {
//! let sandbox = kudo_sandbox::Sandbox::start().await?;
//! let client = sandbox.client()?;
//! # let _ = client;
//! # Ok(()) }
//! ```

mod access_review;
mod admission;
mod api_approval;
mod authz;
mod controllers;
mod defaults;
mod discovery;
mod disruption;
mod error;
mod establish;
mod eviction;
mod exec;
mod exec_fs;
mod exec_protocol;
mod faults;
mod gc;
mod handlers;
mod http;
mod kubeconfig;
mod kubelet;
mod managed_fields;
mod match_conditions;
mod objects;
mod openapi;
mod owners;
mod patch;
mod persist;
mod pods;
mod protobuf;
mod registry;
mod replicasets;
mod request_log;
mod scale;
mod scheduler;
mod selector;
mod server;
mod ssa;
mod state;
mod statefulsets;
mod status;
mod store;
mod table;
mod watch;
mod workloads;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub use error::SandboxError;
pub use faults::{FaultRule, FaultStats, Faults, Verb};
pub use kubeconfig::NAME as KUBECONFIG_NAME;
pub use request_log::{ObjectIdentity, RequestRecord};
pub use workloads::FAIL_ANNOTATION;

use server::{Inner, Settings};
use state::State;

/// Options for starting a sandbox.
#[derive(Debug, Clone)]
pub struct SandboxBuilder {
    port: u16,
    persist: Option<PathBuf>,
    ready_delay: Duration,
    bookmark_interval: Duration,
    event_log_capacity: usize,
    faults: Faults,
    request_log: usize,
    simulate_pods: bool,
    crd_establish_delay: Duration,
}

impl Default for SandboxBuilder {
    fn default() -> Self {
        Self {
            port: 0,
            persist: None,
            ready_delay: Duration::from_millis(200),
            bookmark_interval: Duration::from_secs(1),
            event_log_capacity: 50_000,
            faults: Faults::none(),
            request_log: 0,
            simulate_pods: true,
            crd_establish_delay: Duration::ZERO,
        }
    }
}

impl SandboxBuilder {
    /// Port on 127.0.0.1; 0 (the default) picks a free one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Loads the store from `path` at start (if it exists) and saves it there after writes.
    pub fn persist_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.persist = Some(path.into());
        self
    }

    /// Delay before simulated workloads report status, and before the
    /// simulated kubelet starts or ends a pod (default 200 ms).
    pub fn ready_delay(mut self, delay: Duration) -> Self {
        self.ready_delay = delay;
        self
    }

    /// Interval of BOOKMARK events on watches that allow them (default 1 s).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How many changes are kept for watches resuming from a resourceVersion
    /// (default 50,000); older versions get 410 Gone.
    pub fn event_log_capacity(mut self, events: usize) -> Self {
        self.event_log_capacity = events.max(1);
        self
    }

    /// Faults injected from the start (change later with [`Sandbox::set_faults`]).
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Logs the last `capacity` API requests (method, path, verb,
    /// fieldManager, object, response code), readable with
    /// [`Sandbox::requests`]; 0 (the default) logs nothing.
    pub fn request_log(mut self, capacity: usize) -> Self {
        self.request_log = capacity;
        self
    }

    /// Whether the simulated controllers make pods (default on): StatefulSet
    /// pods and claims, ReplicaSets and pods for Deployments, scheduling
    /// onto Node objects, a kubelet that starts and (gracefully) ends them,
    /// PVC protection, PodDisruptionBudget status. Off, workloads only get
    /// their simulated status and deleted pods go at once, as before. The
    /// Eviction API works either way.
    pub fn simulate_pods(mut self, on: bool) -> Self {
        self.simulate_pods = on;
        self
    }

    /// How long a new CRD stays not Established (default zero: Established
    /// at once). Meanwhile it has no accepted names and no conditions, and
    /// its kind is in no discovery document and answers 404, as on a real
    /// API server before its naming and establishing controllers have run;
    /// then `NamesAccepted` and `Established` turn True (a watch event) and
    /// the kind is served.
    pub fn crd_establish_delay(mut self, delay: Duration) -> Self {
        self.crd_establish_delay = delay;
        self
    }

    /// Starts the server on 127.0.0.1.
    pub async fn start(self) -> Result<Sandbox, SandboxError> {
        let mut state = State::new(self.event_log_capacity);
        state.kubelet = self.simulate_pods;
        state.establish_crds_later = !self.crd_establish_delay.is_zero();
        if let Some(path) = &self.persist
            && let Some(snapshot) = persist::load(path)?
        {
            state.store.restore(snapshot);
            state.register_stored_crds();
            state.ensure_default_namespaces();
        }
        let bind = format!("127.0.0.1:{}", self.port);
        let listener = TcpListener::bind(&bind)
            .await
            .map_err(|source| SandboxError::Bind {
                addr: bind.clone(),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| SandboxError::Bind { addr: bind, source })?;
        let (shutdown_tx, shutdown_rx) = signal::channel(false);
        let settings = Settings {
            ready_delay: self.ready_delay,
            bookmark_interval: self.bookmark_interval,
        };
        let inner = Arc::new(Inner::new(state, self.faults, settings, addr, shutdown_rx));
        inner.requests.set_capacity(self.request_log);
        let mut tasks = vec![
            tokio::spawn(server::serve(listener, inner.clone())),
            tokio::spawn(workloads::run(inner.clone())),
        ];
        if self.simulate_pods {
            tasks.push(tokio::spawn(controllers::run(inner.clone())));
        }
        if !self.crd_establish_delay.is_zero() {
            let delay = self.crd_establish_delay;
            tasks.push(tokio::spawn(establish::run(inner.clone(), delay)));
        }
        if let Some(path) = &self.persist {
            tasks.push(tokio::spawn(persist::run(inner.clone(), path.clone())));
        }
        let kubeconfig = std::env::temp_dir().join(format!(
            "kudo-sandbox-{}-{}.kubeconfig",
            addr.port(),
            uuid::Uuid::new_v4()
        ));
        let sandbox = Sandbox {
            inner,
            shutdown: shutdown_tx,
            tasks,
            kubeconfig,
        };
        sandbox.write_kubeconfig(&sandbox.kubeconfig)?;
        tracing::info!(url = %sandbox.url(), "kudo-sandbox API server started");
        Ok(sandbox)
    }
}

/// A running sandbox API server. Dropping it stops the server.
#[derive(Debug)]
pub struct Sandbox {
    inner: Arc<Inner>,
    shutdown: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    kubeconfig: PathBuf,
}

impl Sandbox {
    /// Starts a sandbox with default options on a free port.
    pub async fn start() -> Result<Self, SandboxError> {
        Self::builder().start().await
    }

    /// Options for starting a sandbox.
    pub fn builder() -> SandboxBuilder {
        SandboxBuilder::default()
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.inner.addr)
    }

    /// A kube client configuration for the sandbox (namespace `default`).
    pub fn kube_config(&self) -> Result<kube::Config, SandboxError> {
        let uri: ::http::Uri = self
            .url()
            .parse()
            .map_err(|e| SandboxError::Client(format!("bad URL: {e}")))?;
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".to_string();
        Ok(config)
    }

    /// A kube client for the sandbox.
    pub fn client(&self) -> Result<kube::Client, SandboxError> {
        kube::Client::try_from(self.kube_config()?).map_err(|e| SandboxError::Client(e.to_string()))
    }

    /// A kubeconfig file written at start (removed when the sandbox is dropped).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Writes a kubeconfig (cluster, context and user `kudo-sandbox`,
    /// namespace `default`) pointing at the sandbox.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), SandboxError> {
        let err = |source| SandboxError::WriteKubeconfig {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        std::fs::write(path, kubeconfig::render(&self.url())).map_err(err)
    }

    /// Replaces the injected faults.
    pub fn set_faults(&self, faults: Faults) {
        self.inner.set_faults(faults);
    }

    /// The injected faults.
    pub fn faults(&self) -> Faults {
        self.inner.faults()
    }

    /// What fault injection has done since the start: error answers by
    /// code, watches closed.
    pub fn fault_stats(&self) -> FaultStats {
        self.inner.injected.stats()
    }

    /// The logged requests, oldest first (empty unless
    /// [`SandboxBuilder::request_log`] or [`Sandbox::set_request_log`] turned
    /// the log on). A request is logged when its answer is ready.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.inner.requests.records()
    }

    /// The logged requests numbered `from` or later (see
    /// [`RequestRecord::seq`]), oldest first: cheap polling for what a
    /// client did since a [`Sandbox::next_request_seq`].
    pub fn requests_since(&self, from: u64) -> Vec<RequestRecord> {
        self.inner.requests.records_since(from)
    }

    /// The number the next logged request will get.
    pub fn next_request_seq(&self) -> u64 {
        self.inner.requests.next_seq()
    }

    /// How many requests the log dropped because it was full (since the
    /// last [`Sandbox::clear_requests`]).
    pub fn requests_dropped(&self) -> u64 {
        self.inner.requests.dropped()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.inner.requests.clear();
    }

    /// Changes how many requests the log keeps (0 turns it off).
    pub fn set_request_log(&self, capacity: usize) {
        self.inner.requests.set_capacity(capacity);
    }

    /// The current resourceVersion of the store.
    pub fn resource_version(&self) -> u64 {
        self.inner.rv.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Stops the server, closes watches and writes the persisted store.
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }

    /// Runs until Ctrl-C (or SIGTERM on Unix), then stops gracefully.
    pub async fn run_until_shutdown(self) {
        wait_for_signal().await;
        tracing::info!("shutting down kudo-sandbox");
        self.stop().await;
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}
