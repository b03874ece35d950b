//! Dependency constraints between the Instances of a namespace, on the
//! manager's side: gather what `kudo_engine::automatic::dependencies`
//! judges from the caches (Instances, OperatorVersions; no API request),
//! and wake the tracking Instances of a namespace when one of its
//! Instances starts running another version, so a move held for it is
//! judged again at once.
//!
//! The wake is enough: a hold depends only on the versions the
//! namespace's Instances run (they change only when a plan of theirs
//! starts, which this manager records and then wakes) and on what they
//! require (fixed per OperatorVersion), and on their
//! `spec.upgrades.dependencies` (a spec change triggers the Instance that
//! changed, whose own move is judged then). What the wake does not see (a
//! partner deleted, or moved by another manager's hand) is caught by the
//! recheck every held move gets (`HELD_MOVE_RECHECK`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use kudo_api::requirements::Requirement;
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::automatic::dependencies::{Move, Peer, check};
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

/// The OperatorVersion an Instance runs: the one its last plan started
/// with, else the one it is set to run.
fn running(ctx: &Context, inst: &Arc<Instance>) -> Option<Arc<OperatorVersion>> {
    let effective = crate::upgrades::effective(inst.clone());
    let applied = inst
        .status
        .as_ref()
        .and_then(|s| s.applied_operator_version.as_deref());
    match applied {
        Some(name) if effective.spec.operator_version.name.as_deref() != Some(name) => {
            let mut copy = (*effective).clone();
            copy.spec.operator_version.name = Some(name.to_string());
            ctx.operator_version_of(&copy)
        }
        _ => ctx.operator_version_of(&effective),
    }
}

/// What the caches say about one other Instance.
struct Known {
    name: String,
    ov: Option<Arc<OperatorVersion>>,
    names: BTreeMap<String, String>,
}

impl Known {
    fn peer(&self) -> Peer<'_> {
        let spec = self.ov.as_ref().map(|ov| &ov.spec);
        Peer {
            instance: &self.name,
            operator: spec
                .and_then(|s| s.operator.as_ref())
                .and_then(|o| o.name.as_deref()),
            version: spec.and_then(|s| s.version.as_deref()),
            requires: spec.map_or(&[][..], |s| s.dependencies.as_slice()),
            names: &self.names,
        }
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
    let mut cached = ctx.instances.state();
    cached.sort_by_key(|i| i.name_any());
    let known: Vec<Known> = cached
        .into_iter()
        .filter(|i| i.namespace().as_deref() == Some(ns.as_str()) && i.name_any() != own)
        .map(|i| {
            let i = freshest(ctx, i);
            Known {
                name: i.name_any(),
                ov: running(ctx, &i),
                names: i
                    .spec
                    .upgrades
                    .as_ref()
                    .map(|u| u.dependencies.clone())
                    .unwrap_or_default(),
            }
        })
        .collect();
    let peers: Vec<Peer<'_>> = known.iter().map(Known::peer).collect();
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
        Gate::Hold(why) => Some(why),
    }
}

/// After `inst` was recorded: when the OperatorVersion it runs changed
/// (`before` → `after`), wake the other tracking Instances of its
/// namespace that have a move waiting.
pub fn wake_if_moved(ctx: &Context, inst: &Instance, before: Option<&str>, after: Option<&str>) {
    if before == after || after.is_none() {
        return;
    }
    let ns = inst.namespace();
    let own = inst.name_any();
    for other in ctx.instances.state() {
        if other.namespace() != ns || other.name_any() == own {
            continue;
        }
        let waiting = other.spec.upgrades.is_some()
            && other
                .status
                .as_ref()
                .and_then(|s| s.upgrades.as_ref())
                .is_some_and(|u| u.available.is_some() && u.available != u.installed);
        if waiting {
            ctx.wakes.send(ObjectRef::from_obj(other.as_ref()));
        }
    }
}
