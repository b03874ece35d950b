//! What every reconcile shares: the client, the event recorder, metrics,
//! engine settings, the discovery cache and the OperatorVersion cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::EngineConfig;

pub use crate::own_writes::{OwnWrites, WriteUnderWay};

use crate::discovery::ApiCache;
use crate::identity::Writers;
use crate::metrics::Metrics;

/// An Instance as we last wrote it, with the resourceVersions our writes
/// replaced since the cache last caught up (several when one reconcile
/// wrote status more than once).
pub(crate) type OwnWrite = (Vec<String>, Arc<Instance>);

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
    /// Instances as this manager last wrote them, keyed by object, with the
    /// resourceVersions they replaced: a cached copy still at one of those
    /// versions is stale (the watch has not caught up with our writes yet).
    pub(crate) written: Mutex<HashMap<ObjectRef<Instance>, OwnWrite>>,
    /// Running plans per Instance (`namespace/name`), for the gauge.
    pub(crate) running: Mutex<HashMap<String, usize>>,
    /// Status and finalizer writes this manager made to Instances.
    pub(crate) own_instance_writes: OwnWrites,
    /// Server-side applies this manager made (owned objects, child Instances).
    pub(crate) own_applies: OwnWrites,
    /// The clients that write Instances' objects (impersonating their
    /// ServiceAccounts).
    pub writers: Writers,
    /// Budgets of every render.
    pub render_limits: kudo_package::render::RenderLimits,
    /// Where renders run (off the async workers, within a deadline).
    pub renders: crate::render_pool::RenderPool,
    /// `package verify` of the OperatorVersions in use.
    pub verified: crate::ov_verify::VerifiedOperatorVersions,
    /// Notes already published as Events, by Instance uid: `plan uid/note`.
    said: Mutex<HashMap<String, Vec<String>>>,
    /// Automatically suppressed Instances per namespace and the Namespaces'
    /// thresholds, from the watches.
    pub namespace_counts: crate::namespace_hold::NamespaceCounts,
    /// Render books of the Instances (what recovery re-applies).
    pub books: crate::recovery::Books,
    /// The workload health last read per Instance (Ready without re-reads).
    pub seen_health: crate::readiness::SeenHealth,
    /// The Instances last judged free of drift (no book read while their
    /// objects are unchanged).
    pub judged_clean: crate::recovery::JudgedClean,
    /// Signs render books; a book without its signature is not trusted.
    pub book_key: Arc<crate::recovery::BookKey>,
    /// Metadata caches of owned objects, where drift is seen.
    pub observers: crate::recovery::Observers,
    /// MaintenanceSchedules, kept current by a watch (empty when the CRD
    /// is not installed).
    pub schedules: Store<kudo_api::MaintenanceSchedule>,
    /// The indexes of the OperatorRepositories (empty when none are
    /// followed).
    pub repositories: crate::repositories::Indexes,
    /// Instances, kept current by the controller's watch (empty outside
    /// the controller): dependency constraints read the namespace's.
    pub instances: Store<Instance>,
    /// Instances to reconcile again (dependency constraints).
    pub wakes: crate::dependencies::Wakes,
    /// The tracking Instances with a channel move waiting (what a wake
    /// concerns).
    pub waiting_moves: crate::dependencies::WaitingMoves,
    /// The time of day windows, suppressions and backoffs are judged by.
    pub clock: crate::clock::Clock,
    /// Failed reconciles in a row per Instance (how long to wait).
    pub failures: crate::retry::Failures,
    /// Channel moves that could not start: failed downloads, refused
    /// packages, OperatorVersions in their way.
    pub moves: crate::upgrades::MoveMemo,
    /// The API server's Kubernetes version, read once.
    kubernetes: std::sync::OnceLock<kudo_repo::Version>,
}

