//! The task that runs the simulated pod controllers (`pods`,
//! `statefulsets`, `replicasets`, `disruption`): each store change names
//! the objects it concerns, and they are brought in line in batches under
//! the state lock, claims first and budgets last. Pods wait `ready_delay`
//! for the kubelet in a timer queue.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashSet};
use std::sync::Arc;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;

use crate::objects::is_deleting;
use crate::pods::{Pass, Timer, claim_names, controller_of};
use crate::server::Inner;
use crate::store::{Change, EventKind, ns_name};

/// Keys per batch, so API requests get the lock in between.
const BATCH: usize = 64;

/// One piece of work, in the order a batch does them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Key {
    Claim(String, String),
    Deployment(String, String),
    ReplicaSet(String, String),
    StatefulSet(String, String),
    StatefulSetsIn(String),
    NodeGone(String),
    Nodes,
    Pod(String, String),
    Kubelet(Timer),
    Budgets(String),
}

/// Does one piece of work.
fn work(cx: &mut Pass<'_>, key: Key) {
    match key {
        Key::Claim(ns, name) => cx.release_claim(&ns, &name),
        Key::Deployment(ns, name) => crate::replicasets::deployment(cx, &ns, &name),
        Key::ReplicaSet(ns, name) => crate::replicasets::replicaset(cx, &ns, &name),
        Key::StatefulSet(ns, name) => crate::statefulsets::reconcile(cx, &ns, &name),
        Key::StatefulSetsIn(ns) => {
            let names: Vec<String> = cx
                .st
                .store
                .list("apps", "statefulsets", Some(&ns))
                .map(|s| ns_name(&s.value).1)
                .collect();
            for name in names {
                crate::statefulsets::reconcile(cx, &ns, &name);
            }
        }
        Key::NodeGone(name) => cx.node_gone(&name),
        Key::Nodes => cx.nodes_changed(),
        Key::Pod(ns, name) => cx.check_pod(&ns, &name),
        Key::Kubelet(Timer::Start(ns, name, uid)) => cx.start_pod(&ns, &name, &uid),
        Key::Kubelet(Timer::Stop(ns, name, uid)) => cx.stop_pod(&ns, &name, &uid),
        Key::Budgets(ns) => crate::disruption::refresh(cx.st, &ns),
    }
}

/// Whether a change is more than a status write: a creation, a spec change
/// (generation), new annotations (the fail annotation) or a deletion mark.
/// Status writes, most of the traffic, concern no controller here.
fn beyond_status(c: &Change) -> bool {
    let Some(old) = &c.old else {
        return true;
    };
    let (was, now) = (&old["metadata"], &c.object["metadata"]);
    was["generation"] != now["generation"]
        || was["annotations"] != now["annotations"]
        || is_deleting(old) != is_deleting(&c.object)
}

/// The work a change calls for.
fn note(c: &Change, dirty: &mut BTreeSet<Key>) {
    let (ns, name) = ns_name(&c.object);
    let gone = c.kind == EventKind::Deleted;
    let obj = &c.object;
    match (c.group.as_str(), c.plural.as_str()) {
        ("apps", "deployments") if !gone && beyond_status(c) => {
            dirty.insert(Key::Deployment(ns, name));
        }
        ("apps", "replicasets") => {
            // The Deployment cares about ReplicaSets others change or delete.
            if (gone || (c.old.is_some() && beyond_status(c)))
                && let Some(("Deployment", owner, _)) = controller_of(obj)
            {
                dirty.insert(Key::Deployment(ns.clone(), owner.to_string()));
            }
            if !gone && beyond_status(c) {
                dirty.insert(Key::ReplicaSet(ns, name));
            }
        }
        ("apps", "statefulsets") if !gone && beyond_status(c) => {
            dirty.insert(Key::StatefulSet(ns, name));
        }
        ("", "pods") => {
            let leaving = gone || is_deleting(obj) || crate::scheduler::is_terminal(obj);
            match controller_of(obj) {
                // A ReplicaSet only counts pods; a StatefulSet also waits
                // for readiness. Neither needs the pods it just made.
                Some(("ReplicaSet", owner, _)) if leaving => {
                    dirty.insert(Key::ReplicaSet(ns.clone(), owner.to_string()));
                }
                Some(("StatefulSet", owner, _)) if c.old.is_some() => {
                    dirty.insert(Key::StatefulSet(ns.clone(), owner.to_string()));
                }
                _ => {}
            }
            if gone || is_deleting(obj) {
                for claim in claim_names(obj) {
                    dirty.insert(Key::Claim(ns.clone(), claim));
                }
            }
            dirty.insert(Key::Budgets(ns.clone()));
            if !gone && (obj["status"]["phase"] == "Pending" || is_deleting(obj)) {
                dirty.insert(Key::Pod(ns, name));
            }
        }
        ("", "persistentvolumeclaims") => {
            if gone {
                dirty.insert(Key::StatefulSetsIn(ns));
            } else if is_deleting(obj) {
                dirty.insert(Key::Claim(ns, name));
            }
        }
        ("", "nodes") => {
            dirty.insert(if gone {
                Key::NodeGone(name)
            } else {
                Key::Nodes
            });
        }
        ("policy", "poddisruptionbudgets") if !gone => {
            dirty.insert(Key::Budgets(ns));
        }
        _ => {}
    }
}

