//! Dependency constraints between the Instances of a namespace, on the
//! manager's side: gather what `kudo_engine::automatic::dependencies`
//! judges from the caches (Instances, OperatorVersions; no API request),
//! and wake the tracking Instances of a namespace when one of its
//! Instances starts or completes a move to another version, so a move held
//! for it is judged again at once.
//!
//! A hold depends on the versions the namespace's Instances count as (the
//! one their last completed plan ran with, and one a later plan started
//! with; they change only when a plan of theirs starts or completes, which
//! this manager records and then wakes), on their
//! `spec.upgrades.dependencies` (a spec change wakes too, once recorded),
//! and on what their OperatorVersions require. What the wake does not see
//! (a partner deleted, an OperatorVersion edited by hand, a move made by
//! another manager) is caught by the recheck every move held for another
//! Instance gets (`HELD_MOVE_RECHECK`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kudo_api::requirements::Requirement;
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::automatic::dependencies::{Counted, Move, Peer, check, counted_versions};
use kudo_engine::automatic::upgrades::Gate;

use crate::context::Context;

/// The Instances to reconcile again, sent by reconciles and read by the
/// controller.
pub struct Wakes {
    tx: mpsc::UnboundedSender<ObjectRef<Instance>>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<ObjectRef<Instance>>>>,
}

impl Default for Wakes {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded();
        Self {
            tx,
            rx: Mutex::new(Some(rx)),
        }
    }
}

impl Wakes {
    /// The stream of Instances to wake (once; later calls get none).
    pub fn take(&self) -> Option<mpsc::UnboundedReceiver<ObjectRef<Instance>>> {
        self.rx.lock().ok().and_then(|mut rx| rx.take())
    }

    fn send(&self, key: ObjectRef<Instance>) {
        // Nobody listens outside the controller (tests of one reconcile).
        let _ = self.tx.unbounded_send(key);
    }
}

/// The Instance as this manager last wrote it when the cache has not
/// caught up with that write yet.
fn freshest(ctx: &Context, cached: Arc<Instance>) -> Arc<Instance> {
    let Ok(written) = ctx.written.lock() else {
        return cached;
    };
    let rv = cached.resource_version().unwrap_or_default();
    match written.get(&ObjectRef::from_obj(cached.as_ref())) {
        Some((stale, fresh)) if stale.contains(&rv) => fresh.clone(),
        _ => cached,
    }
}

/// The OperatorVersion of the name `name` an Instance's status records:
/// first in the Instance's own namespace (where a channel installs the
/// versions it moves to), then where its spec looks (a shared one). Never
/// the other way round: another tenant's namespace may hold an object of
/// the same name shared with this one.
fn operator_version(ctx: &Context, inst: &Instance, name: &str) -> Option<Arc<OperatorVersion>> {
    let own = inst.metadata.namespace.as_deref()?;
    let in_namespace = |namespace: Option<String>| {
        let reference = kudo_api::ObjectReference {
            name: Some(name.to_string()),
            namespace,
            ..Default::default()
        };
        ctx.operator_version_by(own, &reference)
    };
    in_namespace(None).or_else(|| in_namespace(Some(inst.spec.operator_version.namespace.clone()?)))
}

/// What the caches say about one other Instance: the OperatorVersion it
/// last completed a plan with, and one a later plan started with.
struct Known {
    name: String,
    settled: Option<Arc<OperatorVersion>>,
    moving: Option<Arc<OperatorVersion>>,
    names: BTreeMap<String, String>,
}

impl Known {
    fn of(ctx: &Context, inst: &Instance) -> Self {
        let (settled, moving) = counted_versions(inst.status.as_ref());
        Self {
            name: inst.name_any(),
            settled: settled.and_then(|n| operator_version(ctx, inst, n)),
            moving: moving.and_then(|n| operator_version(ctx, inst, n)),
            names: inst
                .spec
                .upgrades
                .as_ref()
                .map(|u| u.dependencies.clone())
                .unwrap_or_default(),
        }
    }

    fn counted(&self) -> Counted<'_> {
        Counted::new(
            self.settled.as_ref().map(|ov| &ov.spec),
            self.moving.as_ref().map(|ov| &ov.spec),
        )
    }
}

/// Whether `inst` (of `operator`) may move to operator version `to`,
/// which requires `requires`: a hold when that would leave a requirement
/// unmet on either side.
pub fn hold(
    ctx: &Context,
    inst: &Instance,
    operator: &str,
    to: &str,
    requires: &[Requirement],
) -> Option<String> {
    let ns = inst.namespace().unwrap_or_default();
    let own = inst.name_any();
    // In name order: which Instance a hold names first stays the same
    // from one reconcile (and one manager) to the next.
    let mut neighbours: Vec<Arc<Instance>> = ctx
        .instances
        .state()
        .into_iter()
        .filter(|i| {
            i.metadata.namespace.as_deref() == Some(ns.as_str())
                && i.metadata.name.as_deref() != Some(own.as_str())
        })
        .collect();
    neighbours.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let known: Vec<Known> = neighbours
        .into_iter()
        .map(|i| Known::of(ctx, &freshest(ctx, i)))
        .collect();
    let counted: Vec<Counted<'_>> = known.iter().map(Known::counted).collect();
    let peers: Vec<Peer<'_>> = known
        .iter()
        .zip(&counted)
        .map(|(k, c)| c.peer(&k.name, &k.names))
        .collect();
    let no_names = BTreeMap::new();
    let mv = Move {
        instance: &own,
        operator,
        to,
        requires,
        names: inst
            .spec
            .upgrades
            .as_ref()
            .map_or(&no_names, |u| &u.dependencies),
    };
    match check(&mv, &peers, &kudo_repo::requirements::satisfies) {
        Gate::Go => None,
        Gate::Hold { why, .. } => Some(why),
    }
}

