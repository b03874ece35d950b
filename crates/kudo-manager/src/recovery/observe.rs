//! Drift observed from the controller's metadata watches of owned objects:
//! the cached metadata (with managed fields) is compared with the book, and
//! only a suspect is read live (the cache may lag behind our own applies),
//! so an Instance without drift costs no API request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::Resource;
use kube::api::{Api, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kudo_api::{AppliedObject, Instance};
use kudo_engine::recovery::Drift;
use kudo_engine::recovery_fields::judge;

use super::RenderBook;
use crate::context::Context;

/// Cached metadata of one kind.
pub trait MetaLookup: Send + Sync {
    /// Whether the cache has listed everything once.
    fn synced(&self) -> bool;
    /// The object's metadata, `None` when it is not in the cache.
    fn get(&self, namespace: Option<&str>, name: &str) -> Option<ObjectMeta>;
    /// The object's resourceVersion, `None` when it is not in the cache.
    fn resource_version(&self, namespace: Option<&str>, name: &str) -> Option<String>;
}

/// A reflector store of one kind's metadata and whether it has synced.
pub struct TypedLookup<K: Resource<DynamicType = ()> + 'static> {
    store: Store<PartialObjectMeta<K>>,
    synced: Arc<AtomicBool>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> TypedLookup<K> {
    /// Wraps a store; `synced` turns true on its watch's first `InitDone`.
    pub fn new(store: Store<PartialObjectMeta<K>>, synced: Arc<AtomicBool>) -> Self {
        Self { store, synced }
    }
}

impl<K> MetaLookup for TypedLookup<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    fn get(&self, namespace: Option<&str>, name: &str) -> Option<ObjectMeta> {
        self.store.get(&key(namespace, name)).map(|o| {
            let mut meta = o.metadata.clone();
            expand_managed_fields(&mut meta);
            meta
        })
    }

    fn resource_version(&self, namespace: Option<&str>, name: &str) -> Option<String> {
        self.store
            .get(&key(namespace, name))?
            .metadata
            .resource_version
            .clone()
    }
}

/// The store key of one object of kind `K`.
fn key<K: Resource<DynamicType = ()>>(
    namespace: Option<&str>,
    name: &str,
) -> ObjectRef<PartialObjectMeta<K>> {
    let r = ObjectRef::new(name);
    match namespace {
        Some(ns) => r.within(ns),
        None => r,
    }
}

/// Bytes of kudo-manager's field set (as JSON) the cache keeps of one
/// object; a larger one is left out, and the object is read live when its
/// drift is judged.
pub const MAX_KEPT_FIELD_SET: usize = 128 << 10;

/// Instance owner references the cache keeps of one object (one is usual).
pub const MAX_KEPT_OWNERS: usize = 8;

/// What the cache of an owned kind keeps of an object: what the drift
/// judgment (kudo-manager's own managed fields, the resourceVersion) and
/// the owner mapping (Instance owner references, the labels naming the
/// Instance) read. Anyone who may label an object `heritage=kudo` can fill
/// the rest, annotations, other labels and owners, other managers' field
/// sets, with megabytes; and anyone may write under the manager name
/// `kudo-manager`, so its field set is kept only up to
/// [`MAX_KEPT_FIELD_SET`], and Instance owners up to [`MAX_KEPT_OWNERS`].
pub fn keep_what_drift_needs(meta: &mut ObjectMeta) {
    use kudo_api::names::{
        HERITAGE_LABEL, INSTANCE_LABEL, INSTANCE_NAMESPACE_LABEL, OPERATOR_LABEL,
    };
    meta.annotations = None;
    if let Some(labels) = meta.labels.as_mut() {
        labels.retain(|k, _| {
            [
                HERITAGE_LABEL,
                INSTANCE_LABEL,
                INSTANCE_NAMESPACE_LABEL,
                OPERATOR_LABEL,
            ]
            .contains(&k.as_str())
        });
    }
    if let Some(owners) = meta.owner_references.as_mut() {
        owners.retain(kudo_engine::ownership::children::is_instance_owner);
        // The controller first (there is one at most), so padding cannot
        // push the real owner out.
        owners.sort_by_key(|o| o.controller != Some(true));
        owners.truncate(MAX_KEPT_OWNERS);
    }
    if let Some(entries) = meta.managed_fields.as_mut() {
        entries.retain(kudo_engine::recovery_fields::is_ours);
    }
    compact_managed_fields(meta);
    if let Some(entries) = meta.managed_fields.as_mut() {
        // Compacted: each field set is one string now.
        entries.retain(|e| {
            e.fields_v1
                .as_ref()
                .and_then(|f| f.0.as_str())
                .is_none_or(|text| text.len() <= MAX_KEPT_FIELD_SET)
        });
    }
}

