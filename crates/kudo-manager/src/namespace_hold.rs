//! Namespace-wide suppression, the manager's side. The count comes from
//! the caches: which Instances of each namespace are automatically
//! suppressed is kept from the Instance watch's events, and each
//! Namespace's `kudo.dev/suppression-threshold` from a metadata watch of
//! Namespaces, so a reconcile reads both without a request. The rule
//! itself is `kudo_engine::namespace_hold`.
//!
//! Waking: an Instance held by its namespace is reconciled again when a
//! namespace's count drops (a suppression cleared, an Instance rolled back
//! or deleted: the Instance watch sees it) and when a Namespace changes
//! (its threshold may have been raised), through a watch mapping to the
//! held Instances of that namespace. A hold that ends as suppressions
//! expire needs no event: the engine asks for a requeue at that time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, OnceLock};

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Namespace;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use kudo_api::Instance;
use kudo_api::names::SUPPRESSION_THRESHOLD_ANNOTATION;
use kudo_engine::namespace::{NamespaceSuppressions, Suppressed, Threshold, ThresholdSource};
use kudo_engine::namespace_hold::{held_by_namespace, threshold_for};

/// Suppressed Instances of one namespace: name → when it ends.
type Names = BTreeMap<String, Option<Timestamp>>;

/// What the manager keeps for the namespace-wide suppression.
#[derive(Default)]
pub struct NamespaceCounts {
    state: Mutex<State>,
    /// Namespaces' metadata, once their watch runs (`None` before, or
    /// when the manager may not list Namespaces: the flag applies).
    namespaces: OnceLock<Store<PartialObjectMeta<Namespace>>>,
    /// Namespaces whose count dropped, to wake their held Instances.
    dropped: OnceLock<mpsc::UnboundedSender<String>>,
}

#[derive(Default)]
struct State {
    by_namespace: HashMap<String, Names>,
    /// While the watch lists again: the Instances seen so far (the others
    /// are gone once it is done).
    relisting: Option<HashSet<(String, String)>>,
}

impl State {
    /// Records `inst`; true when its namespace lost a suppressed Instance.
    fn record(&mut self, inst: &Instance, gone: bool) -> bool {
        let (ns, name) = (inst.namespace().unwrap_or_default(), inst.name_any());
        if let Some(seen) = &mut self.relisting {
            seen.insert((ns.clone(), name.clone()));
        }
        let suppression = inst
            .status
            .as_ref()
            .and_then(|s| s.auto_suppression.as_ref())
            .filter(|_| !gone)
            .map(|a| a.until.as_ref().map(|u| u.0));
        match suppression {
            Some(until) => {
                self.by_namespace.entry(ns).or_default().insert(name, until);
                false
            }
            None => self.remove(&ns, &name),
        }
    }

    fn remove(&mut self, ns: &str, name: &str) -> bool {
        let Some(names) = self.by_namespace.get_mut(ns) else {
            return false;
        };
        let removed = names.remove(name).is_some();
        if names.is_empty() {
            self.by_namespace.remove(ns);
        }
        removed
    }

    /// After a new list: drops the Instances it did not show; the
    /// namespaces that lost one.
    fn relisted(&mut self) -> Vec<String> {
        let Some(seen) = self.relisting.take() else {
            return Vec::new();
        };
        let stale: Vec<(String, String)> = self
            .by_namespace
            .iter()
            .flat_map(|(ns, names)| names.keys().map(move |n| (ns.clone(), n.clone())))
            .filter(|key| !seen.contains(key))
            .collect();
        let mut dropped: Vec<String> = stale
            .into_iter()
            .filter(|(ns, name)| self.remove(ns, name))
            .map(|(ns, _)| ns)
            .collect();
        dropped.sort();
        dropped.dedup();
        dropped
    }
}