/// Notes remembered per Instance at most (a plan rarely has more than a
/// few); past it the oldest are forgotten and may be published again.
const NOTES_PER_INSTANCE: usize = 256;

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
            written: Mutex::default(),
            running: Mutex::default(),
            own_instance_writes: OwnWrites::default(),
            own_applies: OwnWrites::default(),
            writers: Writers::default(),
            render_limits: kudo_package::render::RenderLimits::default(),
            renders: crate::render_pool::RenderPool::default(),
            verified: crate::ov_verify::VerifiedOperatorVersions::default(),
            said: Mutex::default(),
            namespace_counts: crate::namespace_hold::NamespaceCounts::default(),
            books: crate::recovery::Books::default(),
            seen_health: crate::readiness::SeenHealth::default(),
            judged_clean: crate::recovery::JudgedClean::default(),
            book_key: Arc::new(crate::recovery::BookKey::random()),
            observers: crate::recovery::Observers::default(),
            schedules: kube::runtime::reflector::store().0,
            repositories: crate::repositories::Indexes::default(),
            instances: kube::runtime::reflector::store().0,
            wakes: crate::dependencies::Wakes::default(),
            waiting_moves: crate::dependencies::WaitingMoves::default(),
            kubernetes: std::sync::OnceLock::new(),
            clock: crate::clock::Clock::system(),
            failures: crate::retry::Failures::default(),
            moves: crate::upgrades::MoveMemo::default(),
        }
    }

    /// A context with defaults (engine settings, empty caches, the system
    /// clock) for tests that need one beside a client; `with_*` sets the rest.
    pub fn for_tests(client: Client) -> Self {
        Self::new(
            client,
            Metrics::new(),
            EngineConfig::default(),
            kube::runtime::reflector::store().0,
        )
    }

    /// Forgets what is kept for an Instance that is gone: its render book,
    /// its workload's last health, its published notes and the copy of its
    /// last write.
    pub fn forget_instance(&self, inst: &Instance) {
        let uid = inst.metadata.uid.as_deref().unwrap_or_default();
        self.books.forget(uid);
        self.seen_health.forget(&instance_key(inst));
        self.judged_clean.forget(&instance_key(inst));
        self.failures.forget(&instance_key(inst));
        self.waiting_moves.forget(
            inst.metadata.namespace.as_deref(),
            inst.metadata.name.as_deref().unwrap_or_default(),
        );
        if let Ok(mut said) = self.said.lock() {
            said.remove(uid);
        }
        if let Ok(mut written) = self.written.lock() {
            written.remove(&ObjectRef::from_obj(inst));
        }
        self.set_running_plans(inst, 0);
    }

    /// Records how many plans of `inst` run now and sets the active-plans
    /// gauge to the total over all Instances.
    pub(crate) fn set_running_plans(&self, inst: &Instance, count: usize) {
        self.set_running_plans_of(instance_key(inst), count);
    }

    /// Forgets what is kept by name for an Instance deleted without a
    /// reconcile (one without a finalizer: the controller finds it gone).
    pub fn forget_gone(&self, namespace: Option<&str>, name: &str) {
        let key = key_of(namespace, name);
        self.seen_health.forget(&key);
        self.judged_clean.forget(&key);
        self.failures.forget(&key);
        self.waiting_moves.forget(namespace, name);
        if let Ok(mut written) = self.written.lock() {
            let gone = ObjectRef::<Instance>::new(name);
            written.remove(&match namespace {
                Some(ns) => gone.within(ns),
                None => gone,
            });
        }
        self.set_running_plans_of(key, 0);
    }

    fn set_running_plans_of(&self, key: String, count: usize) {
        let Ok(mut running) = self.running.lock() else {
            return;
        };
        if count == 0 {
            running.remove(&key);
        } else {
            running.insert(key, count);
        }
        let total: usize = running.values().sum();
        self.metrics
            .active_plans
            .set(i64::try_from(total).unwrap_or(i64::MAX));
    }

    /// Take the time of day from `clock` (tests set it).
    #[must_use]
    pub fn with_clock(mut self, clock: crate::clock::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The cluster's Kubernetes version as version ranges compare it
    /// (`v1.28.3-gke.1` is 1.28.3), read from `/version` once; `None`
    /// while it cannot be read.
    pub async fn kubernetes_version(&self) -> Option<kudo_repo::Version> {
        if let Some(v) = self.kubernetes.get() {
            return Some(v.clone());
        }
        let info = self.client.apiserver_version().await.ok()?;
        let v = kudo_repo::channels::kubernetes_release(&info.git_version).ok()?;
        let _ = self.kubernetes.set(v.clone());
        Some(v)
    }

    /// Read repository indexes from this map.
    pub fn with_repositories(mut self, repositories: crate::repositories::Indexes) -> Self {
        self.repositories = repositories;
        self
    }

    /// With the Instance cache of the controller.
    #[must_use]
    pub fn with_instances(mut self, instances: Store<Instance>) -> Self {
        self.instances = instances;
        self
    }

    /// Read MaintenanceSchedules from this cache.
    #[must_use]
    pub fn with_schedules(mut self, schedules: Store<kudo_api::MaintenanceSchedule>) -> Self {
        self.schedules = schedules;
        self
    }

    /// The node maintenance `inst`'s pods are affected by, from the
    /// schedule's status.
    pub fn maintenance_notice(&self, inst: &Instance) -> Option<kudo_engine::maintenance::Notice> {
        let schedule = self
            .schedules
            .get(&ObjectRef::new(kudo_api::maintenance::SCHEDULE_NAME))?;
        kudo_engine::maintenance::notice_for(
            &schedule,
            inst.metadata.namespace.as_deref().unwrap_or_default(),
            inst.metadata.name.as_deref().unwrap_or_default(),
        )
    }

    /// Observe drift through these metadata caches.
    #[must_use]
    pub fn with_observers(mut self, observers: crate::recovery::Observers) -> Self {
        self.observers = observers;
        self
    }

    /// Publishes a task's note as a Warning Event once per Instance, plan
    /// run and note (a task reports it on every pass while it waits).
    pub async fn say_once(
        &self,
        inst: &Instance,
        key: &kudo_engine::TaskKey,
        reason: &str,
        note: &str,
    ) {
        let id = format!("{}/{note}", key.uid());
        let instance = inst.metadata.uid.clone().unwrap_or_default();
        let first = self.said.lock().is_ok_and(|mut said| {
            let of_instance = said.entry(instance).or_default();
            if of_instance.contains(&id) {
                return false;
            }
            if of_instance.len() >= NOTES_PER_INSTANCE {
                of_instance.remove(0);
            }
            of_instance.push(id);
            true
        });
        if first {
            crate::reconcile::publish(self, inst, kudo_engine::EventType::Warning, reason, note)
                .await;
        }
    }

    /// Sign render books with this key.
    #[must_use]
    pub fn with_book_key(mut self, key: crate::recovery::BookKey) -> Self {
        self.book_key = Arc::new(key);
        self
    }

    /// Render with these budgets.
    #[must_use]
    pub fn with_render_limits(mut self, limits: kudo_package::render::RenderLimits) -> Self {
        self.render_limits = limits;
        self
    }

    /// Give each render at most `deadline`.
    #[must_use]
    pub fn with_render_deadline(mut self, deadline: Duration) -> Self {
        self.renders = crate::render_pool::RenderPool::new(deadline);
        self
    }

    /// Whom Instances that name no ServiceAccount write their objects as.
    #[must_use]
    pub fn with_write_as(mut self, write_as: crate::identity::WriteAs) -> Self {
        self.writers = Writers::new(write_as);
        self
    }

    /// The OperatorVersion an Instance names (namespace defaults to the
    /// Instance's); `None` also when it is another namespace's and not
    /// shared with the Instance's (the engine says why).
    pub fn operator_version_of(&self, inst: &Instance) -> Option<Arc<OperatorVersion>> {
        self.operator_version_by(
            inst.metadata.namespace.as_deref()?,
            &inst.spec.operator_version,
        )
    }

    /// The cached OperatorVersion `reference` names, as an Instance of
    /// namespace `own` may use it (see [`Self::operator_version_of`]).
    pub fn operator_version_by(
        &self,
        own: &str,
        reference: &kudo_api::ObjectReference,
    ) -> Option<Arc<OperatorVersion>> {
        let name = reference.name.as_deref()?;
        let ns = kudo_api::ov_namespace(reference.namespace.as_deref(), own);
        let ov = self
            .operator_versions
            .get(&ObjectRef::new(name).within(ns))?;
        kudo_engine::tenancy::check_ov_reference(own, reference, Some(&ov)).ok()?;
        Some(ov)
    }
}

/// `namespace/name`: how the per-Instance memory that must also be
/// dropped for an Instance deleted without a reconcile (known then only by
/// name) is keyed.
pub(crate) fn instance_key(inst: &Instance) -> String {
    key_of(
        inst.metadata.namespace.as_deref(),
        inst.metadata.name.as_deref().unwrap_or_default(),
    )
}

fn key_of(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