/// Keeps each managed-fields set as one JSON string rather than a tree (a
/// tenth of the memory for a Deployment), since it is read only when an
/// Instance's drift is judged; [`TypedLookup::get`] gives it back as the
/// API sent it.
pub fn compact_managed_fields(meta: &mut ObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        if let Some(fields) = entry.fields_v1.as_mut()
            && !fields.0.is_string()
        {
            fields.0 = serde_json::Value::String(fields.0.to_string());
        }
    }
}

/// Undoes [`compact_managed_fields`]. A field set is always a JSON object,
/// so a string is one this cache compacted.
fn expand_managed_fields(meta: &mut ObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        if let Some(fields) = entry.fields_v1.as_mut()
            && let serde_json::Value::String(text) = &fields.0
        {
            fields.0 = serde_json::from_str(text).unwrap_or_default();
        }
    }
}

/// The kinds whose drift is observed, with their caches.
#[derive(Default, Clone)]
pub struct Observers {
    kinds: Vec<(String, String, Arc<dyn MetaLookup>)>,
}

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<_> = self
            .kinds
            .iter()
            .map(|(g, k, _)| format!("{k}.{g}"))
            .collect();
        f.debug_struct("Observers").field("kinds", &kinds).finish()
    }
}

impl Observers {
    /// Adds the cache of a kind of API group `group` ("" for core).
    pub fn add(&mut self, group: &str, kind: &str, lookup: Arc<dyn MetaLookup>) {
        self.kinds
            .push((group.to_string(), kind.to_string(), lookup));
    }

    /// The resourceVersion the synced cache of its kind holds for
    /// `object`; `None` for kinds without a cache and before it synced.
    pub fn resource_version(&self, object: &AppliedObject) -> Option<String> {
        let cache = self.of(object).filter(|c| c.synced())?;
        cache.resource_version(object.namespace.as_deref(), &object.name)
    }

    fn of(&self, object: &AppliedObject) -> Option<&dyn MetaLookup> {
        let group = kudo_package::render::api_group(&object.api_version);
        self.kinds
            .iter()
            .find(|(g, k, _)| g == group && *k == object.kind)
            .map(|(_, _, l)| l.as_ref())
    }
}

/// What one look at an Instance's objects found.
#[derive(Debug, Default)]
pub struct Observation {
    /// The objects that drifted.
    pub drift: Vec<Drift>,
    /// Some objects could not be judged yet (a cache still listing): look
    /// again soon, no watch event may come for them.
    pub incomplete: bool,
    /// Every object judged from its cache alone, none suspect, at these
    /// resourceVersions; `None` when any needed more (a live read, a cache
    /// not synced yet) or the book could not be read.
    pub judged: Option<super::clean::Versions>,
}

/// The objects of the book that drifted. Kinds without a cache are not
/// judged; those whose cache has not synced yet are judged later. Drift is
/// reported only while the Instance still exists and is not being deleted,
/// read live: the garbage collector deletes a removed Instance's objects,
/// which a stale cached copy would take for drift and recreate.
pub(crate) async fn drift(ctx: &Context, inst: &Instance, book: &RenderBook) -> Observation {
    let mut seen = suspects(ctx, book).await;
    if !seen.drift.is_empty() && !still_there(ctx, inst).await {
        seen.drift.clear();
    }
    seen
}

/// Whether the Instance (same uid) exists and is not being deleted.
async fn still_there(ctx: &Context, inst: &Instance) -> bool {
    let ns = inst.metadata.namespace.as_deref().unwrap_or("default");
    let name = inst.metadata.name.as_deref().unwrap_or_default();
    match Api::<Instance>::namespaced(ctx.client.clone(), ns)
        .get_metadata_opt(name)
        .await
    {
        Ok(Some(live)) => {
            live.metadata.uid == inst.metadata.uid && live.metadata.deletion_timestamp.is_none()
        }
        Ok(None) => false,
        Err(e) => {
            tracing::debug!(error = %e, "drift: the Instance could not be read; no recovery now");
            false
        }
    }
}

async fn suspects(ctx: &Context, book: &RenderBook) -> Observation {
    let mut out = Observation::default();
    let mut judged = (!book.is_unavailable()).then(Vec::new);
    for entry in book.entries() {
        let Some(cache) = ctx.observers.of(&entry.object) else {
            continue;
        };
        if !cache.synced() {
            out.incomplete = true;
            judged = None;
            continue;
        }
        let o = &entry.object;
        let cached = cache.get(o.namespace.as_deref(), &o.name);
        if judge(o, &entry.fields, cached.as_ref()).is_none() {
            let version = cached.and_then(|m| m.resource_version);
            judged = judged.zip(version).map(|(mut all, v)| {
                all.push((o.clone(), v));
                all
            });
            continue;
        }
        judged = None;
        match live_metadata(ctx, o).await {
            Ok(live) => out.drift.extend(judge(o, &entry.fields, live.as_ref())),
            Err(e) => {
                out.incomplete = true;
                tracing::debug!(error = %e, object = %o.name, "drift: live read failed");
            }
        }
    }
    out.judged = judged;
    out
}