/// Everything, as after a start or a missed change.
fn everything(inner: &Inner) -> BTreeSet<Key> {
    let st = inner.lock();
    let mut dirty = BTreeSet::new();
    for (group, plural, s) in st.store.iter_all() {
        let (ns, name) = ns_name(&s.value);
        match (group, plural) {
            ("apps", "deployments") => dirty.insert(Key::Deployment(ns, name)),
            ("apps", "replicasets") => dirty.insert(Key::ReplicaSet(ns, name)),
            ("apps", "statefulsets") => dirty.insert(Key::StatefulSet(ns, name)),
            ("", "pods") => dirty.insert(Key::Pod(ns, name)),
            ("", "persistentvolumeclaims") => dirty.insert(Key::Claim(ns, name)),
            ("policy", "poddisruptionbudgets") => dirty.insert(Key::Budgets(ns)),
            ("", "nodes") => dirty.insert(Key::Nodes),
            _ => false,
        };
    }
    dirty
}

type Timers = BinaryHeap<Reverse<(Instant, Timer)>>;

/// Moves the kubelet's work that is due into `dirty`.
fn fire_due(timers: &mut Timers, timed: &mut HashSet<Timer>, dirty: &mut BTreeSet<Key>) {
    let now = Instant::now();
    while timers.peek().is_some_and(|Reverse((at, _))| *at <= now) {
        if let Some(Reverse((_, t))) = timers.pop() {
            timed.remove(&t);
            dirty.insert(Key::Kubelet(t));
        }
    }
}

/// Runs the simulated pod controllers until shutdown.
pub async fn run(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.clone();
    let mut rx = inner.lock().store.subscribe();
    let mut dirty = everything(&inner);
    // The kubelet's pending work by due time; `timed` holds what is queued.
    let mut timers = Timers::new();
    let mut timed: HashSet<Timer> = HashSet::new();
    loop {
        fire_due(&mut timers, &mut timed, &mut dirty);
        while !dirty.is_empty() {
            let batch: Vec<Key> = std::iter::from_fn(|| dirty.pop_first())
                .take(BATCH)
                .collect();
            let due = {
                let mut st = inner.lock();
                let before = st.store.resource_version();
                let mut pass = Pass::new(&mut st);
                for key in batch {
                    work(&mut pass, key);
                }
                let due = pass.into_timers();
                if st.store.resource_version() != before {
                    inner.dirty.notify_one();
                }
                due
            };
            let at = Instant::now() + inner.settings.ready_delay;
            for t in due {
                if timed.insert(t.clone()) {
                    timers.push(Reverse((at, t)));
                }
            }
            tokio::task::yield_now().await;
            loop {
                match rx.try_recv() {
                    Ok(c) => note(&c, &mut dirty),
                    Err(TryRecvError::Lagged(_)) => dirty.extend(everything(&inner)),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Closed) => return,
                }
            }
            // A steady stream of changes must not hold the kubelet back.
            fire_due(&mut timers, &mut timed, &mut dirty);
        }
        let next = timers.peek().map(|Reverse((at, _))| *at);
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {}
            c = rx.recv() => match c {
                Ok(c) => note(&c, &mut dirty),
                Err(RecvError::Lagged(_)) => dirty.extend(everything(&inner)),
                Err(RecvError::Closed) => return,
            },
        }
    }
}
