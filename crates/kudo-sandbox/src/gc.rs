//! Deletion side effects: garbage collection of dependents through
//! ownerReferences, foreground and orphan propagation, CRD removal and
//! namespace termination. Runs under the state lock as part of a commit.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::objects::{self, finalizers, is_deleting, meta_mut, now_rfc3339};
use crate::registry::ResourceInfo;
use crate::state::{FOREGROUND_FINALIZER, Propagation, State};

/// A removed object with its group and plural.
type Removed = (String, String, Arc<Value>);

impl State {
    pub(crate) fn has_live_dependents(&self, owner_uid: &str) -> bool {
        self.store.has_dependents(owner_uid)
    }

    /// Follow-up of a delete that left the object in place with a deletionTimestamp.
    pub(crate) fn after_delete_marked(
        &mut self,
        res: &ResourceInfo,
        obj: &Arc<Value>,
        propagation: Propagation,
    ) {
        let uid = objects::uid(obj).to_string();
        if res.group.is_empty() && res.plural == "namespaces" {
            let ns = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            self.empty_namespace(&ns);
            return;
        }
        match propagation {
            Propagation::Foreground => {
                let dependents = self.dependents_of(&uid);
                for (g, p, ns, name) in dependents {
                    self.delete_internal(&g, &p, &ns, &name);
                }
                self.release_foreground_owners();
            }
            Propagation::Orphan => self.orphan_dependents(&uid),
            Propagation::Background => {}
        }
    }

    fn dependents_of(&self, owner_uid: &str) -> Vec<(String, String, String, String)> {
        self.store.dependents_of(owner_uid)
    }

    pub(crate) fn orphan_dependents(&mut self, owner_uid: &str) {
        for (g, p, ns, name) in self.dependents_of(owner_uid) {
            if let Some(s) = self.store.get(&g, &p, &ns, &name) {
                let mut v = (*s.value).clone();
                let owners = s.owners.clone();
                if let Some(refs) = v["metadata"]
                    .get_mut("ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r["uid"].as_str() != Some(owner_uid));
                    if refs.is_empty()
                        && let Some(m) = v["metadata"].as_object_mut()
                    {
                        m.remove("ownerReferences");
                    }
                }
                self.store.put(&g, &p, v, owners);
            }
        }
    }

    /// Deletes an object on behalf of the server (garbage collector, namespace
    /// controller): marks it if it has finalizers, removes it otherwise.
    pub(crate) fn delete_internal(&mut self, group: &str, plural: &str, ns: &str, name: &str) {
        let Some(s) = self.store.get(group, plural, ns, name) else {
            return;
        };
        let obj = s.value.clone();
        if let Some(Some(terminating)) = crate::kubelet::pod_delete(self, group, plural, &obj, None)
        {
            let owners = s.owners.clone();
            if terminating != *obj {
                self.store.put(group, plural, terminating, owners);
            }
            return;
        }
        if !finalizers(&obj).is_empty() {
            if !is_deleting(&obj) {
                let owners = s.owners.clone();
                self.store
                    .put(group, plural, mark_deleting(&obj, false, false), owners);
            }
            return;
        }
        if let Some(removed) = self.store.remove(group, plural, ns, name) {
            self.cascade(vec![(group.to_string(), plural.to_string(), removed)]);
        }
    }

    /// Removes an object at once, with the consequences of a removal (the
    /// kubelet confirming a pod's end, pod GC of a gone node's pods).
    pub(crate) fn remove_now(&mut self, group: &str, plural: &str, ns: &str, name: &str) {
        if let Some(r) = self.store.remove(group, plural, ns, name) {
            self.cascade(vec![(group.to_string(), plural.to_string(), r)]);
        }
    }

    /// Drops one finalizer on behalf of the server (the PVC protection
    /// controller); an object being deleted goes once none is left.
    pub(crate) fn remove_finalizer(
        &mut self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        finalizer: &str,
    ) {
        let Some(s) = self.store.get(group, plural, ns, name) else {
            return;
        };
        let all = finalizers(&s.value);
        if !all.iter().any(|f| f == finalizer) {
            return;
        }
        let rest: Vec<String> = all.into_iter().filter(|f| f != finalizer).collect();
        if is_deleting(&s.value) && rest.is_empty() {
            if let Some(r) = self.store.remove(group, plural, ns, name) {
                self.cascade(vec![(group.to_string(), plural.to_string(), r)]);
            }
            return;
        }
        let mut v = (*s.value).clone();
        let owners = s.owners.clone();
        v["metadata"]["finalizers"] = json!(rest);
        self.store.put(group, plural, v, owners);
    }

