//! What the simulated pod controllers share: [`Pass`], one batch of work
//! under the state lock, with object creation as a controller does it,
//! scheduling (`scheduler`), the kubelet's start (`kubelet`), the taint
//! manager, pod GC for deleted nodes and PVC protection. The StatefulSet,
//! Deployment/ReplicaSet and disruption controllers live in their own
//! modules; `controllers` runs them all. Off with
//! [`crate::SandboxBuilder::simulate_pods`].
//!
//! The writes go straight to the store (no admission webhooks, no
//! managedFields owner), like a controller's that tests never see.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::kubelet;
use crate::objects::{self, finalizers, is_deleting};
use crate::scheduler::{self, Scheduler};
use crate::state::State;
use crate::store::{Owners, ns_name};
use crate::workloads::failing;

/// Finalizer of claims the StatefulSet controller creates: a claim in use
/// stays (Terminating) until no scheduled pod mounts it.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";

/// The `controller: true` owner reference: (kind, name, uid).
pub fn controller_of(obj: &Value) -> Option<(&str, &str, &str)> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == json!(true))
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default(),
                r["name"].as_str().unwrap_or_default(),
                r["uid"].as_str().unwrap_or_default(),
            )
        })
}

/// `ownerReferences` naming an apps/v1 object as controller.
pub fn controller_ref(kind: &str, owner: &Value) -> Value {
    json!([{"apiVersion": "apps/v1", "kind": kind, "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}])
}

/// Whether `obj`'s controller is the object with `uid`.
pub fn controlled_by(obj: &Value, uid: &str) -> bool {
    controller_of(obj).is_some_and(|(_, _, u)| u == uid)
}

/// Pods the simulated kubelet runs: those of StatefulSets and ReplicaSets.
/// Pods clients create themselves stay as written (tests set their status).
pub fn managed(pod: &Value) -> bool {
    matches!(
        controller_of(pod),
        Some(("StatefulSet" | "ReplicaSet", _, _))
    )
}

/// Claim names the pod's volumes mount.
pub fn claim_names(pod: &Value) -> Vec<String> {
    pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
        .map(str::to_string)
        .collect()
}

/// Whether the namespace exists and is not terminating.
fn namespace_open(st: &State, ns: &str) -> bool {
    st.store
        .get("", "namespaces", "", ns)
        .is_some_and(|n| !is_deleting(&n.value))
}

/// One batch of work under the state lock.
pub struct Pass<'a> {
    /// The locked state.
    pub st: &'a mut State,
    sched: Option<Option<Scheduler>>,
    timers: Vec<Timer>,
}

/// Something the kubelet does `ready_delay` after it is asked to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// Start the pod (namespace, name, uid).
    Start(String, String, String),
    /// End the terminating pod (namespace, name, uid).
    Stop(String, String, String),
}

impl<'a> Pass<'a> {
    /// A batch over the locked state.
    pub fn new(st: &'a mut State) -> Self {
        Self {
            st,
            sched: None,
            timers: Vec::new(),
        }
    }

    /// What the kubelet is to do after its delay.
    pub fn into_timers(self) -> Vec<Timer> {
        self.timers
    }

    /// The scheduler, built once per batch; None without Node objects.
    fn scheduler(&mut self) -> Option<&mut Scheduler> {
        if self.sched.is_none() {
            self.sched = Some(Scheduler::from_state(self.st));
        }
        self.sched.as_mut().and_then(Option::as_mut)
    }

    /// Binds the pod to a node, or records why it cannot be. Returns whether
    /// the pod changed; false without nodes.
    fn bind(&mut self, pod: &mut Value) -> bool {
        let Some(sched) = self.scheduler() else {
            return false;
        };
        match sched.choose(pod) {
            Ok(node) => {
                pod["spec"]["nodeName"] = json!(node);
                scheduler::set_condition(pod, scheduler::scheduled_condition(None));
                true
            }
            Err(message) => {
                scheduler::set_condition(pod, scheduler::scheduled_condition(Some(&message)))
            }
        }
    }

    /// Creates an object as a controller would (metadata filled in; a pod
    /// is scheduled at once). None if the namespace is closed or the name taken.
    pub fn create(&mut self, plural: &str, ns: &str, obj: Value) -> Option<Arc<Value>> {
        let group = if plural == "replicasets" { "apps" } else { "" };
        if !namespace_open(self.st, ns) {
            return None;
        }
        let res = self.st.registry.find(group, "v1", plural)?.clone();
        let status = obj.get("status").cloned();
        let mut obj = objects::prepare_create(&res, "v1", ns, obj).ok()?;
        if let Some(status) = status {
            obj["status"] = status;
        }
        let (_, name) = ns_name(&obj);
        if self.st.store.get(group, plural, ns, &name).is_some() {
            return None;
        }
        if plural == "pods" {
            self.bind(&mut obj);
        }
        Some(self.st.store.put(group, plural, obj, Owners::new()))
    }

    /// Updates an object's main resource (generation bumped on a spec change).
    pub fn update(&mut self, group: &str, plural: &str, old: &Arc<Value>, new: Value) {
        let Some(res) = self.st.registry.find(group, "v1", plural).cloned() else {
            return;
        };
        let (ns, name) = ns_name(old);
        let owners = self
            .st
            .store
            .get(group, plural, &ns, &name)
            .map(|s| s.owners.clone())
            .unwrap_or_default();
        match objects::prepare_update(&res, "v1", old, new, false) {
            Ok(v) if v != **old => {
                self.st.store.put(group, plural, v, owners);
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "simulated controller update refused"),
        }
    }

    /// Replaces an object's status.
    pub fn put_status(&mut self, group: &str, plural: &str, obj: &Value, status: Value) {
        let (ns, name) = ns_name(obj);
        let Some(s) = self.st.store.get(group, plural, &ns, &name) else {
            return;
        };
        let owners = s.owners.clone();
        let mut v = (*s.value).clone();
        v["status"] = status;
        self.st.store.put(group, plural, v, owners);
    }

    /// Whether a pod of `owner` should be Ready: not when the owner or the
    /// pod (from its template) carries the fail annotation.
    pub fn should_be_ready(owner: &Value, pod: &Value) -> bool {
        !failing(owner) && !failing(pod)
    }

    /// Brings the readiness of a Running pod in line with its owner.
    pub fn sync_readiness(&mut self, owner: &Value, pod: &Value) {
        if let Some(status) = kubelet::with_readiness(pod, Self::should_be_ready(owner, pod)) {
            self.put_status("", "pods", pod, status);
        }
    }

    /// A pod that got here by an event: schedule it, or queue its start.
    pub(crate) fn check_pod(&mut self, ns: &str, name: &str) {
        let Some(s) = self.st.store.get("", "pods", ns, name) else {
            return;
        };
        let (pod, owners) = (s.value.clone(), s.owners.clone());
        let uid = objects::uid(&pod).to_string();
        if is_deleting(&pod) {
            if crate::kubelet::pod_delete(self.st, "", "pods", &pod, None).is_some() {
                self.timers.push(Timer::Stop(ns.into(), name.into(), uid));
            }
            return;
        }
        if pod["status"]["phase"] != "Pending" {
            return;
        }
        let unbound = pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
        let default_scheduler = pod["spec"]["schedulerName"]
            .as_str()
            .is_none_or(|s| s.is_empty() || s == "default-scheduler");
        if unbound && default_scheduler {
            let mut v = (*pod).clone();
            if self.bind(&mut v) {
                self.st.store.put("", "pods", v, owners);
                return;
            }
            if self.scheduler().is_some() {
                return;
            }
        }
        if managed(&pod) {
            self.timers.push(Timer::Start(ns.into(), name.into(), uid));
        }
    }

    /// The kubelet has stopped a terminating pod's containers: it goes.
    pub(crate) fn stop_pod(&mut self, ns: &str, name: &str, uid: &str) {
        let ending = self.st.store.get("", "pods", ns, name).is_some_and(|p| {
            objects::uid(&p.value) == uid
                && is_deleting(&p.value)
                && finalizers(&p.value).is_empty()
        });
        if ending {
            self.st.remove_now("", "pods", ns, name);
        }
    }

    /// The kubelet starts a scheduled pod `ready_delay` after it was created.
    pub(crate) fn start_pod(&mut self, ns: &str, name: &str, uid: &str) {
        let Some(s) = self.st.store.get("", "pods", ns, name) else {
            return;
        };
        let pod = s.value.clone();
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let runnable = !node.is_empty() || self.scheduler().is_none();
        if objects::uid(&pod) != uid
            || pod["status"]["phase"] != "Pending"
            || is_deleting(&pod)
            || !runnable
        {
            return;
        }
        let owner = controller_of(&pod).and_then(|(kind, owner, _)| {
            let plural = match kind {
                "StatefulSet" => "statefulsets",
                _ => "replicasets",
            };
            self.st
                .store
                .get("apps", plural, ns, owner)
                .map(|s| s.value.clone())
        });
        let ready = owner
            .as_ref()
            .is_none_or(|o| Self::should_be_ready(o, &pod));
        let host_ip = self.st.store.get("", "nodes", "", node).and_then(|n| {
            n.value["status"]["addresses"]
                .as_array()?
                .iter()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str().map(str::to_string))
        });
        let status = kubelet::running_status(&pod, ready, host_ip.as_deref());
        self.put_status("", "pods", &pod, status);
    }

    /// Node changes: the taint manager deletes pods on nodes with NoExecute
    /// taints they do not tolerate; pending pods get another chance.
    pub(crate) fn nodes_changed(&mut self) {
        self.sched = None;
        let nodes: Vec<Arc<Value>> = self
            .st
            .store
            .list("", "nodes", None)
            .map(|n| n.value.clone())
            .collect();
        let mut evict = Vec::new();
        let mut pending = Vec::new();
        for p in self.st.store.list("", "pods", None) {
            let pod = &p.value;
            if is_deleting(pod) {
                continue;
            }
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            if node.is_empty() {
                if pod["status"]["phase"] == "Pending" {
                    pending.push(ns_name(pod));
                }
            } else if let Some(n) = nodes.iter().find(|n| n["metadata"]["name"] == node)
                && scheduler::untolerated_no_execute(n, pod).is_some()
            {
                evict.push(ns_name(pod));
            }
        }
        for (ns, name) in evict {
            self.st.delete_internal("", "pods", &ns, &name);
        }
        for (ns, name) in pending {
            self.check_pod(&ns, &name);
        }
    }

    /// Pod GC: pods bound to a node that no longer exists are deleted.
    pub(crate) fn node_gone(&mut self, node: &str) {
        let orphans: Vec<(String, String)> = self
            .st
            .store
            .list("", "pods", None)
            .filter(|p| p.value["spec"]["nodeName"] == node)
            .map(|p| ns_name(&p.value))
            .collect();
        for (ns, name) in orphans {
            self.st.remove_now("", "pods", &ns, &name);
        }
    }

    /// PVC protection: a deleted claim goes once no scheduled (or, without
    /// nodes, running) pod mounts it.
    pub(crate) fn release_claim(&mut self, ns: &str, claim: &str) {
        let deleting = self
            .st
            .store
            .get("", "persistentvolumeclaims", ns, claim)
            .is_some_and(|c| is_deleting(&c.value));
        if !deleting {
            return;
        }
        let in_use = self.st.store.list("", "pods", Some(ns)).any(|p| {
            let pod = &p.value;
            let placed = pod["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
                || pod["status"]["phase"] == "Running";
            placed && claim_names(pod).iter().any(|c| c == claim)
        });
        if !in_use {
            self.st
                .remove_finalizer("", "persistentvolumeclaims", ns, claim, PVC_PROTECTION);
        }
    }
}
