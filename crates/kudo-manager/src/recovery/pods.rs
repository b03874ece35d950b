//! The task of a `restartPod` / `replacePod` phase: delete the pod the
//! operation names (only while it is still the pod with the recorded uid,
//! so the task may run any number of times), with its StatefulSet volume
//! claims for a replace, then wait until its controller has started it
//! again and it is ready.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, Preconditions};
use kudo_api::{Instance, PlanAction};
use kudo_engine::health;
use kudo_engine::recovery_pods::{check_belongs, operation_of, replaced_claims, statefulset_of};
use kudo_engine::{TaskKey, TaskOutcome, TaskResult};

use crate::classify::outcome_for;
use crate::context::Context;
use crate::executor::result;

/// Runs the pod task `key` of the recovery plan.
pub(crate) async fn run(ctx: &Context, inst: &Instance, key: &TaskKey) -> TaskResult {
    let outcome = match step(ctx, inst, key).await {
        Ok(outcome) | Err(outcome) => outcome,
    };
    result(outcome, Vec::new())
}

async fn step(ctx: &Context, inst: &Instance, key: &TaskKey) -> Result<TaskOutcome, TaskOutcome> {
    let fatal = |message: String| TaskOutcome::Fatal { message };
    let op = operation_of(inst, key.task()).ok_or_else(|| {
        fatal(format!(
            "operation {} is no longer in spec.planOperations; nothing to do",
            key.task()
        ))
    })?;
    let (Some(name), Some(uid)) = (op.pod.as_deref(), op.pod_uid.as_deref()) else {
        return Err(fatal(format!("operation {} names no pod and uid", op.id)));
    };
    let ns = inst.metadata.namespace.as_deref().unwrap_or("default");
    let writer = ctx.writers.for_instance(&ctx.client, inst).map_err(fatal)?;
    let pods: Api<Pod> = Api::namespaced(writer.client.clone(), ns);
    let label = format!("Pod {ns}/{name}");
    let pod = pods
        .get_opt(name)
        .await
        .map_err(|e| writer.explain(outcome_for(&label, &e), &e))?;
    let Some(pod) = pod else {
        return Ok(TaskOutcome::InProgress {
            message: format!("{label} deleted; waiting for its controller to start it again"),
        });
    };
    let instance = inst.metadata.name.as_deref().unwrap_or_default();
    if pod.metadata.uid.as_deref() != Some(uid) {
        // Started again: done when it is ready.
        return Ok(TaskOutcome::from(health::evaluate(
            &serde_json::to_value(&pod).unwrap_or_default(),
        )));
    }
    check_belongs(&pod, instance).map_err(fatal)?;
    if op.action == PlanAction::ReplacePod {
        delete_claims(&writer, ns, &pod).await?;
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(name, &params).await {
        Ok(_) => {}
        // Gone, or already another pod of that name: deleted before.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => return Err(writer.explain(outcome_for(&label, &e), &e)),
    }
    tracing::info!(pod = %label, action = %op.action, "pod deleted");
    Ok(TaskOutcome::InProgress {
        message: format!("{label} deleted; waiting for its controller to start it again"),
    })
}

/// Deletes the claims the pod's StatefulSet made for it (they go once the
/// pod releases them; the StatefulSet creates new ones for the new pod).
async fn delete_claims(
    writer: &crate::identity::Writer,
    ns: &str,
    pod: &Pod,
) -> Result<(), TaskOutcome> {
    let Some(sts_name) = statefulset_of(pod) else {
        return Ok(());
    };
    let sets: Api<StatefulSet> = Api::namespaced(writer.client.clone(), ns);
    let sts_label = format!("StatefulSet {ns}/{sts_name}");
    let Some(sts) = sets
        .get_opt(sts_name)
        .await
        .map_err(|e| writer.explain(outcome_for(&sts_label, &e), &e))?
    else {
        return Ok(());
    };
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(writer.client.clone(), ns);
    for claim in replaced_claims(pod, &sts) {
        match claims.delete(&claim, &DeleteParams::background()).await {
            Ok(_) => tracing::info!(claim = %claim, "volume claim deleted for a replace"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                let label = format!("PersistentVolumeClaim {ns}/{claim}");
                return Err(writer.explain(outcome_for(&label, &e), &e));
            }
        }
    }
    Ok(())
}
