//! Write planning and committing: every write is planned against a snapshot
//! (so admission webhooks can see it without holding the lock), then
//! committed if the object has not changed meanwhile.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::objects::{self, finalizers, is_deleting, meta_mut, now_rfc3339};
use crate::patch::{self, PatchKind};
use crate::registry::{Registry, ResourceInfo};
use crate::ssa::{self, Scope};
use crate::status::{ApiError, Subject};
use crate::store::{Owners, Store, object_rv};

/// Finalizer the API server uses for foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The registry and the store, guarded together by one lock.
#[derive(Debug)]
pub struct State {
    /// Served resources.
    pub registry: Registry,
    /// Objects.
    pub store: Store,
}

/// The admission operation of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A change to an existing object.
    Update,
    /// A delete request.
    Delete,
}

impl Operation {
    /// The AdmissionReview operation name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// Owner goes first, dependents are collected afterwards.
    #[default]
    Background,
    /// Dependents go first; the owner waits with the foregroundDeletion finalizer.
    Foreground,
    /// Dependents lose their owner reference and stay.
    Orphan,
}

impl Propagation {
    /// Parses `propagationPolicy`.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(ApiError::bad_request(format!(
                "invalid propagationPolicy {other:?}: must be Background, Foreground or Orphan"
            ))),
        }
    }
}

/// Preconditions and policy of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// Dependent handling.
    pub propagation: Propagation,
    /// Required uid.
    pub uid: Option<String>,
    /// Required resourceVersion.
    pub resource_version: Option<String>,
}

/// A write computed against the current state, waiting for admission and commit.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Admission operation.
    pub op: Operation,
    /// Resource written.
    pub res: ResourceInfo,
    /// Version the client used.
    pub version: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// Subresource written, if any.
    pub subresource: Option<String>,
    /// The object when planned (None for creates).
    pub old: Option<Arc<Value>>,
    /// The object to store; None removes it now.
    pub new: Option<Value>,
    /// Field ownership to store.
    pub owners: Owners,
    /// Delete policy.
    pub propagation: Propagation,
}

/// Why a commit did not happen.
#[derive(Debug)]
pub enum CommitError {
    /// The object changed since planning; plan again.
    Stale,
    /// The write is refused.
    Api(ApiError),
}

impl From<ApiError> for CommitError {
    fn from(e: ApiError) -> Self {
        CommitError::Api(e)
    }
}

fn subject<'a>(res: &'a ResourceInfo, name: &'a str) -> Subject<'a> {
    Subject {
        group: &res.group,
        plural: &res.plural,
        name,
    }
}

fn scope_for(res: &ResourceInfo, status_only: bool) -> Scope {
    if status_only {
        Scope::Status
    } else if res.status {
        Scope::MainWithoutStatus
    } else {
        Scope::Main
    }
}

/// Parses a request body that may be JSON or YAML.
pub fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        ApiError::bad_request(format!("the request body is neither JSON nor YAML: {e}"))
    })
}

impl State {
    /// A fresh state with the built-in resources and the default namespaces.
    pub fn new(event_log_capacity: usize) -> Self {
        let mut state = Self {
            registry: Registry::builtin(),
            store: Store::new(event_log_capacity),
        };
        state.ensure_default_namespaces();
        state
    }

    /// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` if missing.
    pub fn ensure_default_namespaces(&mut self) {
        let Some(res) = self.registry.find("", "v1", "namespaces").cloned() else {
            return;
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if self.store.get("", "namespaces", "", ns).is_none()
                && let Ok(obj) =
                    objects::prepare_create(&res, "v1", "", json!({"metadata": {"name": ns}}))
            {
                self.store.put("", "namespaces", obj, Owners::new());
            }
        }
    }

    /// Re-registers every stored CRD (after restoring a snapshot).
    pub fn register_stored_crds(&mut self) {
        let crds: Vec<Arc<Value>> = self
            .store
            .list("apiextensions.k8s.io", "customresourcedefinitions", None)
            .map(|s| s.value.clone())
            .collect();
        for crd in crds {
            if let Err(e) = self.registry.register_crd(&crd) {
                tracing::warn!(error = %e, "stored CRD could not be registered");
            }
        }
    }

