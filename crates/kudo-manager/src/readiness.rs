//! `Ready` after a plan: the manager observes the objects the last
//! deploy/update/upgrade applied (their watch events trigger the
//! reconcile) and the engine decides the condition from their health.
//! An object is read again only when the metadata cache shows it changed
//! since the last read: a reconcile woken by something else (a repository,
//! a schedule) costs no read.

use std::collections::HashMap;
use std::sync::Mutex;

use kudo_api::{AppliedObject, Condition, Instance, InstanceStatus};
use kudo_engine::health::{self, Health, object_label};
use kudo_engine::ready;

use crate::context::Context;

/// The health last read of each workload object and the resourceVersion
/// it was read at, by Instance (`namespace/name`). Bounded by what is
/// live: an Instance's entries are its current workload objects, and go
/// with the Instance (also one deleted without a reconcile). A later
/// Instance of the same name meets objects with other resourceVersions.
#[derive(Debug, Default)]
pub struct SeenHealth(Mutex<HashMap<String, Workload>>);

/// One Instance's workload objects: the resourceVersion read, and health.
type Workload = HashMap<AppliedObject, (String, Health)>;

impl SeenHealth {
    fn get(&self, owner: &str, object: &AppliedObject, version: &str) -> Option<Health> {
        let seen = self.0.lock().ok()?;
        let (at, health) = seen.get(owner)?.get(object)?;
        (at == version).then(|| health.clone())
    }

    fn remember(&self, owner: &str, object: &AppliedObject, version: String, health: &Health) {
        if let Ok(mut seen) = self.0.lock() {
            seen.entry(owner.to_string())
                .or_default()
                .insert(object.clone(), (version, health.clone()));
        }
    }

    /// Keeps only `objects` of `owner`.
    fn keep(&self, owner: &str, objects: &[&AppliedObject]) {
        if let Ok(mut seen) = self.0.lock()
            && let Some(mine) = seen.get_mut(owner)
        {
            mine.retain(|o, _| objects.contains(&o));
        }
    }

    /// Drops what is kept for an Instance that is gone.
    pub fn forget(&self, owner: &str) {
        if let Ok(mut seen) = self.0.lock() {
            seen.remove(owner);
        }
    }
}

/// The Ready condition the workload's health calls for, or `None` when
/// nothing changes (or the health could not be read this time: the next
/// event tries again).
pub(crate) async fn workload_condition(
    ctx: &Context,
    inst: &Instance,
    status: &InstanceStatus,
) -> Option<Vec<Condition>> {
    let owner = crate::context::instance_key(inst);
    let owner = owner.as_str();
    let objects = ready::workload(status);
    ctx.seen_health.keep(owner, &objects);
    if objects.is_empty() {
        return None;
    }
    let mut verdicts = Vec::with_capacity(objects.len());
    for object in objects {
        let unchanged = ctx
            .observers
            .resource_version(object)
            .and_then(|version| ctx.seen_health.get(owner, object, &version));
        let verdict = match unchanged {
            Some(health) => health,
            None => observe(ctx, owner, object).await?,
        };
        verdicts.push(verdict);
    }
    ready::workload_condition(&status.conditions, &verdicts, ctx.clock.now())
}

async fn observe(ctx: &Context, owner: &str, id: &AppliedObject) -> Option<Health> {
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
        Ok(Some(obj)) => {
            let health = health::evaluate(&serde_json::to_value(&obj).ok()?);
            if let Some(version) = obj.metadata.resource_version {
                ctx.seen_health.remember(owner, id, version, &health);
            }
            Some(health)
        }
        Ok(None) => Some(Health::Progressing(format!("{label} is missing"))),
        Err(e) => {
            tracing::debug!(object = %label, error = %e, "readiness: read failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str) -> AppliedObject {
        AppliedObject {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    #[test]
    fn a_health_is_reused_only_at_the_version_it_was_read_and_only_for_current_objects() {
        let seen = SeenHealth::default();
        let (web, db) = (object("web"), object("db"));
        seen.remember("uid-1", &web, "7".into(), &Health::Healthy);
        seen.remember("uid-1", &db, "9".into(), &Health::Healthy);
        assert_eq!(seen.get("uid-1", &web, "7"), Some(Health::Healthy));
        assert_eq!(seen.get("uid-1", &web, "8"), None, "changed since");
        assert_eq!(seen.get("uid-2", &web, "7"), None, "another Instance");
        seen.keep("uid-1", &[&web]);
        assert_eq!(seen.get("uid-1", &db, "9"), None, "no longer its workload");
        seen.forget("uid-1");
        assert_eq!(seen.get("uid-1", &web, "7"), None);
    }
}