    /// Consequences of removals: CRD instances, garbage collection of
    /// dependents, foreground owners, terminating namespaces.
    pub(crate) fn cascade(&mut self, mut removed: Vec<Removed>) {
        while let Some((group, plural, obj)) = removed.pop() {
            if group == "apiextensions.k8s.io"
                && plural == "customresourcedefinitions"
                && let Ok(info) = crate::registry::crd_resource(&obj)
            {
                let names: Vec<(String, String)> = self
                    .store
                    .list(&info.group, &info.plural, None)
                    .map(|s| crate::store::ns_name(&s.value))
                    .collect();
                for (ns, name) in names {
                    if let Some(r) = self.store.remove(&info.group, &info.plural, &ns, &name) {
                        removed.push((info.group.clone(), info.plural.clone(), r));
                    }
                }
                self.registry.unregister(&info.group, &info.plural);
            }
            let uid = objects::uid(&obj).to_string();
            for (g, p, ns, name) in self.dependents_of(&uid) {
                let Some(dep) = self.store.get(&g, &p, &ns, &name) else {
                    continue;
                };
                let dep_value = dep.value.clone();
                let any_owner_alive = owner_uids(&dep_value).iter().any(|u| self.uid_exists(u));
                if any_owner_alive {
                    continue;
                }
                self.gc_delete(&g, &p, &ns, &name, &dep_value, &mut removed);
            }
            self.release_foreground_owners_into(&mut removed);
            let ns = obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if !ns.is_empty() {
                self.finish_namespace_if_empty(&ns, &mut removed);
            }
        }
    }

    fn gc_delete(
        &mut self,
        g: &str,
        p: &str,
        ns: &str,
        name: &str,
        value: &Value,
        removed: &mut Vec<Removed>,
    ) {
        if let Some(Some(terminating)) = crate::kubelet::pod_delete(self, g, p, value, None) {
            if terminating != *value {
                let owners = self
                    .store
                    .get(g, p, ns, name)
                    .map(|s| s.owners.clone())
                    .unwrap_or_default();
                self.store.put(g, p, terminating, owners);
            }
            return;
        }
        if !finalizers(value).is_empty() {
            if !is_deleting(value) {
                let owners = self
                    .store
                    .get(g, p, ns, name)
                    .map(|s| s.owners.clone())
                    .unwrap_or_default();
                self.store
                    .put(g, p, mark_deleting(value, false, false), owners);
            }
        } else if let Some(r) = self.store.remove(g, p, ns, name) {
            removed.push((g.to_string(), p.to_string(), r));
        }
    }

    /// The garbage collector's look at owner references a write added: a
    /// dependent whose owners are all gone is deleted (background), and
    /// references to gone owners are dropped while another owner lives. A
    /// real API server does this asynchronously; here it follows the write.
    pub(crate) fn collect_if_owners_gone(
        &mut self,
        group: &str,
        plural: &str,
        written: &Value,
        before: Option<&Value>,
    ) {
        let refs: Vec<Value> = written["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let known = before.map(owner_uids).unwrap_or_default();
        if refs.iter().all(|r| {
            r["uid"]
                .as_str()
                .is_some_and(|u| known.iter().any(|k| k == u))
        }) {
            return;
        }
        let (ns, name) = crate::store::ns_name(written);
        let gone: Vec<&str> = refs
            .iter()
            .filter(|r| self.owner_gone(r, &ns))
            .filter_map(|r| r["uid"].as_str())
            .collect();
        if gone.is_empty() {
            return;
        }
        if gone.len() == refs.len() {
            let mut removed = Vec::new();
            self.gc_delete(group, plural, &ns, &name, written, &mut removed);
            self.cascade(removed);
            return;
        }
        let mut v = written.clone();
        if let Some(list) = v["metadata"]
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            list.retain(|r| !r["uid"].as_str().is_some_and(|u| gone.contains(&u)));
        }
        let owners = self
            .store
            .get(group, plural, &ns, &name)
            .map(|s| s.owners.clone())
            .unwrap_or_default();
        self.store.put(group, plural, v, owners);
    }