/// The OperatorVersion names an Instance counts as for the holds of its
/// namespace (see [`counted_versions`]): last completed, moving to.
pub type CountedNames = (Option<String>, Option<String>);

/// [`CountedNames`] of a status, to compare before and after a reconcile.
pub fn counted(status: Option<&kudo_api::InstanceStatus>) -> CountedNames {
    let (settled, moving) = counted_versions(status);
    (settled.map(Into::into), moving.map(Into::into))
}

/// What a reconcile compares its record with to know whether the moves
/// held for the Instance are worth judging again.
#[derive(Debug)]
pub struct Before {
    counted: CountedNames,
    /// The Instance's spec changed since its last record (its
    /// `spec.upgrades.dependencies` may now release or hold another's move).
    spec_changed: bool,
}

impl Before {
    /// Read from the Instance as the reconcile starts.
    pub fn of(inst: &Instance) -> Self {
        let status = inst.status.as_ref();
        Self {
            counted: counted(status),
            spec_changed: inst.metadata.generation != status.and_then(|s| s.observed_generation),
        }
    }
}

/// After `inst` was recorded: when the versions it counts as changed
/// (`before` → `after`: an upgrade started or completed), or its spec did,
/// wake the other tracking Instances of its namespace that have a move
/// held for another.
pub fn wake_if_moved(ctx: &Context, inst: &Instance, before: &Before, after: &CountedNames) {
    let moved = &before.counted != after && after != &(None, None);
    if !moved && !before.spec_changed {
        return;
    }
    let ns = inst.namespace();
    let own = inst.name_any();
    for name in ctx.waiting_moves.in_namespace(ns.as_deref()) {
        if name != own {
            let key = ObjectRef::<Instance>::new(&name);
            ctx.wakes.send(match &ns {
                Some(ns) => key.within(ns),
                None => key,
            });
        }
    }
}

/// The tracking Instances with a channel move waiting, by namespace: the
/// only ones a wake can concern, so a wake costs nothing in a namespace
/// of Instances that wait for nothing. Kept by the reconciles that record
/// the moves; bounded by what is live (an Instance goes with its record).
#[derive(Debug, Default)]
pub struct WaitingMoves(Mutex<HashMap<String, BTreeSet<String>>>);

impl WaitingMoves {
    /// Notes whether `inst` has a move waiting for another Instance.
    pub fn record(&self, inst: &Instance, waiting: bool) {
        if !waiting {
            return self.forget(inst.namespace().as_deref(), &inst.name_any());
        }
        if let Ok(mut all) = self.0.lock() {
            all.entry(inst.namespace().unwrap_or_default())
                .or_default()
                .insert(inst.name_any());
        }
    }

    /// Forgets an Instance that is gone.
    pub fn forget(&self, namespace: Option<&str>, name: &str) {
        let ns = namespace.unwrap_or_default();
        if let Ok(mut all) = self.0.lock()
            && let Some(names) = all.get_mut(ns)
        {
            names.remove(name);
            if names.is_empty() {
                all.remove(ns);
            }
        }
    }

    fn in_namespace(&self, namespace: Option<&str>) -> Vec<String> {
        self.0
            .lock()
            .ok()
            .and_then(|all| all.get(namespace.unwrap_or_default()).cloned())
            .map(|names| names.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(ns: &str, name: &str) -> Instance {
        let mut inst = Instance::new(name, kudo_api::InstanceSpec::default());
        inst.metadata.namespace = Some(ns.into());
        inst
    }

    #[test]
    fn only_instances_with_a_move_held_for_another_are_kept_per_namespace_until_they_go() {
        let waiting = WaitingMoves::default();
        let kafka = instance("team", "kafka");
        waiting.record(&kafka, true);
        waiting.record(&instance("other", "zk"), true);
        waiting.record(&instance("team", "idle"), false);
        assert_eq!(waiting.in_namespace(Some("team")), ["kafka"]);

        // Moved, or held by something else now: nothing waits any more.
        waiting.record(&kafka, false);
        assert!(waiting.in_namespace(Some("team")).is_empty());
        assert_eq!(waiting.in_namespace(Some("other")), ["zk"]);

        waiting.record(&kafka, true);
        waiting.forget(Some("team"), "kafka");
        assert!(waiting.in_namespace(Some("team")).is_empty());
    }
}
