//! What every reconcile shares: the client, the event recorder, metrics,
//! engine settings, the discovery cache and the OperatorVersion cache.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::EngineConfig;

use crate::discovery::ApiCache;
use crate::metrics::Metrics;

/// An Instance as we wrote it, with the resourceVersion it replaced.
pub(crate) type OwnWrite = (String, Arc<Instance>);

/// Shared state of the controller.
pub struct Context {
    /// API client.
    pub client: Client,
    /// Publishes Events on Instances (reporter `kudo-manager`).
    pub recorder: Recorder,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// Engine settings.
    pub engine: EngineConfig,
    /// Discovery cache for dynamic objects.
    pub api: ApiCache,
    /// OperatorVersions, kept current by a watch.
    pub operator_versions: Store<OperatorVersion>,
    /// How long to wait for a CRD applied in a task to be Established.
    pub crd_timeout: Duration,
    /// Instances as this manager last wrote them, keyed by object, with the
    /// resourceVersion they replaced: a cached copy still at that version is
    /// stale (the watch has not caught up with our own write yet).
    pub(crate) written: Mutex<HashMap<ObjectRef<Instance>, OwnWrite>>,
    /// Instances with a running plan (`namespace/name`), for the gauge.
    pub(crate) running: Mutex<HashSet<String>>,
}

impl Context {
    /// A context for this client and OperatorVersion store.
    pub fn new(
        client: Client,
        metrics: Metrics,
        engine: EngineConfig,
        operator_versions: Store<OperatorVersion>,
    ) -> Self {
        let reporter = Reporter {
            controller: kudo_api::names::FIELD_MANAGER.to_string(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            api: ApiCache::new(client.clone()),
            client,
            metrics,
            engine,
            operator_versions,
            crd_timeout: Duration::from_secs(60),
            written: Mutex::default(),
            running: Mutex::default(),
        }
    }

    /// The OperatorVersion an Instance names (namespace defaults to the Instance's).
    pub fn operator_version_of(&self, inst: &Instance) -> Option<Arc<OperatorVersion>> {
        let name = inst.spec.operator_version.name.as_deref()?;
        let ns = inst
            .spec
            .operator_version
            .namespace
            .as_deref()
            .or(inst.metadata.namespace.as_deref())?;
        self.operator_versions.get(&ObjectRef::new(name).within(ns))
    }
}
