//! Apply tasks: server-side apply in template order, CRDs waited for (by a
//! requeue, never in the task) until Established, dependencies hash,
//! health, pruning.

use std::collections::BTreeMap;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kudo_api::AppliedObject;
use kudo_api::names::FIELD_MANAGER;
use kudo_engine::{Note, TaskOutcome, TaskResult};
use kudo_package::hash::{ObjectRef, dependency_refs, stamp_dependencies_hash};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::classify::{describe_kube_error, object_label, outcome_for};
use crate::context::Context;
use crate::discovery::Resolved;
use crate::identity::Writer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kudo_engine::health::{self, Health};
use kudo_engine::ownership::{self, Claimant};
use kudo_engine::recovery_fields::our_fields;

use super::PassState;
use super::live_names::{LiveNames, Seen};
use crate::recovery::Changes;

/// Identity of an object as recorded in status.
pub fn object_identity(obj: &Value) -> AppliedObject {
    let s = |path: &[&str]| {
        path.iter()
            .try_fold(obj, |v, k| v.get(*k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    AppliedObject {
        api_version: s(&["apiVersion"]).unwrap_or_default(),
        kind: s(&["kind"]).unwrap_or_default(),
        namespace: s(&["metadata", "namespace"]).filter(|n| !n.is_empty()),
        name: s(&["metadata", "name"]).unwrap_or_default(),
    }
}

fn label(id: &AppliedObject) -> String {
    object_label(&id.kind, id.namespace.as_deref(), &id.name)
}

/// The dynamic API for an object, resolving its kind. A kind a CRD of
/// this very step defines may not be served yet: that is waited for by
/// the caller's requeue, not here.
async fn api_for(
    ctx: &Context,
    client: &kube::Client,
    id: &AppliedObject,
    defined_here: bool,
) -> Result<(Api<DynamicObject>, Resolved), TaskOutcome> {
    match ctx.api.resolve(&id.api_version, &id.kind).await {
        Ok(Some(resolved)) => {
            let api = resolved.api(client, id.namespace.as_deref());
            Ok((api, resolved))
        }
        Ok(None) if defined_here => Err(TaskOutcome::InProgress {
            message: format!(
                "{}: waiting for the API server to serve {} {} (its CRD is in this step)",
                label(id),
                id.api_version,
                id.kind
            ),
        }),
        Ok(None) => Err(TaskOutcome::Fatal {
            message: super::versions::unknown_kind_message(&label(id), &id.api_version, &id.kind),
        }),
        Err(e) => Err(TaskOutcome::Transient {
            message: format!(
                "{}: discovery failed: {}",
                label(id),
                describe_kube_error(&e)
            ),
        }),
    }
}

/// Server-side apply one object; returns the object as the server stored it.
/// The response is read straight into JSON (health reads it from there),
/// and its version is remembered so its watch event triggers nothing.
pub async fn apply_object(
    ctx: &Context,
    writer: &Writer,
    obj: &Value,
) -> Result<Value, TaskOutcome> {
    apply_as::<Value>(ctx, writer, obj, false).await
}

/// What an apply response is read into: at least the stored object's
/// identity, which is remembered so its watch event triggers nothing.
trait StoredObject: DeserializeOwned {
    fn uid(&self) -> Option<&str>;
    fn resource_version(&self) -> Option<&str>;
    /// The fields kudo-manager's apply owns now (`null` if none are listed).
    fn our_fields(&self) -> Value;
}

impl StoredObject for Value {
    fn uid(&self) -> Option<&str> {
        self.get("metadata")?.get("uid")?.as_str()
    }
    fn resource_version(&self) -> Option<&str> {
        self.get("metadata")?.get("resourceVersion")?.as_str()
    }
    fn our_fields(&self) -> Value {
        let entries: Vec<ManagedFieldsEntry> = self
            .pointer("/metadata/managedFields")
            .and_then(|m| Vec::deserialize(m).ok())
            .unwrap_or_default();
        our_fields(&entries).cloned().unwrap_or(Value::Null)
    }
}

/// Only the identity of the stored object; the rest of the response (data
/// of ConfigMaps and Secrets, say) is skipped without being built.
#[derive(Deserialize)]
struct StoredIdentity {
    #[serde(default)]
    metadata: IdentityMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdentityMeta {
    uid: Option<String>,
    resource_version: Option<String>,
    #[serde(default)]
    managed_fields: Vec<ManagedFieldsEntry>,
}

impl StoredObject for StoredIdentity {
    fn uid(&self) -> Option<&str> {
        self.metadata.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
    fn our_fields(&self) -> Value {
        our_fields(&self.metadata.managed_fields)
            .cloned()
            .unwrap_or(Value::Null)
    }
}

async fn apply_as<T: StoredObject>(
    ctx: &Context,
    writer: &Writer,
    obj: &Value,
    defined_here: bool,
) -> Result<T, TaskOutcome> {
    let id = object_identity(obj);
    let (api, _) = api_for(ctx, &writer.client, &id, defined_here).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let request = kube::core::Request::new(api.resource_url())
        .patch(&id.name, &params, &Patch::Apply(obj))
        .map_err(|e| TaskOutcome::Fatal {
            message: format!("{}: cannot build the apply request: {e}", label(&id)),
        })?;
    match writer.client.request::<T>(request).await {
        Ok(stored) => {
            ctx.own_applies
                .record(stored.uid(), stored.resource_version());
            Ok(stored)
        }
        Err(e) => Err(writer.explain(outcome_for(&label(&id), &e), &e)),
    }
}

/// Fetch the ConfigMaps/Secrets that pod templates reference but the task
/// does not render, and stamp the dependencies hash.
async fn stamp_hash(
    ctx: &Context,
    writer: &Writer,
    objects: &mut [Value],
) -> Result<(), TaskOutcome> {
    let refs = dependency_refs(objects);
    let mut live: BTreeMap<ObjectRef, Value> = BTreeMap::new();
    for r in refs {
        let id = AppliedObject {
            api_version: r.api_version(),
            kind: r.kind.clone(),
            namespace: Some(r.namespace.clone()).filter(|n| !n.is_empty()),
            name: r.name.clone(),
        };
        // Read as the Instance's account: the manager needs no Secret access.
        let (api, _) = api_for(ctx, &writer.client, &id, false).await?;
        match api.get_opt(&r.name).await {
            Ok(Some(obj)) => {
                if let Ok(v) = serde_json::to_value(&obj) {
                    live.insert(r, v);
                }
            }
            Ok(None) => {}
            Err(e) => return Err(writer.explain(outcome_for(&label(&id), &e), &e)),
        }
    }
    stamp_dependencies_hash(objects, &live).map_err(|e| TaskOutcome::Transient {
        message: e.to_string(),
    })
}

/// Apply all objects in order, then judge health and prune what the step
/// applied before but no longer renders.
pub(super) async fn run(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    objects: Vec<Value>,
    previously_applied: &[AppliedObject],
    changes: &mut Changes,
    pass: &mut PassState,
) -> TaskResult {
    let mut applied = Vec::with_capacity(objects.len());
    let mut notes = Vec::new();
    let mut objects = match super::versions::objects_to_apply(ctx, objects, &mut notes).await {
        Ok(objects) => objects,
        Err(outcome) => {
            return TaskResult {
                outcome,
                objects: applied,
                notes,
            };
        }
    };
    if let Err(outcome) = stamp_hash(ctx, writer, &mut objects).await {
        return TaskResult {
            outcome,
            objects: applied,
            notes,
        };
    }
    // Kinds defined by CRDs of this task: objects of those kinds wait for
    // their CRD to be Established and served, by a requeue (no watch tells).
    let task_kinds: Vec<(String, String)> = objects.iter().filter_map(crd_kind).collect();
    let mut waiting = Vec::new();
    let mut not_established: Vec<(String, String)> = Vec::new();
    for obj in &objects {
        let id = object_identity(obj);
        let group_kind = (
            kudo_package::render::api_group(&id.api_version).to_string(),
            id.kind.clone(),
        );
        if not_established.contains(&group_kind) {
            pass.recheck_soon = true;
            return TaskResult {
                outcome: TaskOutcome::InProgress {
                    message: format!(
                        "{}: waiting for the CRD of {} to be Established",
                        label(&id),
                        id.kind
                    ),
                },
                objects: applied,
                notes,
            };
        }
        let defined_here = task_kinds.contains(&group_kind);
        // What this step applied before is ours; anything else is checked
        // before a forced apply could take it from its owner.
        if !previously_applied.contains(&id) {
            match check_ownership(
                ctx,
                writer,
                claimant,
                &id,
                obj,
                defined_here,
                Some(&mut pass.live),
            )
            .await
            {
                Ok(ownership::Write::Apply) => {}
                Ok(ownership::Write::UseAsIs(note)) => {
                    notes.push(Note::new("ObjectUsedAsIs", note));
                    continue;
                }
                Ok(ownership::Write::AwaitRemoval(message)) => {
                    pass.recheck_soon = true;
                    return TaskResult {
                        outcome: TaskOutcome::InProgress { message },
                        objects: applied,
                        notes,
                    };
                }
                Err(outcome) => {
                    pass.recheck_soon |= defined_here;
                    return TaskResult {
                        outcome,
                        objects: applied,
                        notes,
                    };
                }
            }
        }
        // Objects healthy once applied need nothing more from the response.
        let applied_now = if health::depends_on_stored_object(obj) {
            apply_as::<Value>(ctx, writer, obj, defined_here)
                .await
                .map(|s| (s.our_fields(), Some(s)))
        } else {
            apply_as::<StoredIdentity>(ctx, writer, obj, defined_here)
                .await
                .map(|s| (s.our_fields(), None))
        };
        if let Ok((fields, _)) = &applied_now {
            changes.applied(id.clone(), obj.clone(), fields.clone());
            if id.namespace.is_none()
                && let Err(outcome) =
                    super::cluster_owned::record_owner(ctx, writer, claimant, &id).await
            {
                return TaskResult {
                    outcome,
                    objects: applied,
                    notes,
                };
            }
        }
        let stored = match applied_now {
            Ok((_, Some(stored))) => stored,
            Ok((_, None)) => {
                applied.push(id);
                continue;
            }
            Err(outcome) => {
                pass.recheck_soon |= defined_here;
                return TaskResult {
                    outcome,
                    objects: applied,
                    notes,
                };
            }
        };
        applied.push(id.clone());
        let evaluated = health::evaluate(&stored);
        if matches!(evaluated, Health::Progressing(_))
            && let Some(defined) = crd_kind(&stored)
        {
            not_established.push(defined);
            pass.recheck_soon = true;
        }
        match TaskOutcome::from(evaluated) {
            TaskOutcome::Done => {}
            TaskOutcome::InProgress { message } => waiting.push(message),
            outcome => {
                return TaskResult {
                    outcome,
                    objects: applied,
                    notes,
                };
            }
        }
    }
    if let Err(outcome) = prune(ctx, writer, claimant, previously_applied, &applied, changes).await
    {
        return TaskResult {
            outcome,
            objects: applied,
            notes,
        };
    }
    let outcome = if waiting.is_empty() {
        TaskOutcome::Done
    } else {
        TaskOutcome::InProgress {
            message: waiting.join("; "),
        }
    };
    TaskResult {
        outcome,
        objects: applied,
        notes,
    }
}

/// The (group, kind) a CRD defines; None for any other object.
fn crd_kind(obj: &Value) -> Option<(String, String)> {
    kudo_package::render::crd_defined_kind(obj)
        .map(|(group, kind, _)| (group.to_string(), kind.to_string()))
}

/// Re-applies one object exactly as a plan last applied it (recovery):
/// the same ownership check as a plan's apply, then a forced apply.
/// Returns the stored object and the fields kudo-manager owns now.
pub(crate) async fn reapply(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    obj: &Value,
) -> Result<(Value, Value), TaskOutcome> {
    let id = object_identity(obj);
    match check_ownership(ctx, writer, claimant, &id, obj, false, None).await? {
        ownership::Write::Apply => {}
        ownership::Write::UseAsIs(message) => return Err(TaskOutcome::Fatal { message }),
        ownership::Write::AwaitRemoval(message) => {
            return Err(TaskOutcome::InProgress { message });
        }
    }
    let stored = apply_as::<Value>(ctx, writer, obj, false).await?;
    if id.namespace.is_none() {
        super::cluster_owned::record_owner(ctx, writer, claimant, &id).await?;
    }
    let fields = stored.our_fields();
    Ok((stored, fields))
}

/// Refuses (FATAL) to apply over an existing object that another owner
/// controls or that kudo-rs did not create, unless adoption was opted into.
/// A namespaced object is looked up in the pass's listing of its kind when
/// one is given (see [`LiveNames`]); any verdict but "apply" is confirmed
/// from the object as it is now.
async fn check_ownership(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    id: &AppliedObject,
    desired: &Value,
    defined_here: bool,
    live: Option<&mut LiveNames>,
) -> Result<ownership::Write, TaskOutcome> {
    let (api, _) = api_for(ctx, &writer.client, id, defined_here).await?;
    if let (Some(live), Some(namespace)) = (live, id.namespace.as_deref()) {
        let seen = live
            .look_up(
                writer.user.as_deref(),
                &api,
                &id.api_version,
                &id.kind,
                namespace,
                &id.name,
            )
            .await
            .map_err(|e| writer.explain(outcome_for(&label(id), &e), &e))?;
        match seen {
            Seen::Absent => return Ok(ownership::Write::Apply),
            Seen::Present(listed) => {
                if let Ok(ownership::Write::Apply) =
                    ownership::may_write(&listed, desired, claimant, &label(id))
                {
                    return Ok(ownership::Write::Apply);
                }
            }
            Seen::Unknown => {}
        }
    }
    // Metadata is all the decision reads: the object's data stays on the server.
    let live = match api.get_metadata_opt(&id.name).await {
        Ok(Some(live)) => live,
        Ok(None) => return Ok(ownership::Write::Apply),
        // An account that may write but not read: the apply decides.
        Err(kube::Error::Api(s)) if s.code == 403 => return Ok(ownership::Write::Apply),
        Err(e) => return Err(outcome_for(&label(id), &e)),
    };
    let live = serde_json::to_value(&live).unwrap_or_default();
    ownership::may_write(&live, desired, claimant, &label(id))
        .map_err(|message| TaskOutcome::Fatal { message })
}

/// Delete (background propagation) objects applied before but not now; a
/// cluster-scoped one is let go (deleted when no other Instance uses it;
/// a CRD is kept).
async fn prune(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    before: &[AppliedObject],
    now: &[AppliedObject],
    changes: &mut Changes,
) -> Result<(), TaskOutcome> {
    for gone in before.iter().filter(|b| !now.contains(b)) {
        changes.removed(gone.clone());
        if gone.namespace.is_none() {
            let released = super::cluster_owned::release(ctx, writer, claimant, gone, false)
                .await
                .map_err(|e| writer.explain(outcome_for(&label(gone), &e), &e))?;
            tracing::info!(object = %label(gone), ?released, "let go of a cluster-scoped object the step no longer renders");
            continue;
        }
        let (api, _) = match api_for(ctx, &writer.client, gone, false).await {
            Ok(a) => a,
            // The kind itself is gone (its CRD was removed): nothing to prune.
            Err(TaskOutcome::Fatal { .. }) => continue,
            Err(other) => return Err(other),
        };
        match api.delete(&gone.name, &DeleteParams::background()).await {
            Ok(_) => {
                tracing::info!(object = %label(gone), "pruned an object the step no longer renders")
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(writer.explain(outcome_for(&label(gone), &e), &e)),
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
