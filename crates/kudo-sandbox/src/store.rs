//! In-memory object storage with a global resourceVersion and an event log
//! that watches resume from.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

pub use crate::owners::Owners;

#[path = "store_index.rs"]
mod index;
pub use index::Address;

/// An object as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    /// The object, with metadata filled in.
    pub value: Arc<Value>,
    /// Field ownership per manager entry.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        with = "crate::owners::snapshot"
    )]
    pub owners: Owners,
}

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

/// One change to the store, as delivered to watches.
#[derive(Debug, Clone)]
pub struct Change {
    /// resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub kind: EventKind,
    /// API group of the object.
    pub group: String,
    /// Plural resource of the object.
    pub plural: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// The object after the change (for deletes, the last state).
    pub object: Arc<Value>,
    /// The object before the change, for selector transitions.
    pub old: Option<Arc<Value>>,
    /// Field ownership after the change, shown as managedFields.
    pub owners: Owners,
    /// The object as JSON for watchers, serialised by the first watcher and
    /// shared with the others asking for the same apiVersion.
    pub presented: OnceLock<(String, bytes::Bytes)>,
}

type ResourceKey = (String, String);

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
type ObjectKey = (String, String);

/// Why events since a resourceVersion cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    /// The oldest resourceVersion a watch may resume from.
    pub oldest: u64,
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Stored>>,
    rv: u64,
    compacted: u64,
    log: VecDeque<Arc<Change>>,
    capacity: usize,
    tx: broadcast::Sender<Arc<Change>>,
    current: Arc<AtomicU64>,
    /// resourceVersion of the last write to an RBAC object: what cached
    /// authorization rules are checked against.
    rbac_written: u64,
    /// Lookups by uid and owner uid for the garbage collector.
    index: index::Index,
}

/// A serialisable copy of the store.
#[derive(Debug, Serialize, Deserialize)]
pub struct Snapshot {
    /// Last resourceVersion handed out.
    pub resource_version: u64,
    /// Every object.
    pub objects: Vec<SnapshotEntry>,
}

/// One object in a [`Snapshot`].
#[derive(Debug, Serialize, Deserialize)]
pub struct SnapshotEntry {
    /// API group.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Stored object and ownership.
    #[serde(flatten)]
    pub stored: Stored,
}

