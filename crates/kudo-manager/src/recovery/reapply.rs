//! The one task of a recovery phase: re-apply the object the phase is
//! named after, exactly as its plan last applied it.

use kudo_api::{Instance, InstanceStatus};
use kudo_engine::health::{self, object_label};
use kudo_engine::{TaskKey, TaskOutcome, TaskResult};

use super::RenderBook;
use crate::context::Context;
use crate::executor::result;

/// Runs the recovery task `key`; the book gets the fields owned afterwards.
pub(crate) async fn run(
    ctx: &Context,
    inst: &Instance,
    status: &InstanceStatus,
    book: &mut RenderBook,
    key: &TaskKey,
) -> TaskResult {
    let Some(object) = kudo_engine::recovery::object_of(status, key.phase()).cloned() else {
        return result(
            TaskOutcome::Fatal {
                message: format!(
                    "recovery phase {:?} names no object recorded in status.recoveries",
                    key.phase()
                ),
            },
            Vec::new(),
        );
    };
    let label = object_label(&object.kind, object.namespace.as_deref(), &object.name);
    let objects = vec![object.clone()];
    let fatal = |message: String| result(TaskOutcome::Fatal { message }, objects.clone());
    let Some(entry) = book.get(&object).cloned() else {
        return fatal(format!(
            "{label}: no stored render of it (a plan deleted it since, or it was applied \
             before this manager kept renders); run the plan that applies it again"
        ));
    };
    let namespace = inst.metadata.namespace.as_deref().unwrap_or("default");
    let cluster_scoped = kudo_engine::facts::cluster_scoped_objects(status);
    if let Err(why) = entry.fits(namespace, &cluster_scoped) {
        return fatal(format!("{label}: its stored render is not trusted: {why}"));
    }
    let Some(render) = entry.render else {
        return fatal(format!(
            "{label}: its render was left out of the render book (the Instance's renders \
             exceed what one Secret holds); run plan {:?} again to restore it",
            entry.plan
        ));
    };
    let writer = match ctx.writers.for_instance(&ctx.client, inst) {
        Ok(w) => w,
        Err(message) => return fatal(message),
    };
    let claimant = kudo_engine::ownership::Claimant {
        name: inst.metadata.name.as_deref().unwrap_or_default(),
        namespace: inst.metadata.namespace.as_deref().unwrap_or("default"),
        uid: inst.metadata.uid.as_deref().unwrap_or_default(),
    };
    let (stored, fields) = match crate::executor::reapply(ctx, &writer, &claimant, &render).await {
        Ok(applied) => applied,
        Err(outcome) => return result(outcome, objects),
    };
    book.applied(&entry.plan, object, render, fields);
    let outcome = TaskOutcome::from(health::evaluate(&stored));
    tracing::info!(object = %label, ?outcome, "recovered");
    result(outcome, objects)
}
