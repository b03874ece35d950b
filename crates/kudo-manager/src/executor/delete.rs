//! Delete tasks: background propagation; done when the objects are gone.

use kube::api::DeleteParams;
use kudo_engine::{TaskOutcome, TaskResult};
use serde_json::Value;

use super::apply::object_identity;
use crate::classify::{object_label, outcome_for};
use crate::context::Context;
use crate::identity::Writer;

pub(super) async fn run(
    ctx: &Context,
    writer: &Writer,
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
        notes: Vec::new(),
    }
}

fn failed(outcome: TaskOutcome) -> TaskResult {
    TaskResult {
        outcome,
        objects: Vec::new(),
        notes: Vec::new(),
    }
}

/// Delete cluster-scoped objects an Instance owned (by label; they cannot
/// carry an owner reference to a namespaced Instance). A failure that a
/// retry can fix (a conflict, throttling, a server error) is returned, so
/// the Instance keeps its finalizer and is reconciled again; one that it
/// cannot (the account may not delete) is logged and the Instance goes.
pub async fn delete_cluster_scoped(
    ctx: &Context,
    writer: &Writer,
    objects: &[kudo_api::AppliedObject],
) -> Result<(), crate::Error> {
    for id in objects {
        let label = object_label(&id.kind, None, &id.name);
        let resolved = match ctx.api.resolve(&id.api_version, &id.kind).await {
            Ok(Some(resolved)) => resolved,
            // The kind is gone (its CRD was deleted): so is the object.
            Ok(None) => continue,
            Err(e) => return Err(crate::Error::kube(format!("discovery for {label}"), e)),
        };
        if resolved.namespaced {
            continue;
        }
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(writer.client.clone(), &resolved.resource);
        match api.delete(&id.name, &DeleteParams::background()).await {
            Ok(_) => {
                tracing::info!(object = %label, "deleted a cluster-scoped object of the removed Instance")
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) if crate::classify::is_transient_kube_error(&e) => {
                return Err(crate::Error::kube(format!("deleting {label}"), e));
            }
            Err(e) => {
                tracing::warn!(object = %label, error = %e, "could not delete a cluster-scoped object of the removed Instance; it is left")
            }
        }
    }
    Ok(())
}
