//! Recovery on the manager's side: the render book (what each object looked
//! like when a plan applied it, kept in a Secret per Instance), the
//! observation of drift from the metadata watches, and the task that
//! re-applies a drifted object. What is drift and when recovery runs is
//! decided by [`kudo_engine::recovery`].

mod book;
mod clean;
mod key;
mod observe;
mod pods;
mod reapply;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use kudo_api::Instance;
use kudo_api::names::INSTANCE_LABEL;

pub use book::{Entry, RenderBook};
pub use clean::{JudgedClean, Versions};
pub use key::{BookKey, Owner};
pub(crate) use observe::drift;
pub use observe::{
    MetaLookup, Observers, TypedLookup, compact_managed_fields, keep_what_drift_needs,
};
pub(crate) use pods::run as pod_task;
pub(crate) use reapply::run as reapply;

use crate::context::Context;
use crate::{Error, Result};

/// What one task did to the book: objects applied (as applied, with the
/// fields kudo-manager owns afterwards) and objects it deleted.
#[derive(Debug, Default)]
pub struct Changes {
    applied: Vec<(
        kudo_api::AppliedObject,
        serde_json::Value,
        serde_json::Value,
    )>,
    removed: Vec<kudo_api::AppliedObject>,
}

impl Changes {
    /// An object applied.
    pub fn applied(
        &mut self,
        object: kudo_api::AppliedObject,
        render: serde_json::Value,
        fields: serde_json::Value,
    ) {
        self.applied.push((object, render, fields));
    }

    /// An object deleted.
    pub fn removed(&mut self, object: kudo_api::AppliedObject) {
        self.removed.push(object);
    }

    /// Whether the task neither applied nor deleted anything.
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.removed.is_empty()
    }

    /// Writes them into the book as done by plan `plan`.
    pub fn record(self, plan: &str, book: &mut RenderBook) {
        for o in &self.removed {
            book.removed(o);
        }
        for (object, render, fields) in self.applied {
            book.applied(plan, object, render, fields);
        }
    }
}

/// Field manager of the book's Secret (not kudo-manager's: its fields there
/// must never look like an operator object's).
const BOOK_MANAGER: &str = "kudo-manager-renders";

/// The books of the Instances this manager reconciled, by Instance uid.
/// Reconciles of one Instance never overlap, so one lock per book is only
/// held by one reconcile at a time.
#[derive(Default)]
pub struct Books {
    loaded: Mutex<HashMap<String, Arc<tokio::sync::Mutex<RenderBook>>>>,
}

impl std::fmt::Debug for Books {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Books").finish_non_exhaustive()
    }
}

impl Books {
    /// The book of `inst`, read from its Secret the first time. When the
    /// Secret cannot be read the book is [`RenderBook::unavailable`] for
    /// this reconcile (plans go on; recovery waits), and read again next time.
    pub async fn of(&self, ctx: &Context, inst: &Instance) -> Arc<tokio::sync::Mutex<RenderBook>> {
        let uid = inst.metadata.uid.clone().unwrap_or_default();
        if let Some(book) = self.loaded.lock().ok().and_then(|m| m.get(&uid).cloned()) {
            return book;
        }
        match load(ctx, inst).await {
            Ok(book) => {
                let book = Arc::new(tokio::sync::Mutex::new(book));
                if let Ok(mut m) = self.loaded.lock() {
                    m.insert(uid, book.clone());
                }
                book
            }
            Err(e) => {
                tracing::warn!(error = %e, "render book unavailable; drift is not recovered until it can be read");
                Arc::new(tokio::sync::Mutex::new(RenderBook::unavailable()))
            }
        }
    }

    /// Forgets the book of a deleted or idle Instance (an idle one's is
    /// read from its Secret again when needed).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut m) = self.loaded.lock() {
            m.remove(uid);
        }
    }
}

/// The book's Secret, read and written as the Instance's account (the one
/// that writes its objects, rendered Secrets included), so the manager
/// needs no rights on Secrets of its own.
fn secret_api(ctx: &Context, inst: &Instance) -> Result<(Api<Secret>, String)> {
    let ns = inst.namespace().unwrap_or_else(|| "default".into());
    let writer = ctx
        .writers
        .for_instance(&ctx.client, inst)
        .map_err(Error::Config)?;
    Ok((
        Api::namespaced(writer.client, &ns),
        book::secret_name(&inst.name_any()),
    ))
}

