//! Cluster-scoped objects several Instances may apply (a CRD, a namespace):
//! each Instance that applies one is recorded on it in an owner annotation,
//! and letting one go removes that record and deletes the object only when
//! [`kudo_engine::ownership::release`] says so — no other Instance that
//! still exists uses it, kudo-rs created it, and for a CRD deletion was
//! asked for.

use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kudo_api::{AppliedObject, Instance};
use kudo_engine::TaskOutcome;
use kudo_engine::ownership::{self, Claimant, Owner, Release};
use serde_json::{Value, json};

use crate::classify::{object_label, outcome_for};
use crate::context::Context;
use crate::identity::Writer;

/// Field manager of the owner annotations (not kudo-manager's: its applies
/// must not remove the records of other Instances).
const OWNERS_MANAGER: &str = "kudo-manager-owners";

/// What letting an object go did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// It was already gone (or its kind is).
    Gone,
    /// It was deleted.
    Deleted,
    /// It stays, and why.
    Kept(String),
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(OWNERS_MANAGER.into()),
        ..PatchParams::default()
    }
}

/// Records `claimant` on the cluster-scoped object `id` it just applied.
pub(crate) async fn record_owner(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    id: &AppliedObject,
) -> Result<(), TaskOutcome> {
    let label = object_label(&id.kind, None, &id.name);
    let Some(api) = api_of(ctx, writer, id)
        .await
        .map_err(|e| outcome_for(&label, &e))?
    else {
        return Ok(());
    };
    let patch = json!({"metadata": {"annotations": {
        ownership::owner_annotation(claimant.uid): format!("{}/{}", claimant.namespace, claimant.name)
    }}});
    match api
        .patch(&id.name, &patch_params(), &Patch::Merge(&patch))
        .await
    {
        Ok(stored) => {
            ctx.own_applies.record(
                stored.metadata.uid.as_deref(),
                stored.metadata.resource_version.as_deref(),
            );
            Ok(())
        }
        Err(e) => Err(writer.explain(outcome_for(&label, &e), &e)),
    }
}

async fn api_of(
    ctx: &Context,
    writer: &Writer,
    id: &AppliedObject,
) -> Result<Option<Api<kube::api::DynamicObject>>, kube::Error> {
    match ctx.api.resolve(&id.api_version, &id.kind).await? {
        Some(resolved) if !resolved.namespaced => Ok(Some(Api::all_with(
            writer.client.clone(),
            &resolved.resource,
        ))),
        // The kind is gone (its CRD was deleted), or it is not cluster-scoped.
        _ => Ok(None),
    }
}

/// Times a release judges the object again when it changed between the
/// read and the delete (another Instance recording itself on it).
const RELEASE_ATTEMPTS: usize = 3;

/// Lets `claimant` go of cluster-scoped object `id`: removes its owner
/// record (and records of Instances that no longer exist), then deletes the
/// object or says why it stays. The delete holds only for the version of
/// the object that was judged: another Instance that records itself on it
/// meanwhile keeps it (the release judges again).
pub(crate) async fn release(
    ctx: &Context,
    writer: &Writer,
    claimant: &Claimant<'_>,
    id: &AppliedObject,
    delete_crds: bool,
) -> Result<Released, kube::Error> {
    let Some(api) = api_of(ctx, writer, id).await? else {
        return Ok(Released::Gone);
    };
    for _ in 0..RELEASE_ATTEMPTS {
        match release_once(ctx, &api, claimant, id, delete_crds).await? {
            Some(released) => return Ok(released),
            None => continue,
        }
    }
    Ok(Released::Kept(format!(
        "{} changed each time it was about to be deleted ({RELEASE_ATTEMPTS} times); it is kept",
        object_label(&id.kind, None, &id.name)
    )))
}

/// One judgment of [`release`]; `None` when the object changed before the
/// delete.
async fn release_once(
    ctx: &Context,
    api: &Api<kube::api::DynamicObject>,
    claimant: &Claimant<'_>,
    id: &AppliedObject,
    delete_crds: bool,
) -> Result<Option<Released>, kube::Error> {
    let done = |released| Ok(Some(released));
    let live = match api.get_metadata_opt(&id.name).await {
        Ok(Some(live)) => live,
        Ok(None) => return done(Released::Gone),
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return done(Released::Kept(format!(
                "{} cannot be read by the Instance's account: {}",
                object_label(&id.kind, None, &id.name),
                s.message
            )));
        }
        Err(e) => return Err(e),
    };
    let mut judged_version = live.metadata.resource_version.clone();
    let mut live = serde_json::to_value(&live).unwrap_or_default();
    live["kind"] = json!(id.kind);
    let mut others = Vec::new();
    let mut stale = Vec::new();
    for owner in ownership::owners(&live) {
        let mine = match &owner.uid {
            Some(uid) => uid == claimant.uid,
            None => owner.namespace == claimant.namespace && owner.name == claimant.name,
        };
        if mine {
            stale.extend(owner.uid.clone());
        } else if exists(ctx, &owner).await? {
            others.push(owner);
        } else {
            stale.extend(owner.uid.clone());
        }
    }
    if !stale.is_empty() {
        let gone: serde_json::Map<String, Value> = stale
            .iter()
            .map(|uid| (ownership::owner_annotation(uid), Value::Null))
            .collect();
        // Only onto the version that was judged: an owner recorded since
        // makes the patch fail, and the object is judged again.
        let patch = json!({"metadata": {"resourceVersion": judged_version, "annotations": gone}});
        match api
            .patch(&id.name, &patch_params(), &Patch::Merge(&patch))
            .await
        {
            Ok(patched) => judged_version = patched.metadata.resource_version,
            Err(kube::Error::Api(s)) if s.code == 404 => return done(Released::Gone),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    match ownership::release(&live, claimant, &others, delete_crds) {
        Release::Keep(why) => done(Released::Kept(why)),
        Release::Delete => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: judged_version,
                    uid: None,
                }),
                ..DeleteParams::background()
            };
            match api.delete(&id.name, &params).await {
                Ok(_) => done(Released::Deleted),
                Err(kube::Error::Api(s)) if s.code == 404 => done(Released::Gone),
                // Changed since it was judged: judge it again.
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
                Err(e) => Err(e),
            }
        }
    }
}

/// Whether the Instance `owner` names still exists (the same one, by uid)
/// and is not being deleted.
async fn exists(ctx: &Context, owner: &Owner) -> Result<bool, kube::Error> {
    let api: Api<Instance> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let Some(found) = api.get_metadata_opt(&owner.name).await? else {
        return Ok(false);
    };
    let same = owner
        .uid
        .as_deref()
        .is_none_or(|uid| found.metadata.uid.as_deref() == Some(uid));
    Ok(same && found.metadata.deletion_timestamp.is_none())
}

/// The claimant of an Instance.
pub(crate) fn claimant_of(inst: &Instance) -> Claimant<'_> {
    Claimant {
        name: inst.metadata.name.as_deref().unwrap_or_default(),
        namespace: inst.metadata.namespace.as_deref().unwrap_or("default"),
        uid: inst.metadata.uid.as_deref().unwrap_or_default(),
    }
}

/// Whether the Instance asked for its CRDs to be deleted with it.
pub(crate) fn deletes_crds(inst: &Instance) -> bool {
    inst.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(kudo_api::names::DELETE_CRDS_ANNOTATION))
        .is_some_and(|v| v == "true")
}
