//! Lookups the garbage collector needs without scanning every object: by
//! uid, the dependents of an owner uid, and the owners waiting in
//! foreground deletion.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// (group, plural, namespace, name) of a stored object.
pub type Address = (String, String, String, String);

/// Indexes kept in step with the store's objects.
#[derive(Debug, Default)]
pub struct Index {
    by_uid: HashMap<String, Address>,
    dependents: HashMap<String, BTreeSet<Address>>,
    foreground: BTreeSet<Address>,
}

fn uid_of(value: &Value) -> Option<&str> {
    value["metadata"]["uid"].as_str().filter(|u| !u.is_empty())
}

fn owner_uids(value: &Value) -> impl Iterator<Item = &str> {
    value["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str())
}

fn waits_in_foreground(value: &Value) -> bool {
    value["metadata"]["deletionTimestamp"].is_string()
        && value["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == crate::state::FOREGROUND_FINALIZER))
}

impl Index {
    /// `address` now holds `new` instead of `old` (either may be absent).
    pub fn replace(&mut self, address: &Address, old: Option<&Value>, new: Option<&Value>) {
        if let Some(old) = old {
            if let Some(uid) = uid_of(old)
                && self.by_uid.get(uid) == Some(address)
            {
                self.by_uid.remove(uid);
            }
            for owner in owner_uids(old) {
                if let Some(set) = self.dependents.get_mut(owner) {
                    set.remove(address);
                    if set.is_empty() {
                        self.dependents.remove(owner);
                    }
                }
            }
            self.foreground.remove(address);
        }
        if let Some(new) = new {
            if let Some(uid) = uid_of(new) {
                self.by_uid.insert(uid.to_string(), address.clone());
            }
            for owner in owner_uids(new) {
                self.dependents
                    .entry(owner.to_string())
                    .or_default()
                    .insert(address.clone());
            }
            if waits_in_foreground(new) {
                self.foreground.insert(address.clone());
            }
        }
    }

    /// Where the object with this uid is stored.
    pub fn address_of(&self, uid: &str) -> Option<&Address> {
        self.by_uid.get(uid)
    }

    /// Objects naming `owner_uid` in an owner reference.
    pub fn dependents_of(&self, owner_uid: &str) -> Vec<Address> {
        self.dependents
            .get(owner_uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether any object names `owner_uid` in an owner reference.
    pub fn has_dependents(&self, owner_uid: &str) -> bool {
        self.dependents.contains_key(owner_uid)
    }

    /// Objects being deleted that wait for their dependents.
    pub fn foreground_waiting(&self) -> Vec<Address> {
        self.foreground.iter().cloned().collect()
    }

    /// Empties every index.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}