/// Key of the book's signature in the Secret's data.
const SIGNATURE_KEY: &str = "renders.sig";

fn owner(inst: &Instance) -> Owner<'_> {
    Owner {
        uid: inst.metadata.uid.as_deref().unwrap_or_default(),
        namespace: inst.metadata.namespace.as_deref().unwrap_or("default"),
        name: inst.metadata.name.as_deref().unwrap_or_default(),
    }
}

/// Reads the book: only one signed with this manager's key for this
/// Instance is trusted, and of it only the entries that fit the Instance
/// (its namespace, the cluster-scoped objects its plans applied).
async fn load(ctx: &Context, inst: &Instance) -> Result<RenderBook> {
    let (api, name) = secret_api(ctx, inst)?;
    let secret = api
        .get_opt(&name)
        .await
        .map_err(|e| Error::kube(format!("reading the render book Secret {name}"), e))?;
    let Some(mut data) = secret.and_then(|s| s.data) else {
        return Ok(RenderBook::default());
    };
    let Some(bytes) = data.remove(book::DATA_KEY) else {
        return Ok(RenderBook::default());
    };
    let signature = data.remove(SIGNATURE_KEY).map(|s| s.0).unwrap_or_default();
    if !ctx.book_key.verify(owner(inst), &bytes.0, &signature) {
        tracing::warn!(
            secret = %name,
            "render book not signed by this manager for this Instance; not trusted, a new one is started"
        );
        return Ok(RenderBook::default());
    }
    let mut book = RenderBook::decode(&bytes.0).unwrap_or_else(|e| {
        tracing::warn!(secret = %name, error = %e, "render book unreadable; starting a new one");
        RenderBook::default()
    });
    let cluster_scoped = inst
        .status
        .as_ref()
        .map(kudo_engine::facts::cluster_scoped_objects)
        .unwrap_or_default();
    for (object, why) in book.keep_fitting(owner(inst).namespace, &cluster_scoped) {
        tracing::warn!(secret = %name, object = ?object, %why, "render book entry not trusted; left out");
    }
    Ok(book)
}

/// Writes the book to its Secret if it changed.
pub async fn save(ctx: &Context, inst: &Instance, book: &mut RenderBook) -> Result<()> {
    if !book.is_dirty() {
        return Ok(());
    }
    let (api, name) = secret_api(ctx, inst)?;
    let (bytes, dropped) = book.encode();
    let signature = ctx.book_key.sign(owner(inst), &bytes);
    if !dropped.is_empty() {
        tracing::warn!(
            secret = %name,
            left_out = dropped.len(),
            "renders too large for the book; those objects cannot be recovered"
        );
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: inst.namespace(),
            labels: Some([(INSTANCE_LABEL.to_string(), inst.name_any())].into()),
            owner_references: inst.controller_owner_ref(&()).map(|mut r| {
                r.controller = None;
                r.block_owner_deletion = None;
                vec![r]
            }),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(
            [
                (book::DATA_KEY.to_string(), ByteString(bytes)),
                (SIGNATURE_KEY.to_string(), ByteString(signature)),
            ]
            .into(),
        ),
        ..Secret::default()
    };
    let params = PatchParams::apply(BOOK_MANAGER).force();
    match api.patch(&name, &params, &Patch::Apply(&secret)).await {
        Ok(_) => {
            book.saved();
            Ok(())
        }
        // Plans go on without recovery rather than fail for it.
        Err(kube::Error::Api(s)) if s.code == 403 => {
            tracing::warn!(secret = %name, reason = %s.message, "render book cannot be written; drift of this Instance is not recovered");
            *book = RenderBook::unavailable();
            Ok(())
        }
        Err(e) => Err(Error::kube(
            format!("writing the render book Secret {name}"),
            e,
        )),
    }
}

/// Whether an Instance's drift is looked at now: recovery on, not being
/// deleted, and recovery not running (drift found meanwhile waits for it).
/// Beside another running plan it is looked at: the engine recovers what
/// that plan does not touch.
pub fn watching(ctx: &Context, inst: &Instance, status: &kudo_api::InstanceStatus) -> bool {
    kudo_engine::recovery::enabled(inst, &ctx.engine)
        && inst.meta().deletion_timestamp.is_none()
        && !status
            .plan_status
            .get(kudo_api::names::RECOVERY_PLAN)
            .is_some_and(|p| p.status().is_running())
}
