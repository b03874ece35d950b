//! KudoOperator tasks: create the child Instance, or merge its spec into
//! the existing one — only a child of this parent, or one handed over to
//! it — written as the parent's account.
//!
//! KUDO merge-patches `{spec: ...}` onto an existing child, so parameters
//! the parent stops passing (or that someone set on the child by hand) are
//! kept. A server-side apply would remove fields this manager applied
//! before and no longer sends, so children are not applied.

use kube::api::{Api, Patch, PatchParams, PostParams};
use kudo_api::names::{FIELD_MANAGER, OPERATOR_LABEL};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::{TaskOutcome, TaskResult};
use serde_json::{Value, json};

use kube::runtime::reflector::ObjectRef;
use kudo_engine::ownership::{Claimant, children};

use super::apply::object_identity;
use crate::classify::{object_label, outcome_for};
use crate::context::Context;
use crate::identity::Writer;
use kudo_engine::health;

/// Create or merge-patch the child Instance, then judge its health.
pub(super) async fn run(
    ctx: &Context,
    writer: &Writer,
    parent: &Claimant<'_>,
    child: Instance,
) -> TaskResult {
    let body = match serde_json::to_value(&child) {
        Ok(v) => v,
        Err(e) => return fatal(format!("child Instance could not be serialised: {e}")),
    };
    let id = object_identity(&body);
    let label = object_label(&id.kind, id.namespace.as_deref(), &id.name);
    let api: Api<Instance> = match &id.namespace {
        Some(ns) => Api::namespaced(writer.client.clone(), ns),
        None => Api::default_namespaced(writer.client.clone()),
    };
    let stored = match api.get_opt(&id.name).await {
        Ok(None) => {
            if let Err(message) = may_add_child(ctx, parent) {
                return fatal(format!("{label}: {message}"));
            }
            if let Some(missing) = missing_operator_version(ctx, &child).await {
                return missing;
            }
            let params = PostParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..Default::default()
            };
            api.create(&params, &child).await
        }
        Ok(Some(existing)) => {
            let live = serde_json::to_value(&existing).unwrap_or_default();
            if let Some(message) = predecessors_child(&live, parent, &label) {
                return TaskResult {
                    outcome: TaskOutcome::InProgress { message },
                    objects: Vec::new(),
                    notes: Vec::new(),
                };
            }
            let adopting = match kudo_engine::ownership::may_patch_child(&live, parent, &label) {
                Ok(adopting) => adopting,
                Err(message) => return fatal(message),
            };
            let mut patch = spec_patch(&body);
            if adopting {
                // Record the parent, so the child is its own from now on.
                let mut refs = existing
                    .metadata
                    .owner_references
                    .clone()
                    .unwrap_or_default();
                refs.extend(child.metadata.owner_references.clone().unwrap_or_default());
                patch["metadata"] = json!({"ownerReferences": refs});
            }
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..Default::default()
            };
            api.patch(&id.name, &params, &Patch::Merge(patch)).await
        }
        Err(e) => Err(e),
    };
    let stored = match stored.map(|s| serde_json::to_value(&s)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return fatal(format!("{label}: the stored child is unreadable: {e}")),
        Err(e) => {
            return TaskResult {
                outcome: writer.explain(outcome_for(&label, &e), &e),
                objects: Vec::new(),
                notes: Vec::new(),
            };
        }
    };
    let outcome = TaskOutcome::from(health::evaluate(&stored));
    TaskResult {
        outcome,
        objects: vec![id],
        notes: Vec::new(),
    }
}

/// Whether `parent` may make one more child: not past the nesting depth,
/// nor past the namespace's count of children (read from the cache).
fn may_add_child(ctx: &Context, parent: &Claimant<'_>) -> Result<(), String> {
    let lookup = |name: &str| {
        ctx.instances
            .get(&ObjectRef::new(name).within(parent.namespace))
    };
    let depth = lookup(parent.name).map_or(0, |p| children::nesting_depth(&p, lookup));
    let made = ctx
        .instances
        .state()
        .iter()
        .filter(|i| {
            i.metadata.namespace.as_deref() == Some(parent.namespace)
                && children::parent_name(i).is_some()
        })
        .count();
    children::may_add_child(
        &format!("{}/{}", parent.namespace, parent.name),
        depth,
        made,
    )
}

/// Why to wait when the existing child is on its way out or was created by
/// an earlier parent of the same name (deleted since): the garbage
/// collector removes it, and the child is created again afterwards.
fn predecessors_child(live: &Value, parent: &Claimant<'_>, label: &str) -> Option<String> {
    if live["metadata"]["deletionTimestamp"].is_string() {
        return Some(format!(
            "{label} is being deleted: waiting for it to go before creating it again"
        ));
    }
    live["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find_map(|owner| kudo_engine::ownership::left_by_predecessor(owner, parent, label))
}

/// KUDO checks a parent's dependencies are installed before its plan
/// runs; here the check is made before a child is created, so a missing
/// OperatorVersion fails the step with what to install instead of leaving
/// a child that waits for it (or a bare webhook refusal).
async fn missing_operator_version(ctx: &Context, child: &Instance) -> Option<TaskResult> {
    let name = child.spec.operator_version.name.as_deref()?;
    let namespace = child.metadata.namespace.as_deref()?;
    let api: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), namespace);
    match api.get_opt(name).await {
        Ok(Some(_)) => None,
        Ok(None) => {
            let operator = child
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(OPERATOR_LABEL))
                .map_or("its operator", String::as_str);
            Some(fatal(format!(
                "OperatorVersion {namespace}/{name} is not installed: install the package of \
                 {operator} first (`kubectl kudo install <package> --skip-instance`); \
                 installing the parent with `kubectl kudo install` installs dependencies it \
                 names by path"
            )))
        }
        // Unreadable now: let the create (and its own error handling) decide.
        Err(_) => None,
    }
}

/// The merge patch KUDO sends to an existing child: its whole spec and
/// nothing else (labels and owner references were set at creation).
fn spec_patch(child: &Value) -> Value {
    match child.get("spec") {
        Some(spec) => json!({ "spec": spec }),
        // `spec: null` would delete the child's spec; send nothing instead.
        None => json!({}),
    }
}

fn fatal(message: String) -> TaskResult {
    TaskResult {
        outcome: TaskOutcome::Fatal { message },
        objects: Vec::new(),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_patch_carries_only_the_spec() {
        let child = json!({
            "apiVersion": "kudo.dev/v1beta1",
            "kind": "Instance",
            "metadata": {"name": "p-child", "labels": {"kudo.dev/operator": "child"}},
            "spec": {"operatorVersion": {"name": "child-1.0"}, "parameters": {"SIZE": "2"}},
        });
        assert_eq!(
            spec_patch(&child),
            json!({"spec": {"operatorVersion": {"name": "child-1.0"}, "parameters": {"SIZE": "2"}}})
        );
    }

    #[test]
    fn spec_patch_never_deletes_the_spec() {
        assert_eq!(spec_patch(&json!({"kind": "Instance"})), json!({}));
    }
}
