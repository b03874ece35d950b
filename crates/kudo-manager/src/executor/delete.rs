//! Delete tasks: background propagation; done when the objects are gone.

use kube::api::DeleteParams;
use kudo_engine::{Note, TaskOutcome, TaskResult};
use serde_json::Value;

use kudo_engine::ownership::Claimant;

use super::apply::object_identity;
use super::cluster_owned::Released;
use crate::classify::{object_label, outcome_for};
use crate::context::Context;
use crate::identity::Writer;

pub(super) async fn run(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    objects: Vec<Value>,
    changes: &mut crate::recovery::Changes,
) -> TaskResult {
    let mut remaining = Vec::new();
    // An object in a removed version is deleted in the version it was applied in.
    let mut notes = Vec::new();
    let objects = match super::versions::objects_to_apply(ctx, objects, &mut notes).await {
        Ok(objects) => objects,
        Err(outcome) => return failed(outcome),
    };
    for obj in &objects {
        let id = object_identity(obj);
        changes.removed(id.clone());
        let label = object_label(&id.kind, id.namespace.as_deref(), &id.name);
        let resolved = match ctx.api.resolve(&id.api_version, &id.kind).await {
            Ok(Some(r)) => r,
            // KUDO drops objects whose kind the server does not know.
            Ok(None) => continue,
            Err(e) => return failed(outcome_for(&label, &e)),
        };
        if !resolved.namespaced {
            // Shared with other Instances, perhaps: let go rather than delete.
            // A Delete task names the object, so a CRD may go too.
            match super::cluster_owned::release(ctx, writer, claimant, &id, true).await {
                Ok(Released::Kept(why)) => notes.push(Note::new("ObjectKept", why)),
                Ok(Released::Gone | Released::Deleted) => {}
                Err(e) => return failed(writer.explain(outcome_for(&label, &e), &e)),
            }
            continue;
        }
        let api = resolved.api(&writer.client, id.namespace.as_deref());
        match api.delete(&id.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => continue,
            Err(e) => return failed(writer.explain(outcome_for(&label, &e), &e)),
        }
        match api.get_opt(&id.name).await {
            Ok(Some(_)) => remaining.push(label),
            Ok(None) => {}
            Err(e) => return failed(outcome_for(&label, &e)),
        }
    }
    let outcome = if remaining.is_empty() {
        TaskOutcome::Done
    } else {
        TaskOutcome::InProgress {
            message: format!("waiting for deletion of {}", remaining.join(", ")),
        }
    };
    TaskResult {
        outcome,
        objects: Vec::new(),
        notes,
    }
}

fn failed(outcome: TaskOutcome) -> TaskResult {
    TaskResult {
        outcome,
        objects: Vec::new(),
        notes: Vec::new(),
    }
}

/// Lets go of the cluster-scoped objects a removed Instance applied: each
/// is deleted unless another Instance still uses it, kudo-rs did not create
/// it, or it is a CRD and the Instance was not annotated
/// `kudo.dev/delete-crds: "true"` (`kubectl kudo uninstall --delete-crds`).
/// A failure that a retry can fix (a conflict, throttling, a server error)
/// is returned, so the Instance keeps its finalizer and is reconciled
/// again; one that it cannot (the account may not delete) is logged and the
/// Instance goes.
pub async fn delete_cluster_scoped(
    ctx: &Context,
    writer: &Writer,
    inst: &kudo_api::Instance,
    objects: &[kudo_api::AppliedObject],
) -> Result<(), crate::Error> {
    let claimant = super::cluster_owned::claimant_of(inst);
    let delete_crds = super::cluster_owned::deletes_crds(inst);
    for id in objects {
        let label = object_label(&id.kind, None, &id.name);
        match super::cluster_owned::release(ctx, writer, &claimant, id, delete_crds).await {
            Ok(Released::Deleted) => {
                tracing::info!(object = %label, "deleted a cluster-scoped object of the removed Instance")
            }
            Ok(Released::Gone) => {}
            Ok(Released::Kept(why)) => {
                tracing::info!(object = %label, %why, "kept a cluster-scoped object of the removed Instance")
            }
            Err(e) if crate::classify::is_transient_kube_error(&e) => {
                return Err(crate::Error::kube(format!("letting go of {label}"), e));
            }
            Err(e) => {
                tracing::warn!(object = %label, error = %e, "could not let go of a cluster-scoped object of the removed Instance; it is left")
            }
        }
    }
    Ok(())
}
