//! Write planning and committing: every write is planned against a snapshot
//! (so admission webhooks can see it without holding the lock), then
//! committed if the object has not changed meanwhile.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::gc::mark_deleting;
use crate::objects::{self, finalizers, is_deleting, meta_mut};
use crate::patch::{self, PatchKind};
use crate::registry::{Registry, ResourceInfo};
use crate::ssa::{self, Scope};
use crate::status::{ApiError, Subject};
use crate::store::{Owners, Store, object_rv};

mod conflict;
mod crds;
mod planned;
mod size;
mod unchanged;

use conflict::conflict_error;
pub use planned::{CommitError, DeleteOptions, Operation, Planned, Propagation};

/// Finalizer the API server uses for foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The registry and the store, guarded together by one lock.
#[derive(Debug)]
pub struct State {
    /// Served resources.
    pub registry: Registry,
    /// Objects.
    pub store: Store,
    /// Whether the simulated kubelet runs (and so ends) controllers' pods.
    pub kubelet: bool,
    /// Whether a new CRD starts not Established (its kind unserved) until
    /// the establishing task marks it, instead of at once.
    pub establish_crds_later: bool,
    /// RBAC rules resolved per caller, for impersonated requests.
    pub rbac_rules: crate::authz::RuleCache,
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
            kubelet: false,
            establish_crds_later: false,
            rbac_rules: crate::authz::RuleCache::default(),
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

    fn mirror_core_event(&mut self, ev: &Value) {
        let Some(core) = self.registry.find("", "v1", "events").cloned() else {
            return;
        };
        let (ns, name) = crate::store::ns_name(ev);
        if self.store.get("", "events", &ns, &name).is_some() {
            return;
        }
        if let Ok(obj) =
            objects::prepare_create(&core, "v1", &ns, crate::defaults::core_event_from(ev))
        {
            self.store.put("", "events", obj, Owners::new());
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

    /// Plans a POST by `manager`, who owns every field it sets.
    pub fn plan_create(
        &self,
        res: &ResourceInfo,
        version: &str,
        ns: &str,
        body: Value,
        manager: &str,
    ) -> Result<Planned, ApiError> {
        let mut planned = self.planned_create(res, version, ns, body)?;
        if let Some(obj) = &planned.new {
            planned.owners = ssa::track_create(obj, manager, scope_for(res, false));
        }
        Ok(planned)
    }

    fn planned_create(
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
        mut owners: Owners,
        updater: Option<&str>,
    ) -> Result<Planned, ApiError> {
        let new = objects::prepare_update(res, version, &old, new, status_only)?;
        // Tracked on the object as it will be stored, so fields the server
        // defaults back to their old value do not change hands.
        if let Some(manager) = updater {
            ssa::track_update(
                &old,
                &new,
                manager,
                scope_for(res, status_only),
                &mut owners,
            );
        }
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
        let (old, owners) = self.existing(res, ns, name)?;
        self.planned_update(
            res,
            version,
            ns,
            name,
            status_only,
            old,
            body,
            owners,
            Some(manager),
        )
    }

    /// Plans a PATCH of any kind, including server-side apply (which may
    /// create). `manager` is required for apply; other patches without one
    /// are tracked as "unknown".
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
                    let mut planned = self.planned_create(res, version, ns, obj)?;
                    planned.owners = owners;
                    Ok(planned)
                }
                Some(stored) => {
                    let old = stored.value.clone();
                    let mut owners = stored.owners.clone();
                    let new = ssa::apply(Some(&old), &config, manager, force, scope, &mut owners)
                        .map_err(|c| conflict_error(res, name, &c))?;
                    self.planned_update(res, version, ns, name, status_only, old, new, owners, None)
                }
            };
        }
        let (old, owners) = self.existing(res, ns, name)?;
        let mut new = (*old).clone();
        match kind {
            PatchKind::Merge => patch::merge_owned(&mut new, parse_body(patch_body)?),
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
        let manager = manager.unwrap_or("unknown");
        self.planned_update(
            res,
            version,
            ns,
            name,
            status_only,
            old,
            new,
            owners,
            Some(manager),
        )
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
        let marked = is_namespace
            || !finalizers(&old).is_empty()
            || wait_for_dependents
            || is_deleting(&old);
        let new =
            crate::kubelet::pod_delete(self, &res.group, &res.plural, &old, opts.grace_period)
                .unwrap_or_else(|| {
                    marked.then(|| mark_deleting(&old, wait_for_dependents, is_namespace))
                });
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
    /// its last state). Tests only: the server also needs the ownership.
    #[cfg(test)]
    pub fn commit(&mut self, p: Planned, dry_run: bool) -> Result<Value, CommitError> {
        self.commit_owned(p, dry_run).map(|(v, _)| v)
    }

    /// [`State::commit`], with the field ownership the object has afterwards.
    pub fn commit_owned(
        &mut self,
        p: Planned,
        dry_run: bool,
    ) -> Result<(Value, Owners), CommitError> {
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
        if let Some(unchanged) = self.unchanged_by(&p) {
            // Like kube-apiserver: a write that changes nothing is not stored,
            // so neither resourceVersion nor watchers see it. A repeated
            // delete still gets its (idempotent) follow-ups.
            if p.op == Operation::Delete && !dry_run {
                self.after_delete_marked(&p.res, &Arc::new(unchanged.clone()), p.propagation);
            }
            return Ok((unchanged, p.owners));
        }
        if dry_run {
            let value = p.new.or_else(|| p.old.map(|o| (*o).clone()));
            return Ok((value.unwrap_or(Value::Null), p.owners));
        }
        let owners = p.owners.clone();
        let is_crd = group == "apiextensions.k8s.io" && plural == "customresourcedefinitions";
        let result = match p.new {
            Some(mut new) => {
                if is_crd {
                    self.register_crd_write(&p.name, p.old.is_none(), &mut new)?;
                }
                size::check_stored_size(&new)?;
                let stored = self.store.put(&group, &plural, new, p.owners);
                if p.op == Operation::Create && group == "events.k8s.io" {
                    self.mirror_core_event(&stored);
                }
                let value = (*stored).clone();
                if p.op == Operation::Delete {
                    self.after_delete_marked(&p.res, &stored, p.propagation);
                } else {
                    self.collect_if_owners_gone(&group, &plural, &stored, p.old.as_deref());
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
        Ok((result, owners))
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "state_gc_tests.rs"]
mod gc_tests;

#[cfg(test)]
#[path = "state_managed_tests.rs"]
mod managed_tests;