    /// Whether an owner reference names an object that does not exist (by
    /// uid). A kind the server does not know is left alone, as the real
    /// collector keeps retrying it; a namespaced owner of a cluster-scoped
    /// dependent can never exist.
    fn owner_gone(&self, owner_ref: &Value, dependent_ns: &str) -> bool {
        let api_version = owner_ref["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let kind = owner_ref["kind"].as_str().unwrap_or_default();
        let Some(info) = self.registry.by_kind(group, kind) else {
            return false;
        };
        if info.namespaced && dependent_ns.is_empty() {
            return true;
        }
        let scope = if info.namespaced { dependent_ns } else { "" };
        let name = owner_ref["name"].as_str().unwrap_or_default();
        self.store
            .get(&info.group, &info.plural, scope, name)
            .is_none_or(|s| Some(objects::uid(&s.value)) != owner_ref["uid"].as_str())
    }

    fn uid_exists(&self, uid: &str) -> bool {
        self.store.address_of(uid).is_some()
    }

    fn release_foreground_owners(&mut self) {
        let mut removed = Vec::new();
        self.release_foreground_owners_into(&mut removed);
        self.cascade(removed);
    }

    /// Owners waiting in foreground deletion whose dependents are all gone
    /// lose the foregroundDeletion finalizer.
    fn release_foreground_owners_into(&mut self, removed: &mut Vec<Removed>) {
        let waiting: Vec<Removed> = self
            .store
            .foreground_waiting()
            .into_iter()
            .filter_map(|(g, p, ns, name)| {
                let value = self.store.get(&g, &p, &ns, &name)?.value.clone();
                Some((g, p, value))
            })
            .collect();
        for (g, p, owner) in waiting {
            if self.has_live_dependents(objects::uid(&owner)) {
                continue;
            }
            let (ns, name) = crate::store::ns_name(&owner);
            let mut v = (*owner).clone();
            let rest: Vec<String> = finalizers(&v)
                .into_iter()
                .filter(|f| f != FOREGROUND_FINALIZER)
                .collect();
            if rest.is_empty() {
                if let Some(r) = self.store.remove(&g, &p, &ns, &name) {
                    removed.push((g, p, r));
                }
            } else {
                v["metadata"]["finalizers"] = json!(rest);
                let owners = self
                    .store
                    .get(&g, &p, &ns, &name)
                    .map(|s| s.owners.clone())
                    .unwrap_or_default();
                self.store.put(&g, &p, v, owners);
            }
        }
    }

    /// Deletes everything in a terminating namespace.
    fn empty_namespace(&mut self, ns: &str) {
        let contents: Vec<(String, String, String)> = self
            .store
            .iter_all()
            .filter(|(_, _, s)| s.value["metadata"]["namespace"].as_str() == Some(ns))
            .map(|(g, p, s)| {
                (
                    g.to_string(),
                    p.to_string(),
                    crate::store::ns_name(&s.value).1,
                )
            })
            .collect();
        for (g, p, name) in contents {
            self.delete_internal(&g, &p, ns, &name);
        }
        let mut removed = Vec::new();
        self.finish_namespace_if_empty(ns, &mut removed);
        self.cascade(removed);
    }

    fn finish_namespace_if_empty(&mut self, ns: &str, removed: &mut Vec<Removed>) {
        let terminating = self
            .store
            .get("", "namespaces", "", ns)
            .is_some_and(|s| is_deleting(&s.value) && finalizers(&s.value).is_empty());
        if terminating
            && !self.store.namespace_has_objects(ns)
            && let Some(r) = self.store.remove("", "namespaces", "", ns)
        {
            removed.push((String::new(), "namespaces".to_string(), r));
        }
    }
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn mark_deleting(obj: &Value, foreground: bool, namespace: bool) -> Value {
    let mut v = obj.clone();
    if !is_deleting(&v) {
        let generation = v["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        let meta = meta_mut(&mut v);
        meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        meta.insert("generation".into(), json!(generation));
    }
    if foreground {
        let mut fins = finalizers(&v);
        if !fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
            fins.push(FOREGROUND_FINALIZER.to_string());
            v["metadata"]["finalizers"] = json!(fins);
        }
    }
    if namespace {
        v["status"] = json!({"phase": "Terminating"});
    }
    v
}