/// Namespace and name of an object value.
pub fn ns_name(v: &Value) -> (String, String) {
    let m = &v["metadata"];
    (
        m["namespace"].as_str().unwrap_or_default().to_string(),
        m["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// The resourceVersion of an object value, 0 if missing.
pub fn object_rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

impl Store {
    /// An empty store keeping `capacity` events for watch resumption.
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.clamp(16, 65_536));
        Self {
            objects: HashMap::new(),
            rv: 1,
            compacted: 1,
            log: VecDeque::new(),
            capacity: capacity.max(1),
            tx,
            current: Arc::new(AtomicU64::new(1)),
            rbac_written: 1,
            index: index::Index::default(),
        }
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The resourceVersion of the last change to a Role, ClusterRole,
    /// RoleBinding or ClusterRoleBinding (or of a restore).
    pub fn rbac_written(&self) -> u64 {
        self.rbac_written
    }

    /// A shared counter mirroring the latest resourceVersion, readable without the lock.
    pub fn rv_counter(&self) -> Arc<AtomicU64> {
        self.current.clone()
    }

    /// Receives every future change.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    /// One object.
    pub fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<&Stored> {
        self.objects
            .get(&(group.to_string(), plural.to_string()))?
            .get(&(ns.to_string(), name.to_string()))
    }

    /// Objects of a resource, in one namespace or all, sorted by namespace and name.
    pub fn list<'a>(
        &'a self,
        group: &str,
        plural: &str,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        self.list_named(group, plural, ns, None)
    }

    /// Objects of a resource as [`Store::list`] gives them, only the ones
    /// called `name` when it is given (compared on the key, before any value).
    pub fn list_named<'a>(
        &'a self,
        group: &str,
        plural: &str,
        ns: Option<&'a str>,
        name: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        self.objects
            .get(&(group.to_string(), plural.to_string()))
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |((n, o), _)| {
                ns.is_none_or(|want| want == n) && name.is_none_or(|want| want == o)
            })
            .map(|(_, s)| s)
    }

    /// Objects of a resource in namespace `ns` whose names start with
    /// `prefix`, by key range (controllers find their pods this way without
    /// scanning the namespace).
    pub fn list_prefix<'a>(
        &'a self,
        group: &str,
        plural: &str,
        ns: &'a str,
        prefix: &'a str,
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        self.objects
            .get(&(group.to_string(), plural.to_string()))
            .into_iter()
            .flat_map(move |m| m.range((ns.to_string(), prefix.to_string())..))
            .take_while(move |((n, o), _)| n == ns && o.starts_with(prefix))
            .map(|(_, s)| s)
    }

    /// Where the object with this uid is stored.
    pub fn address_of(&self, uid: &str) -> Option<&Address> {
        self.index.address_of(uid)
    }

    /// Objects naming `owner_uid` in an owner reference.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<Address> {
        self.index.dependents_of(owner_uid)
    }

    /// Whether any object names `owner_uid` in an owner reference.
    pub fn has_dependents(&self, owner_uid: &str) -> bool {
        self.index.has_dependents(owner_uid)
    }

    /// Objects being deleted that wait in foreground for their dependents.
    pub fn foreground_waiting(&self) -> Vec<Address> {
        self.index.foreground_waiting()
    }

    /// Every stored object with its resource.
    pub fn iter_all(&self) -> impl Iterator<Item = (&str, &str, &Stored)> {
        self.objects
            .iter()
            .flat_map(|((g, p), m)| m.values().map(move |s| (g.as_str(), p.as_str(), s)))
    }

    /// Whether any object of the resource exists in the namespace.
    pub fn namespace_has_objects(&self, ns: &str) -> bool {
        self.objects
            .values()
            .any(|m| m.keys().any(|(n, _)| n == ns))
    }

    /// Writes an object, assigning the next resourceVersion, and emits ADDED
    /// or MODIFIED. Returns the stored value.
    pub fn put(
        &mut self,
        group: &str,
        plural: &str,
        mut value: Value,
        owners: Owners,
    ) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let (ns, name) = ns_name(&value);
        let value = Arc::new(value);
        let address = (
            group.to_string(),
            plural.to_string(),
            ns.clone(),
            name.clone(),
        );
        let old = self
            .objects
            .entry((group.to_string(), plural.to_string()))
            .or_default()
            .insert(
                (ns.clone(), name),
                Stored {
                    value: value.clone(),
                    owners: owners.clone(),
                },
            );
        self.index.replace(
            &address,
            old.as_ref().map(|o| o.value.as_ref()),
            Some(&value),
        );
        let kind = if old.is_some() {
            EventKind::Modified
        } else {
            EventKind::Added
        };
        self.emit(Change {
            rv,
            kind,
            group: group.to_string(),
            plural: plural.to_string(),
            namespace: ns,
            object: value.clone(),
            old: old.map(|o| o.value),
            owners,
            presented: OnceLock::new(),
        });
        value
    }

    /// Removes an object and emits DELETED (the object carries the deletion's resourceVersion).
    pub fn remove(
        &mut self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let key = (group.to_string(), plural.to_string());
        let old = self
            .objects
            .get_mut(&key)?
            .remove(&(ns.to_string(), name.to_string()))?;
        let address = (key.0, key.1, ns.to_string(), name.to_string());
        self.index.replace(&address, Some(&old.value), None);
        self.rv += 1;
        let rv = self.rv;
        let mut last = (*old.value).clone();
        if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let last = Arc::new(last);
        self.emit(Change {
            rv,
            kind: EventKind::Deleted,
            group: group.to_string(),
            plural: plural.to_string(),
            namespace: ns.to_string(),
            object: last.clone(),
            old: Some(old.value),
            owners: old.owners,
            presented: OnceLock::new(),
        });
        Some(last)
    }

    fn emit(&mut self, change: Change) {
        if change.group == RBAC_GROUP {
            self.rbac_written = change.rv;
        }
        let change = Arc::new(change);
        self.log.push_back(change.clone());
        while self.log.len() > self.capacity {
            if let Some(old) = self.log.pop_front() {
                self.compacted = old.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(change);
        self.current.store(self.rv, Ordering::Release);
    }

    /// Changes after `rv`, or `Compacted` if some of them were dropped from the log.
    pub fn changes_since(&self, rv: u64) -> Result<Vec<Arc<Change>>, Compacted> {
        if rv < self.compacted {
            return Err(Compacted {
                oldest: self.compacted,
            });
        }
        let start = self.log.partition_point(|c| c.rv <= rv);
        Ok(self.log.iter().skip(start).cloned().collect())
    }

    /// A serialisable copy of every object.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            resource_version: self.rv,
            objects: self
                .iter_all()
                .map(|(g, p, s)| SnapshotEntry {
                    group: g.to_string(),
                    resource: p.to_string(),
                    stored: s.clone(),
                })
                .collect(),
        }
    }

    /// Replaces the contents with a snapshot; watches must re-list afterwards.
    pub fn restore(&mut self, snapshot: Snapshot) {
        self.objects.clear();
        self.index.clear();
        for e in snapshot.objects {
            let (ns, name) = ns_name(&e.stored.value);
            let address = (
                e.group.clone(),
                e.resource.clone(),
                ns.clone(),
                name.clone(),
            );
            self.index.replace(&address, None, Some(&e.stored.value));
            self.objects
                .entry((e.group, e.resource))
                .or_default()
                .insert((ns, name), e.stored);
        }
        self.rv = snapshot.resource_version.max(1);
        self.compacted = self.rv;
        self.rbac_written = self.rv;
        self.log.clear();
        self.current.store(self.rv, Ordering::Release);
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