    fn existing(
        &self,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<(Arc<Value>, Owners), ApiError> {
        self.store
            .get(&res.group, &res.plural, ns, name)
            .map(|s| (s.value.clone(), s.owners.clone()))
            .ok_or_else(|| ApiError::not_found(subject(res, name)))
    }

    fn check_namespace_open(&self, res: &ResourceInfo, ns: &str) -> Result<(), ApiError> {
        if !res.namespaced {
            return Ok(());
        }
        match self.store.get("", "namespaces", "", ns) {
            None => Err(ApiError::not_found(Subject {
                group: "",
                plural: "namespaces",
                name: ns,
            })),
            Some(s) if is_deleting(&s.value) => Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                res.plural,
                s.value["metadata"]["name"].as_str().unwrap_or(ns)
            ))),
            Some(_) => Ok(()),
        }
    }

    /// Plans a POST.
    pub fn plan_create(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        body: Value,
    ) -> Result<Planned, ApiError> {
        self.check_namespace_open(res, ns)?;
        let obj = objects::prepare_create(res, version, ns, body)?;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if self.store.get(&res.group, &res.plural, ns, &name).is_some() {
            return Err(ApiError::already_exists(subject(res, &name)));
        }
        Ok(Planned {
            op: Operation::Create,
            res: res.clone(),
            version: version.to_string(),
            namespace: ns.to_string(),
            name,
            subresource: None,
            old: None,
            new: Some(obj),
            owners: Owners::new(),
            propagation: Propagation::Background,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn planned_update(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        name: &str,
        status_only: bool,
        old: Arc<Value>,
        new: Value,
        owners: Owners,
    ) -> Result<Planned, ApiError> {
        let new = objects::prepare_update(res, version, &old, new, status_only)?;
        let remove_now = is_deleting(&new) && finalizers(&new).is_empty();
        Ok(Planned {
            op: Operation::Update,
            res: res.clone(),
            version: version.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            subresource: status_only.then(|| "status".to_string()),
            old: Some(old),
            new: if remove_now { None } else { Some(new) },
            owners,
            propagation: Propagation::Background,
        })
    }

    /// Plans a PUT of a full object.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_replace(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        name: &str,
        status_only: bool,
        body: Value,
        manager: &str,
    ) -> Result<Planned, ApiError> {
        let (old, mut owners) = self.existing(res, ns, name)?;
        let scope = scope_for(res, status_only);
        ssa::track_update(&old, &body, manager, scope, &mut owners);
        self.planned_update(res, version, ns, name, status_only, old, body, owners)
    }

    /// Plans a PATCH of any kind, including server-side apply (which may create).
    #[allow(clippy::too_many_arguments)]
    pub fn plan_patch(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        name: &str,
        status_only: bool,
        kind: PatchKind,
        patch_body: &[u8],
        manager: Option<&str>,
        force: bool,
    ) -> Result<Planned, ApiError> {
        let scope = scope_for(res, status_only);
        if kind == PatchKind::Apply {
            let manager = manager.filter(|m| !m.is_empty()).ok_or_else(|| {
                ApiError::invalid(
                    "PatchOptions",
                    "meta.k8s.io",
                    "",
                    "fieldManager",
                    "Required value: is required for apply patch",
                )
            })?;
            let config = parse_body(patch_body)?;
            if !config.is_object() {
                return Err(ApiError::bad_request(
                    "the applied configuration must be an object",
                ));
            }
            return match self.store.get(&res.group, &res.plural, ns, name) {
                None => {
                    if status_only {
                        return Err(ApiError::not_found(subject(res, name)));
                    }
                    let mut owners = Owners::new();
                    let mut obj = ssa::apply(None, &config, manager, force, scope, &mut owners)
                        .map_err(|c| conflict_error(res, name, &c))?;
                    let meta = meta_mut(&mut obj);
                    meta.insert("name".into(), json!(name));
                    let mut planned = self.plan_create(res, version, ns, obj)?;
                    planned.owners = owners;
                    Ok(planned)
                }
                Some(stored) => {
                    let old = stored.value.clone();
                    let mut owners = stored.owners.clone();
                    let new = ssa::apply(Some(&old), &config, manager, force, scope, &mut owners)
                        .map_err(|c| conflict_error(res, name, &c))?;
                    self.planned_update(res, version, ns, name, status_only, old, new, owners)
                }
            };
        }
        let (old, mut owners) = self.existing(res, ns, name)?;
        let mut new = (*old).clone();
        match kind {
            PatchKind::Merge => patch::merge(&mut new, &parse_body(patch_body)?),
            PatchKind::Json => patch::json(&mut new, &parse_body(patch_body)?)?,
            PatchKind::Strategic => {
                if res.from_crd {
                    return Err(ApiError::unsupported_media_type(
                        "application/strategic-merge-patch+json (not supported for custom resources)",
                    ));
                }
                patch::strategic(&mut new, &parse_body(patch_body)?)?;
            }
            PatchKind::Apply => {}
        }
        // A patch that does not name a resourceVersion must not fail on it.
        if new["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"] {
            // the patch set one explicitly: keep it as a precondition
        } else if let Some(m) = new["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        ssa::track_update(&old, &new, manager.unwrap_or("unknown"), scope, &mut owners);
        self.planned_update(res, version, ns, name, status_only, old, new, owners)
    }

    /// Plans a DELETE.
    pub fn plan_delete(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Planned, ApiError> {
        let (old, owners) = self.existing(res, ns, name)?;
        if let Some(uid) = &opts.uid
            && uid != objects::uid(&old)
        {
            return Err(ApiError::conflict(
                subject(res, name),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    objects::uid(&old)
                ),
            ));
        }
        if let Some(rv) = &opts.resource_version
            && rv.parse::<u64>().ok() != Some(object_rv(&old))
        {
            return Err(ApiError::conflict(
                subject(res, name),
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    object_rv(&old)
                ),
            ));
        }
        let is_namespace = res.group.is_empty() && res.plural == "namespaces";
        let wait_for_dependents = opts.propagation == Propagation::Foreground
            && self.has_live_dependents(objects::uid(&old));
        let new = if is_namespace
            || !finalizers(&old).is_empty()
            || wait_for_dependents
            || is_deleting(&old)
        {
            Some(mark_deleting(&old, wait_for_dependents, is_namespace))
        } else {
            None
        };
        Ok(Planned {
            op: Operation::Delete,
            res: res.clone(),
            version: version.to_string(),
            namespace: ns.to_string(),
            name: name.to_string(),
            subresource: None,
            old: Some(old),
            new,
            owners,
            propagation: opts.propagation,
        })
    }

    /// Commits a planned write. Returns the object as stored (for a removal,
    /// its last state).
    pub fn commit(&mut self, p: Planned, dry_run: bool) -> Result<Value, CommitError> {
        let (group, plural) = (p.res.group.clone(), p.res.plural.clone());
        let current = self
            .store
            .get(&group, &plural, &p.namespace, &p.name)
            .map(|s| s.value.clone());
        match (&p.old, &current) {
            (None, Some(_)) => {
                return Err(ApiError::already_exists(subject(&p.res, &p.name)).into());
            }
            (Some(o), Some(c)) if object_rv(o) != object_rv(c) => return Err(CommitError::Stale),
            (Some(_), None) => return Err(CommitError::Stale),
            _ => {}
        }
        if p.op == Operation::Create {
            self.check_namespace_open(&p.res, &p.namespace)?;
        }
        if dry_run {
            return Ok(p
                .new
                .or_else(|| p.old.map(|o| (*o).clone()))
                .unwrap_or(Value::Null));
        }
        let is_crd = group == "apiextensions.k8s.io" && plural == "customresourcedefinitions";
        let result = match p.new {
            Some(new) => {
                if is_crd {
                    self.registry.register_crd(&new).map_err(|e| {
                        ApiError::invalid("CustomResourceDefinition", &group, &p.name, "spec", &e)
                    })?;
                }
                let stored = self.store.put(&group, &plural, new, p.owners);
                let value = (*stored).clone();
                if p.op == Operation::Delete {
                    self.after_delete_marked(&p.res, &stored, p.propagation);
                }
                value
            }
            None => {
                let removed = self.store.remove(&group, &plural, &p.namespace, &p.name);
                let value = removed
                    .as_ref()
                    .map(|r| (**r).clone())
                    .unwrap_or(Value::Null);
                if let Some(r) = removed {
                    if p.propagation == Propagation::Orphan {
                        self.orphan_dependents(objects::uid(&r));
                    }
                    self.cascade(vec![(group, plural, r)]);
                }
                value
            }
        };
        Ok(result)
    }

    fn has_live_dependents(&self, owner_uid: &str) -> bool {
        self.store
            .iter_all()
            .any(|(_, _, s)| owner_uids(&s.value).iter().any(|u| u == owner_uid))
    }

    /// Follow-up of a delete that left the object in place with a deletionTimestamp.
    fn after_delete_marked(
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
        self.store
            .iter_all()
            .filter(|(_, _, s)| owner_uids(&s.value).iter().any(|u| u == owner_uid))
            .map(|(g, p, s)| {
                let (ns, name) = crate::store::ns_name(&s.value);
                (g.to_string(), p.to_string(), ns, name)
            })
            .collect()
    }

    fn orphan_dependents(&mut self, owner_uid: &str) {
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
    fn delete_internal(&mut self, group: &str, plural: &str, ns: &str, name: &str) {
        let Some(s) = self.store.get(group, plural, ns, name) else {
            return;
        };
        let obj = s.value.clone();
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

    /// Consequences of removals: CRD instances, garbage collection of
    /// dependents, foreground owners, terminating namespaces.
    fn cascade(&mut self, mut removed: Vec<(String, String, Arc<Value>)>) {
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
        removed: &mut Vec<(String, String, Arc<Value>)>,
    ) {
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

    fn uid_exists(&self, uid: &str) -> bool {
        self.store
            .iter_all()
            .any(|(_, _, s)| objects::uid(&s.value) == uid)
    }

    fn release_foreground_owners(&mut self) {
        let mut removed = Vec::new();
        self.release_foreground_owners_into(&mut removed);
        self.cascade(removed);
    }

    /// Owners waiting in foreground deletion whose dependents are all gone
    /// lose the foregroundDeletion finalizer.
    fn release_foreground_owners_into(&mut self, removed: &mut Vec<(String, String, Arc<Value>)>) {
        let waiting: Vec<(String, String, Arc<Value>)> = self
            .store
            .iter_all()
            .filter(|(_, _, s)| {
                is_deleting(&s.value)
                    && finalizers(&s.value)
                        .iter()
                        .any(|f| f == FOREGROUND_FINALIZER)
            })
            .map(|(g, p, s)| (g.to_string(), p.to_string(), s.value.clone()))
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

    fn finish_namespace_if_empty(
        &mut self,
        ns: &str,
        removed: &mut Vec<(String, String, Arc<Value>)>,
    ) {
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

fn mark_deleting(obj: &Value, foreground: bool, namespace: bool) -> Value {
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

fn conflict_error(res: &ResourceInfo, name: &str, conflicts: &[ssa::Conflict]) -> ApiError {
    let lines: Vec<String> = conflicts
        .iter()
        .map(|c| format!("conflict with \"{}\": {}", c.manager, c.field))
        .collect();
    let plural_s = if conflicts.len() == 1 { "" } else { "s" };
    let mut e = ApiError::conflict(
        subject(res, name),
        &format!(
            "Apply failed with {} conflict{plural_s}: {}",
            conflicts.len(),
            lines.join("\n")
        ),
    );
    if let Some(d) = e.details.as_mut() {
        d["causes"] = json!(conflicts
            .iter()
            .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{}\"", c.manager), "field": c.field}))
            .collect::<Vec<_>>());
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        State::new(1000)
    }

    fn res(s: &State, g: &str, v: &str, p: &str) -> ResourceInfo {
        s.registry.find(g, v, p).cloned().unwrap()
    }

    fn create(s: &mut State, r: &ResourceInfo, ns: &str, body: Value) -> Value {
        let p = s.plan_create(r, r.preferred_version(), ns, body).unwrap();
        s.commit(p, false).unwrap()
    }

    #[test]
    fn finalizers_hold_deletion_until_removed() {
        let mut s = state();
        let cm = res(&s, "", "v1", "configmaps");
        create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "c", "finalizers": ["x/y"]}}),
        );
        let p = s
            .plan_delete(&cm, "v1", "default", "c", &DeleteOptions::default())
            .unwrap();
        let marked = s.commit(p, false).unwrap();
        assert!(is_deleting(&marked));
        let p = s
            .plan_patch(
                &cm,
                "v1",
                "default",
                "c",
                false,
                PatchKind::Merge,
                br#"{"metadata":{"finalizers":null}}"#,
                None,
                false,
            )
            .unwrap();
        s.commit(p, false).unwrap();
        assert!(s.store.get("", "configmaps", "default", "c").is_none());
    }

    #[test]
    fn background_deletion_collects_dependents() {
        let mut s = state();
        let cm = res(&s, "", "v1", "configmaps");
        let owner = create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "owner"}}),
        );
        let uid = objects::uid(&owner).to_string();
        create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "dep", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
        );
        let p = s
            .plan_delete(&cm, "v1", "default", "owner", &DeleteOptions::default())
            .unwrap();
        s.commit(p, false).unwrap();
        assert!(s.store.get("", "configmaps", "default", "dep").is_none());
    }

    #[test]
    fn orphan_deletion_keeps_dependents_without_owner_reference() {
        let mut s = state();
        let cm = res(&s, "", "v1", "configmaps");
        let owner = create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "owner"}}),
        );
        let uid = objects::uid(&owner).to_string();
        create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "dep", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
        );
        let opts = DeleteOptions {
            propagation: Propagation::Orphan,
            ..Default::default()
        };
        let p = s.plan_delete(&cm, "v1", "default", "owner", &opts).unwrap();
        s.commit(p, false).unwrap();
        let dep = s.store.get("", "configmaps", "default", "dep").unwrap();
        assert!(dep.value["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn foreground_deletion_waits_for_dependents_with_finalizers() {
        let mut s = state();
        let cm = res(&s, "", "v1", "configmaps");
        let owner = create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "owner"}}),
        );
        let uid = objects::uid(&owner).to_string();
        create(
            &mut s,
            &cm,
            "default",
            json!({"metadata": {"name": "dep", "finalizers": ["hold"], "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
        );
        let opts = DeleteOptions {
            propagation: Propagation::Foreground,
            ..Default::default()
        };
        let p = s.plan_delete(&cm, "v1", "default", "owner", &opts).unwrap();
        let marked = s.commit(p, false).unwrap();
        assert!(finalizers(&marked).contains(&FOREGROUND_FINALIZER.to_string()));
        assert!(s.store.get("", "configmaps", "default", "owner").is_some());
        let p = s
            .plan_patch(
                &cm,
                "v1",
                "default",
                "dep",
                false,
                PatchKind::Merge,
                br#"{"metadata":{"finalizers":[]}}"#,
                None,
                false,
            )
            .unwrap();
        s.commit(p, false).unwrap();
        assert!(s.store.get("", "configmaps", "default", "dep").is_none());
        assert!(s.store.get("", "configmaps", "default", "owner").is_none());
    }

    #[test]
    fn namespace_deletion_removes_contents_then_namespace() {
        let mut s = state();
        let nsr = res(&s, "", "v1", "namespaces");
        let cm = res(&s, "", "v1", "configmaps");
        create(&mut s, &nsr, "", json!({"metadata": {"name": "team"}}));
        create(&mut s, &cm, "team", json!({"metadata": {"name": "c"}}));
        let p = s
            .plan_delete(&nsr, "v1", "", "team", &DeleteOptions::default())
            .unwrap();
        s.commit(p, false).unwrap();
        assert!(s.store.get("", "configmaps", "team", "c").is_none());
        assert!(s.store.get("", "namespaces", "", "team").is_none());
    }

    #[test]
    fn creating_in_a_missing_namespace_is_not_found() {
        let s = state();
        let cm = res(&s, "", "v1", "configmaps");
        let err = s
            .plan_create(&cm, "v1", "nope", json!({"metadata": {"name": "c"}}))
            .unwrap_err();
        assert_eq!(err.code, 404);
        assert!(err.message.contains("namespaces \"nope\""));
    }

    #[test]
    fn stale_plan_is_not_committed() {
        let mut s = state();
        let cm = res(&s, "", "v1", "configmaps");
        create(&mut s, &cm, "default", json!({"metadata": {"name": "c"}}));
        let p1 = s
            .plan_patch(
                &cm,
                "v1",
                "default",
                "c",
                false,
                PatchKind::Merge,
                br#"{"data":{"a":"1"}}"#,
                None,
                false,
            )
            .unwrap();
        let p2 = s
            .plan_patch(
                &cm,
                "v1",
                "default",
                "c",
                false,
                PatchKind::Merge,
                br#"{"data":{"b":"1"}}"#,
                None,
                false,
            )
            .unwrap();
        s.commit(p1, false).unwrap();
        assert!(matches!(s.commit(p2, false), Err(CommitError::Stale)));
    }

    #[test]
    fn crd_creation_registers_and_deletion_removes_instances() {
        let mut s = state();
        let crd_res = res(
            &s,
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
        );
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let created = create(&mut s, &crd_res, "", crd);
        assert_eq!(created["status"]["conditions"][1]["type"], "Established");
        let w = res(&s, "example.com", "v1", "widgets");
        create(
            &mut s,
            &w,
            "default",
            json!({"metadata": {"name": "w"}, "spec": {"size": 1}}),
        );
        let p = s
            .plan_delete(
                &crd_res,
                "v1",
                "",
                "widgets.example.com",
                &DeleteOptions::default(),
            )
            .unwrap();
        s.commit(p, false).unwrap();
        assert!(s.registry.find("example.com", "v1", "widgets").is_none());
        assert!(
            s.store
                .get("example.com", "widgets", "default", "w")
                .is_none()
        );
    }
}
