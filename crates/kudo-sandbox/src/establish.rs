//! CRDs that become Established some time after they are created, as on a
//! real API server: its naming controller accepts the names first
//! (`NamesAccepted` True, `Established` False with reason `Installing`),
//! and its establishing controller sets `Established` a moment later. Until
//! then the kind is in no discovery document and its paths answer 404,
//! which is what a client meets before the new kind is served. Off by
//! default ([`crate::SandboxBuilder::crd_establish_delay`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::objects::now_rfc3339;
use crate::registry::crd_resource;
use crate::server::Inner;
use crate::store::EventKind;

const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";

/// Sets a CRD's `Established` condition to False, reason `Installing`.
pub fn mark_installing(crd: &mut Value) {
    set_established(
        crd,
        "False",
        "Installing",
        "the initial names have been accepted",
    );
}

/// Whether a CRD's `Established` condition is True.
pub fn is_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

fn set_established(crd: &mut Value, status: &str, reason: &str, message: &str) {
    let condition = json!({"type": "Established", "status": status, "reason": reason,
        "message": message, "lastTransitionTime": now_rfc3339()});
    let conditions = &mut crd["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        list.retain(|c| c["type"] != "Established");
        list.push(condition);
    }
}

/// Whether the kind `crd` defines waits to be served.
fn establishing(inner: &Inner, crd: &Value) -> bool {
    crd_resource(crd).is_ok_and(|info| {
        inner
            .lock()
            .registry
            .is_establishing(&info.group, &info.plural)
    })
}

/// After `delay`, marks the CRD `name` Established and serves its kind
/// (unless it was deleted or changed to another kind meanwhile).
fn schedule(
    inner: &Arc<Inner>,
    pending: &Arc<Mutex<HashSet<String>>>,
    name: String,
    delay: Duration,
) {
    if !pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.clone())
    {
        return;
    }
    let inner = inner.clone();
    let pending = pending.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&name);
        let mut st = inner.lock();
        let Some(stored) = st.store.get(GROUP, PLURAL, "", &name) else {
            return;
        };
        let Ok(info) = crd_resource(&stored.value) else {
            return;
        };
        if !st.registry.is_establishing(&info.group, &info.plural) {
            return;
        }
        let mut crd = (*stored.value).clone();
        let owners = stored.owners.clone();
        set_established(
            &mut crd,
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        );
        st.registry
            .set_establishing(&info.group, &info.plural, false);
        st.store.put(GROUP, PLURAL, crd, owners);
        drop(st);
        inner.dirty.notify_one();
    });
}

/// Establishes new CRDs `delay` after they were stored, until shutdown.
pub async fn run(inner: Arc<Inner>, delay: Duration) {
    let pending: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut shutdown = inner.shutdown.clone();
    let mut rx = inner.lock().store.subscribe();
    loop {
        let waiting: Vec<String> = {
            let st = inner.lock();
            st.store
                .list(GROUP, PLURAL, None)
                .filter(|s| {
                    crd_resource(&s.value)
                        .is_ok_and(|i| st.registry.is_establishing(&i.group, &i.plural))
                })
                .map(|s| crate::store::ns_name(&s.value).1)
                .collect()
        };
        for name in waiting {
            schedule(&inner, &pending, name, delay);
        }
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                c = rx.recv() => match c {
                    Ok(c) => {
                        if c.kind != EventKind::Deleted && c.group == GROUP && c.plural == PLURAL
                            && establishing(&inner, &c.object)
                        {
                            schedule(&inner, &pending, crate::store::ns_name(&c.object).1, delay);
                        }
                    }
                    // Missed changes: look at every CRD again.
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }
}
