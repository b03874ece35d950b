//! The streams the controller watches, and how their events map to
//! Instances: owned objects by metadata (cached for drift where recovered),
//! child Instances to their parents, OperatorVersions and schedules to the
//! Instances that use them, and when the caches are synced.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{Stream, StreamExt, TryStreamExt};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use kudo_api::names::{API_VERSION, HERITAGE_LABEL, HERITAGE_VALUE};
use kudo_api::{Instance, MaintenanceSchedule};
use serde::de::DeserializeOwned;

use crate::admin::{ControllerState, Readiness};
use crate::context::Context;
use crate::recovery::{Observers, TypedLookup, keep_what_drift_needs};

/// The Instances a schedule concerns: those its status lists, and those
/// told of maintenance before (whose maintenance may have been lifted).
pub(super) fn told_of(
    schedule: &MaintenanceSchedule,
    instances: &reflector::Store<Instance>,
) -> Vec<ObjectRef<Instance>> {
    let listed = schedule
        .status
        .iter()
        .flat_map(|s| &s.instances)
        .map(|i| ObjectRef::new(&i.name).within(&i.namespace));
    let before = instances
        .state()
        .into_iter()
        .filter(|i| i.status.as_ref().is_some_and(|s| s.maintenance.is_some()))
        .map(|i| ObjectRef::from_obj(i.as_ref()));
    let mut refs: Vec<_> = listed.chain(before).collect();
    refs.sort_by_key(ToString::to_string);
    refs.dedup();
    refs
}

/// The caches whose first complete list makes the controller ready.
#[derive(Clone, Copy)]
pub(super) enum Cache {
    Instances = 0b01,
    OperatorVersions = 0b10,
}

/// Marks the controller ready once every cache has seen the end of its
/// first list (`InitDone`). Read from the watch streams themselves:
/// `Store::wait_until_ready` wakes only the last of several waiters, and
/// the Controller waits on the same store, so a second waiter never woke.
#[derive(Clone)]
pub(super) struct CacheSync {
    seen: Arc<std::sync::atomic::AtomicU8>,
    ready: Readiness,
}

impl CacheSync {
    pub(super) fn new(ready: Readiness) -> Self {
        Self {
            seen: Arc::default(),
            ready,
        }
    }

    pub(super) fn marker<K>(&self, cache: Cache) -> impl FnMut(&watcher::Event<K>) + use<K> {
        let this = self.clone();
        move |event| {
            if matches!(event, watcher::Event::InitDone) {
                this.listed(cache);
            }
        }
    }

    pub(super) fn is_synced(&self) -> bool {
        let all = Cache::Instances as u8 | Cache::OperatorVersions as u8;
        self.seen.load(std::sync::atomic::Ordering::SeqCst) == all
    }

    fn listed(&self, cache: Cache) {
        use std::sync::atomic::Ordering;
        let all = Cache::Instances as u8 | Cache::OperatorVersions as u8;
        let before = self.seen.fetch_or(cache as u8, Ordering::SeqCst);
        if before != all && before | cache as u8 == all {
            tracing::info!("caches synced; ready");
            self.ready.set_controller(ControllerState::Synced);
        }
    }
}

/// Metadata watch events of objects of kind `K` labelled `heritage=kudo`;
/// with `recovered`, their metadata is also cached for drift observation.
pub(super) fn owned<K>(
    client: &Client,
    observers: &mut Observers,
    group: &str,
    recovered: bool,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    // Pod templates carry the heritage label too: pods that workload
    // controllers made (marked by the labels those controllers add) are
    // never an Instance's own, and a big Instance has thousands of them.
    let selector = if K::kind(&()) == "Pod" {
        format!(
            "{HERITAGE_LABEL}={HERITAGE_VALUE},!pod-template-hash,!controller-revision-hash,!controller-uid"
        )
    } else {
        format!("{HERITAGE_LABEL}={HERITAGE_VALUE}")
    };
    let owned = watcher::Config::default().labels(&selector);
    let events = watcher(Api::<PartialObjectMeta<K>>::all(client.clone()), owned).default_backoff();
    if !recovered {
        // Only the events are needed: no cache.
        return events.touched_objects().left_stream();
    }
    let (store, writer) = reflector::store::<PartialObjectMeta<K>>();
    let synced = Arc::new(AtomicBool::new(false));
    let kind = K::kind(&()).to_string();
    observers.add(
        group,
        &kind,
        Arc::new(TypedLookup::new(store, synced.clone())),
    );
    events
        .inspect_ok(move |e| {
            if matches!(e, watcher::Event::InitDone) {
                synced.store(true, Ordering::Release);
            }
        })
        .modify(|o: &mut PartialObjectMeta<K>| keep_what_drift_needs(&mut o.metadata))
        .reflect(writer)
        .touched_objects()
        .right_stream()
}

pub(super) type MetaStream<K> =
    futures::stream::BoxStream<'static, Result<PartialObjectMeta<K>, watcher::Error>>;