impl NamespaceCounts {
    /// Keeps the count from one event of the Instance watch.
    pub fn apply(&self, event: &watcher::Event<Instance>) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let dropped = match event {
            watcher::Event::Apply(i) | watcher::Event::InitApply(i) => state
                .record(i, false)
                .then(|| i.namespace().unwrap_or_default())
                .into_iter()
                .collect(),
            watcher::Event::Delete(i) => state
                .record(i, true)
                .then(|| i.namespace().unwrap_or_default())
                .into_iter()
                .collect(),
            watcher::Event::Init => {
                state.relisting = Some(HashSet::new());
                Vec::new()
            }
            watcher::Event::InitDone => state.relisted(),
        };
        drop(state);
        if let Some(tx) = self.dropped.get() {
            for ns in dropped {
                // Unbounded: the receiver lives as long as the controller.
                let _ = tx.unbounded_send(ns);
            }
        }
    }

    /// What the engine needs for `inst`: its namespace's threshold and
    /// suppressed Instances (`None` when nothing there can hold or be said).
    pub fn observe(&self, inst: &Instance, manager: Threshold) -> Option<NamespaceSuppressions> {
        let ns = inst.namespace().unwrap_or_default();
        let annotation = self
            .namespaces
            .get()
            .and_then(|store| store.get(&ObjectRef::new(&ns)))
            .and_then(|meta| {
                meta.annotations()
                    .get(SUPPRESSION_THRESHOLD_ANNOTATION)
                    .cloned()
            });
        let (threshold, source) = threshold_for(annotation.as_deref(), manager);
        let suppressed: Vec<Suppressed> = self
            .state
            .lock()
            .ok()
            .and_then(|s| {
                s.by_namespace.get(&ns).map(|names| {
                    names
                        .iter()
                        .map(|(name, until)| Suppressed {
                            name: name.clone(),
                            until: *until,
                        })
                        .collect()
                })
            })
            .unwrap_or_default();
        let malformed = matches!(source, ThresholdSource::Malformed(_));
        (!suppressed.is_empty() || malformed).then_some(NamespaceSuppressions {
            namespace: ns,
            threshold,
            source,
            suppressed,
        })
    }

    /// The stream a controller maps to the held Instances of a namespace:
    /// Namespace changes (from a metadata watch whose cache [`Self::observe`]
    /// reads) and namespaces whose count dropped. Without the right to list
    /// Namespaces, only the latter (and the flag's threshold applies).
    pub fn triggers(
        &self,
        client: &Client,
        may_list: bool,
    ) -> impl Stream<Item = Result<PartialObjectMeta<Namespace>, watcher::Error>> + Send + 'static
    {
        let (tx, rx) = mpsc::unbounded();
        let _ = self.dropped.set(tx);
        let dropped = rx.map(|ns| {
            let mut meta = PartialObjectMeta::<Namespace>::default();
            meta.metadata.name = Some(ns);
            Ok(meta)
        });
        if !may_list {
            tracing::info!(
                "not allowed to list Namespaces: their {SUPPRESSION_THRESHOLD_ANNOTATION} is not read"
            );
            return dropped.boxed();
        }
        let (store, writer) = reflector::store::<PartialObjectMeta<Namespace>>();
        let _ = self.namespaces.set(store);
        let changes = reflector::reflector(
            writer,
            watcher(
                Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
                watcher::Config::default(),
            )
            .modify(keep_threshold_only),
        )
        .default_backoff()
        .touched_objects();
        futures::stream::select(changes, dropped).boxed()
    }
}

/// What the cache keeps of a Namespace: its name, resourceVersion and
/// threshold annotation (anyone who may annotate a Namespace could
/// otherwise make the manager hold megabytes per Namespace).
fn keep_threshold_only(meta: &mut PartialObjectMeta<Namespace>) {
    let threshold = meta
        .metadata
        .annotations
        .as_mut()
        .and_then(|a| a.remove_entry(SUPPRESSION_THRESHOLD_ANNOTATION));
    meta.metadata = kube::core::ObjectMeta {
        name: meta.metadata.name.take(),
        resource_version: meta.metadata.resource_version.take(),
        uid: meta.metadata.uid.take(),
        annotations: threshold.map(|kv| BTreeMap::from([kv])),
        ..Default::default()
    };
}

