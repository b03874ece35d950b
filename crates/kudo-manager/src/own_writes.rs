//! Object versions this manager wrote itself (Instances' status, applied
//! objects), so their watch events do not trigger reconciles.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

/// Object versions this manager wrote itself, so that the watch event each
/// write produces does not trigger another reconcile: the write's response
/// already told the reconcile that made it everything that event carries.
/// Keyed by `(uid, resourceVersion)`; an entry goes when its event arrives.
#[derive(Debug, Default)]
pub struct OwnWrites {
    /// Versions by object uid.
    versions: Mutex<HashMap<String, Vec<String>>>,
    /// Objects (by uid) with a write under way: the API server may send the
    /// write's watch event before its response has been recorded.
    in_flight: Mutex<HashMap<String, Arc<Notify>>>,
}

/// A write under way (see [`OwnWrites::start`]); dropping it wakes the
/// events that wait for it.
#[derive(Debug)]
pub struct WriteUnderWay<'a> {
    owner: &'a OwnWrites,
    uid: Option<String>,
}

impl Drop for WriteUnderWay<'_> {
    fn drop(&mut self) {
        let Some(uid) = self.uid.take() else {
            return;
        };
        let notify = self
            .owner
            .in_flight
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&uid));
        if let Some(notify) = notify {
            notify.notify_waiters();
        }
    }
}

/// Versions kept per object at most: their events normally take them away
/// at once, but one a relist skipped never comes. Forgetting one only
/// costs an extra reconcile.
const OWN_WRITES_PER_OBJECT: usize = 8;

impl OwnWrites {
    /// Remember that this manager wrote `uid` at `resource_version`.
    pub fn record(&self, uid: Option<&str>, resource_version: Option<&str>) {
        let (Some(uid), Some(rv)) = (uid, resource_version) else {
            return;
        };
        if let Ok(mut versions) = self.versions.lock() {
            let of_object = versions.entry(uid.to_string()).or_default();
            if of_object.len() >= OWN_WRITES_PER_OBJECT {
                of_object.remove(0);
            }
            of_object.push(rv.to_string());
        }
    }

    /// Marks a write to `uid` as under way until the returned guard drops;
    /// record the written version before dropping it.
    pub fn start(&self, uid: Option<&str>) -> WriteUnderWay<'_> {
        let uid = uid.map(str::to_string);
        if let (Some(uid), Ok(mut m)) = (&uid, self.in_flight.lock()) {
            m.insert(uid.clone(), Arc::new(Notify::new()));
        }
        WriteUnderWay { owner: self, uid }
    }

    /// Like [`OwnWrites::is_own`], but an event for an object with a write
    /// under way waits (at most `wait`) for that write's response first, so
    /// an event that overtook the response is still recognised as our own.
    /// Another version (an outside change) is not ours either way.
    pub async fn is_own_after_writes(
        &self,
        uid: Option<&str>,
        resource_version: Option<&str>,
        wait: Duration,
    ) -> bool {
        if self.is_own(uid, resource_version) {
            return true;
        }
        let notify = uid.and_then(|u| self.in_flight.lock().ok()?.get(u).cloned());
        let Some(notify) = notify else {
            return false;
        };
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        // The write may have finished between the two looks.
        let still_under_way = uid.is_some_and(|u| {
            self.in_flight
                .lock()
                .is_ok_and(|m| m.get(u).is_some_and(|n| Arc::ptr_eq(n, &notify)))
        });
        if still_under_way {
            let _ = tokio::time::timeout(wait, notified).await;
        }
        self.is_own(uid, resource_version)
    }

    /// Whether a watched object is exactly a version this manager wrote
    /// (each recorded version matches once).
    pub fn is_own(&self, uid: Option<&str>, resource_version: Option<&str>) -> bool {
        let (Some(uid), Some(rv)) = (uid, resource_version) else {
            return false;
        };
        let Ok(mut versions) = self.versions.lock() else {
            return false;
        };
        let Some(of_object) = versions.get_mut(uid) else {
            return false;
        };
        let Some(at) = of_object.iter().position(|v| v == rv) else {
            return false;
        };
        of_object.remove(at);
        if of_object.is_empty() {
            versions.remove(uid);
        }
        true
    }
}

#[cfg(test)]
#[path = "own_writes_tests.rs"]
mod tests;