/// Whether the manager may list objects of kind `K` (a manager that writes
/// as Instances' accounts has no right on Secrets).
pub(super) async fn may_list<K>(client: &Client) -> bool
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let probe = Api::<K>::all(client.clone())
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await;
    match probe {
        Err(kube::Error::Api(s)) if s.code == 403 => {
            tracing::info!(kind = %K::kind(&()), "not allowed to list; its drift is not recovered");
            false
        }
        _ => true,
    }
}

/// [`owned`] for a core kind when `allowed`; otherwise a stream that never
/// yields, and its drift is not observed.
pub(super) fn owned_if<K>(
    allowed: bool,
    client: &Client,
    observers: &mut Observers,
) -> MetaStream<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    if allowed {
        owned::<K>(client, observers, "", true).boxed()
    } else {
        futures::stream::pending().boxed()
    }
}

/// Drops the versions our own applies produced (the apply response already
/// told the reconcile everything those events carry).
pub(super) fn not_own_applies<K>(
    objects: impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static,
    ctx: &Arc<Context>,
) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource + Send + 'static,
    K::DynamicType: Default,
{
    let ctx = ctx.clone();
    objects.try_filter(move |o| {
        let own = ctx.own_applies.is_own(
            o.metadata.uid.as_deref(),
            o.metadata.resource_version.as_deref(),
        );
        std::future::ready(!own)
    })
}

/// The parent Instances a child Instance names in its owner references.
pub(super) fn parents(child: &PartialObjectMeta<Instance>) -> Vec<ObjectRef<Instance>> {
    let ns = child.metadata.namespace.as_deref();
    child
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.kind == "Instance" && o.api_version == API_VERSION)
        .map(|o| {
            let r = ObjectRef::new(&o.name);
            match ns {
                Some(ns) => r.within(ns),
                None => r,
            }
        })
        .collect()
}

/// Whether an Instance names this OperatorVersion.
pub(super) fn references(inst: &Instance, ov_name: &str, ov_ns: Option<&str>) -> bool {
    let r = &inst.spec.operator_version;
    let own = inst.metadata.namespace.as_deref().unwrap_or_default();
    let ns = Some(kudo_api::ov_namespace(r.namespace.as_deref(), own));
    let tracked = inst
        .status
        .as_ref()
        .and_then(|s| s.upgrades.as_ref())
        .and_then(|u| u.operator_version.as_deref());
    // An Instance that tracks a channel runs the OperatorVersion its
    // status names (in its own namespace).
    (r.name.as_deref() == Some(ov_name) && ns == ov_ns)
        || (tracked == Some(ov_name) && inst.metadata.namespace.as_deref() == ov_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{InstanceSpec, ObjectReference, OperatorVersion};

    fn inst(ns: &str, ov: &str) -> Instance {
        let mut i = Instance::new(
            "i",
            InstanceSpec {
                operator_version: ObjectReference {
                    name: Some(ov.into()),
                    ..ObjectReference::default()
                },
                ..InstanceSpec::default()
            },
        );
        i.metadata.namespace = Some(ns.into());
        i
    }

    #[test]
    fn controller_is_ready_only_after_both_caches_listed_once() {
        let ready = Readiness::new(false);
        let sync = CacheSync::new(ready.clone());
        ready.set_controller(ControllerState::Syncing);
        let mut instances = sync.marker::<Instance>(Cache::Instances);
        let mut ovs = sync.marker::<OperatorVersion>(Cache::OperatorVersions);
        instances(&watcher::Event::Init);
        instances(&watcher::Event::InitDone);
        assert!(!ready.get(), "the OperatorVersion cache has not listed yet");
        ovs(&watcher::Event::Init);
        assert!(!ready.get());
        ovs(&watcher::Event::InitDone);
        assert!(ready.get());
        // A relist later (watch expired) keeps the cache serving: still ready.
        instances(&watcher::Event::Init);
        assert!(ready.get());
    }

    #[test]
    fn child_instances_map_to_the_parent_instances_they_name() {
        let owner = |kind: &str, name: &str| {
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: API_VERSION.into(),
                kind: kind.into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                ..Default::default()
            }
        };
        use kube::core::PartialObjectMetaExt;
        let mut child = kube::api::ObjectMeta {
            namespace: Some("team".into()),
            owner_references: Some(vec![
                owner("Instance", "parent"),
                owner("Deployment", "not-an-instance"),
            ]),
            ..Default::default()
        }
        .into_response_partial::<Instance>();
        assert_eq!(
            parents(&child),
            vec![ObjectRef::<Instance>::new("parent").within("team")]
        );
        child.metadata.owner_references = None;
        assert!(parents(&child).is_empty());
    }

    #[test]
    fn operator_version_maps_only_to_instances_naming_it_in_the_same_namespace() {
        assert!(references(&inst("a", "ov-1"), "ov-1", Some("a")));
        assert!(!references(&inst("b", "ov-1"), "ov-1", Some("a")));
        assert!(!references(&inst("a", "ov-2"), "ov-1", Some("a")));
    }
}
