//! CRDs that become Established some time after they are created, as on a
//! real API server: a CRD is stored with no accepted names and no
//! conditions, and until its naming and establishing controllers have run
//! the kind is in no discovery document and its paths answer 404 (a CRD
//! with neither `NamesAccepted` nor `Established` is not served). Then
//! `NamesAccepted` and `Established` turn True, and the kind is served. Off
//! by default ([`crate::SandboxBuilder::crd_establish_delay`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::objects::now_rfc3339;
use crate::registry::{ResourceInfo, crd_resource};
use crate::server::Inner;
use crate::store::EventKind;

const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";

/// A new CRD as the API server stores it, before its controllers ran.
pub fn mark_new(crd: &mut Value) {
    if let Some(status) = crd.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("conditions");
        status.insert("acceptedNames".into(), json!({"plural": "", "kind": ""}));
    }
}

/// Whether a CRD's `Established` condition is True.
pub fn is_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

/// Accepts the CRD's names and marks it Established.
fn establish(crd: &mut Value, info: &ResourceInfo) {
    let now = now_rfc3339();
    let mut accepted = crd["spec"]["names"].clone();
    if accepted.get("singular").is_none() {
        accepted["singular"] = json!(info.singular);
    }
    if accepted.get("listKind").is_none() {
        accepted["listKind"] = json!(format!("{}List", info.kind));
    }
    crd["status"]["acceptedNames"] = accepted;
    crd["status"]["conditions"] = json!([
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
         "message": "no conflicts found", "lastTransitionTime": now},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": now},
    ]);
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
        establish(&mut crd, &info);
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