/// The Instances of the namespace `meta` names that its hold keeps waiting.
pub fn held_in(
    meta: &PartialObjectMeta<Namespace>,
    instances: &Store<Instance>,
) -> Vec<ObjectRef<Instance>> {
    let ns = meta.name_any();
    instances
        .state()
        .into_iter()
        .filter(|i| i.metadata.namespace.as_deref() == Some(ns.as_str()))
        .filter(|i| i.status.as_ref().is_some_and(held_by_namespace))
        .map(|i| ObjectRef::from_obj(i.as_ref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{AutoSuppression, InstanceStatus};

    fn inst(ns: &str, name: &str, suppressed: bool) -> Instance {
        let mut i = Instance::new(name, Default::default());
        i.metadata.namespace = Some(ns.into());
        i.status = Some(InstanceStatus {
            auto_suppression: suppressed.then(|| AutoSuppression {
                since: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
                until: None,
                reason: "deploy failed".into(),
                plan: None,
                uid: None,
            }),
            ..Default::default()
        });
        i
    }

    fn count(counts: &NamespaceCounts, ns: &str) -> usize {
        counts
            .observe(&inst(ns, "x", false), Threshold::MoreThan(1))
            .map_or(0, |n| n.suppressed.len())
    }

    #[test]
    fn suppressed_instances_are_counted_per_namespace_and_forgotten_when_cleared_or_deleted() {
        let counts = NamespaceCounts::default();
        counts.apply(&watcher::Event::Apply(inst("a", "db", true)));
        counts.apply(&watcher::Event::Apply(inst("a", "web", true)));
        counts.apply(&watcher::Event::Apply(inst("b", "db", true)));
        assert_eq!((count(&counts, "a"), count(&counts, "b")), (2, 1));
        counts.apply(&watcher::Event::Apply(inst("a", "db", false)));
        counts.apply(&watcher::Event::Delete(inst("b", "db", true)));
        assert_eq!((count(&counts, "a"), count(&counts, "b")), (1, 0));
    }

    #[test]
    fn the_namespace_cache_keeps_only_the_threshold_annotation() {
        let mut meta = PartialObjectMeta::<Namespace>::default();
        meta.metadata.name = Some("team".into());
        meta.metadata.resource_version = Some("7".into());
        meta.metadata.annotations = Some(BTreeMap::from([
            (
                SUPPRESSION_THRESHOLD_ANNOTATION.to_string(),
                "5".to_string(),
            ),
            ("example.com/big".to_string(), "x".repeat(100_000)),
        ]));
        meta.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
        keep_threshold_only(&mut meta);
        assert_eq!(meta.metadata.name.as_deref(), Some("team"));
        assert_eq!(meta.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            meta.metadata.annotations,
            Some(BTreeMap::from([(
                SUPPRESSION_THRESHOLD_ANNOTATION.to_string(),
                "5".to_string()
            )]))
        );
        assert_eq!(meta.metadata.labels, None);
    }

    #[test]
    fn a_new_list_forgets_instances_that_went_away_meanwhile() {
        let counts = NamespaceCounts::default();
        counts.apply(&watcher::Event::Apply(inst("a", "db", true)));
        counts.apply(&watcher::Event::Apply(inst("a", "web", true)));
        counts.apply(&watcher::Event::Init);
        counts.apply(&watcher::Event::InitApply(inst("a", "web", true)));
        counts.apply(&watcher::Event::InitDone);
        assert_eq!(count(&counts, "a"), 1);
    }

    #[tokio::test]
    async fn a_namespace_whose_count_drops_is_sent_to_wake_its_held_instances() {
        let counts = NamespaceCounts::default();
        let (tx, mut rx) = mpsc::unbounded();
        let _ = counts.dropped.set(tx);
        counts.apply(&watcher::Event::Apply(inst("a", "db", true)));
        counts.apply(&watcher::Event::Apply(inst("a", "web", false)));
        counts.apply(&watcher::Event::Apply(inst("a", "db", false)));
        assert_eq!(rx.next().await.as_deref(), Some("a"));
        assert!(rx.try_recv().is_err(), "only the drop is sent");
    }
}