async fn live_metadata(ctx: &Context, o: &AppliedObject) -> Result<Option<ObjectMeta>, String> {
    let resolved = match ctx.api.resolve(&o.api_version, &o.kind).await {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    resolved
        .api(&ctx.client, o.namespace.as_deref())
        .get_metadata_opt(&o.name)
        .await
        .map(|m| m.map(|m| m.metadata))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    use serde_json::json;

    use super::*;

    #[test]
    fn compacted_field_sets_come_back_as_the_api_sent_them() {
        let fields = json!({"f:data": {"f:greeting": {}}, "f:metadata": {"f:labels": {"f:a": {}}}});
        let original = ObjectMeta {
            managed_fields: Some(vec![
                ManagedFieldsEntry {
                    manager: Some("kudo-manager".into()),
                    fields_v1: Some(FieldsV1(fields.clone())),
                    ..ManagedFieldsEntry::default()
                },
                ManagedFieldsEntry {
                    manager: Some("kubectl-edit".into()),
                    ..ManagedFieldsEntry::default()
                },
            ]),
            ..ObjectMeta::default()
        };
        let mut meta = original.clone();
        compact_managed_fields(&mut meta);
        let kept = meta.managed_fields.as_ref().unwrap()[0]
            .fields_v1
            .as_ref()
            .unwrap();
        assert!(kept.0.is_string(), "{kept:?}");
        compact_managed_fields(&mut meta);
        expand_managed_fields(&mut meta);
        assert_eq!(meta, original);
    }

    #[test]
    fn the_owned_cache_keeps_only_what_drift_and_the_owner_mapping_read() {
        let ours = ManagedFieldsEntry {
            manager: Some("kudo-manager".into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(json!({"f:data": {"f:a": {}}}))),
            ..ManagedFieldsEntry::default()
        };
        let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            name: "app".into(),
            kind: "Instance".into(),
            api_version: "kudo.dev/v1beta1".into(),
            ..Default::default()
        };
        let mut owners = vec![owner.clone()];
        owners.extend((0..1000).map(|i| {
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                name: format!("pad-{i}"),
                kind: "ConfigMap".into(),
                api_version: "v1".into(),
                ..Default::default()
            }
        }));
        let mut labels: std::collections::BTreeMap<String, String> = [
            ("heritage".to_string(), "kudo".to_string()),
            ("kudo.dev/instance".to_string(), "app".to_string()),
            ("padding".to_string(), "y".repeat(63)),
        ]
        .into();
        labels.extend((0..1000).map(|i| (format!("kudo.dev/pad-{i}"), "y".repeat(63))));
        let mut meta = ObjectMeta {
            name: Some("c".into()),
            resource_version: Some("9".into()),
            owner_references: Some(owners),
            annotations: Some([("big".to_string(), "x".repeat(100_000))].into()),
            labels: Some(labels),
            managed_fields: Some(vec![
                ours.clone(),
                ManagedFieldsEntry {
                    manager: Some("kubectl-edit".into()),
                    fields_v1: Some(FieldsV1(json!({"f:data": {"f:b": {}}}))),
                    ..ManagedFieldsEntry::default()
                },
            ]),
            ..ObjectMeta::default()
        };
        keep_what_drift_needs(&mut meta);
        expand_managed_fields(&mut meta);
        assert_eq!(meta.annotations, None);
        assert_eq!(
            meta.labels.unwrap().keys().collect::<Vec<_>>(),
            ["heritage", "kudo.dev/instance"]
        );
        assert_eq!(meta.managed_fields, Some(vec![ours]));
        assert_eq!(meta.owner_references, Some(vec![owner]));
        assert_eq!(meta.resource_version.as_deref(), Some("9"));
    }

    #[test]
    fn a_huge_field_set_under_the_managers_name_and_many_instance_owners_are_not_kept() {
        let fields: serde_json::Map<String, serde_json::Value> = (0..20_000)
            .map(|i| (format!("f:key-{i:05}"), json!({})))
            .collect();
        let forged = ManagedFieldsEntry {
            manager: Some("kudo-manager".into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(json!({ "f:data": fields }))),
            ..ManagedFieldsEntry::default()
        };
        let owners = (0..1000)
            .map(
                |i| k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    name: format!("app-{i}"),
                    kind: "Instance".into(),
                    api_version: "kudo.dev/v1beta1".into(),
                    // The real owner comes last, behind the padding.
                    controller: Some(i == 999),
                    ..Default::default()
                },
            )
            .collect();
        let mut meta = ObjectMeta {
            name: Some("c".into()),
            owner_references: Some(owners),
            managed_fields: Some(vec![forged]),
            ..ObjectMeta::default()
        };
        keep_what_drift_needs(&mut meta);
        assert_eq!(meta.managed_fields, Some(vec![]));
        let owners = meta.owner_references.unwrap();
        assert_eq!(owners.len(), MAX_KEPT_OWNERS);
        assert_eq!(owners[0].name, "app-999");
    }
}
