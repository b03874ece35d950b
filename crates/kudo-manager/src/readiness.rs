//! `Ready` after a plan: the manager observes the objects the last
//! deploy/update/upgrade applied (their watch events trigger the
//! reconcile) and the engine decides the condition from their health.

use kudo_api::{AppliedObject, Condition, InstanceStatus};
use kudo_engine::health::{self, Health, object_label};
use kudo_engine::ready;

use crate::context::Context;

/// The Ready condition the workload's health calls for, or `None` when
/// nothing changes (or the health could not be read this time: the next
/// event tries again).
pub(crate) async fn workload_condition(
    ctx: &Context,
    status: &InstanceStatus,
) -> Option<Vec<Condition>> {
    let objects = ready::workload(status);
    if objects.is_empty() {
        return None;
    }
    let mut verdicts = Vec::with_capacity(objects.len());
    for object in objects {
        verdicts.push(observe(ctx, object).await?);
    }
    ready::workload_condition(&status.conditions, &verdicts, ctx.clock.now())
}

async fn observe(ctx: &Context, id: &AppliedObject) -> Option<Health> {
    let label = object_label(&id.kind, id.namespace.as_deref(), &id.name);
    let resolved = match ctx.api.resolve(&id.api_version, &id.kind).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Some(Health::Progressing(format!(
                "{label}: its kind is not served"
            )));
        }
        Err(e) => {
            tracing::debug!(object = %label, error = %e, "readiness: discovery failed");
            return None;
        }
    };
    match resolved
        .api(&ctx.client, id.namespace.as_deref())
        .get_opt(&id.name)
        .await
    {
        Ok(Some(obj)) => Some(health::evaluate(&serde_json::to_value(&obj).ok()?)),
        Ok(None) => Some(Health::Progressing(format!("{label} is missing"))),
        Err(e) => {
            tracing::debug!(object = %label, error = %e, "readiness: read failed");
            None
        }
    }
}
