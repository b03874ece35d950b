//! The executor: turns one `RunTask` action into API calls and a
//! [`TaskResult`]. Rendering is kudo-package's; health is [`kudo_engine::health`].

mod apply;
mod child;
mod cluster_owned;
mod delete;
mod live_names;
mod pipe;
mod pipe_artifact;
mod pipe_exec;
mod pipe_state;
mod versions;

use std::collections::BTreeMap;
use std::sync::Arc;

use kudo_api::{AppliedObject, Instance, OperatorVersion};
use kudo_engine::{TaskKey, TaskOutcome, TaskResult};
use kudo_package::RenderError;
use kudo_package::render::{
    MaintenanceContext, RenderContext, RenderedTask, pipe_artifact_names, render_task,
};

use tracing::Instrument;

use crate::context::Context;
use crate::recovery::Changes;

pub use crate::identity::Writer;
pub(crate) use apply::reapply;
pub use apply::{apply_object, object_identity};
pub use delete::delete_cluster_scoped;

/// What the executor learns in one reconcile and keeps for the rest of it.
#[derive(Default)]
pub struct PassState {
    /// The takeover check's listings.
    pub live: live_names::LiveNames,
    /// A task waits for something no watch reports (a CRD becoming
    /// Established, the API server serving a new kind): look again soon.
    pub recheck_soon: bool,
}

/// What the working status records of a task's run: read from it, not from
/// the stored Instance, which is behind it within a reconcile.
#[derive(Clone, Copy, Default)]
pub struct Recorded<'s> {
    /// The objects the task applied before (pruning input).
    pub previously_applied: &'s [AppliedObject],
    /// The values given to this execution (`spec.planExecution.parameters`
    /// when it started), laid over the Instance's in `.Params`.
    pub execution_parameters: Option<&'s BTreeMap<String, String>>,
}

impl<'s> Recorded<'s> {
    /// What `status` records of `key`'s run.
    pub fn of(key: &TaskKey, status: &'s kudo_api::InstanceStatus) -> Self {
        Self {
            previously_applied: key.previously_applied(status),
            execution_parameters: key.execution_parameters(status),
        }
    }
}

/// Run one task of one step and report what happened.
pub async fn run_task(
    ctx: &Context,
    inst: &Instance,
    ov: &Arc<OperatorVersion>,
    key: &TaskKey,
    recorded: Recorded<'_>,
    changes: &mut Changes,
    pass: &mut PassState,
) -> TaskResult {
    let span = tracing::info_span!(
        "task",
        instance = %format!("{}/{}", inst.metadata.namespace.as_deref().unwrap_or(""), inst.metadata.name.as_deref().unwrap_or("")),
        plan = %key.plan(),
        phase = %key.phase(),
        step = %key.step(),
        task = %key.task(),
    );
    run_task_inner(ctx, inst, ov, key, recorded, changes, pass)
        .instrument(span)
        .await
}

async fn run_task_inner(
    ctx: &Context,
    inst: &Instance,
    ov: &Arc<OperatorVersion>,
    key: &TaskKey,
    recorded: Recorded<'_>,
    changes: &mut Changes,
    pass: &mut PassState,
) -> TaskResult {
    // The account may be missing while the manager lacks the rights to make
    // it; an administrator can fix that, so it is retried.
    if let Err(message) = ctx.writers.prepare(&ctx.client, inst).await {
        return result(TaskOutcome::Transient { message }, Vec::new());
    }
    let writer = match ctx.writers.for_instance(&ctx.client, inst) {
        Ok(w) => w,
        Err(message) => return result(TaskOutcome::Fatal { message }, Vec::new()),
    };
    let rctx = match render_context(inst, ov, key, recorded.execution_parameters) {
        Ok(rctx) => Arc::new(RenderContext {
            limits: ctx.render_limits,
            ..rctx
        }),
        Err(outcome) => return result(outcome, Vec::new()),
    };
    let rendered = match render(ctx, ov, key, &rctx).await {
        Ok(r) => r,
        Err(outcome) => return result(outcome, Vec::new()),
    };
    let res = match rendered {
        RenderedTask::Apply { objects } => {
            let claimant = kudo_engine::ownership::Claimant {
                name: inst.metadata.name.as_deref().unwrap_or_default(),
                namespace: inst.metadata.namespace.as_deref().unwrap_or("default"),
                uid: inst.metadata.uid.as_deref().unwrap_or_default(),
            };
            apply::run(
                ctx,
                &writer,
                &claimant,
                objects,
                recorded.previously_applied,
                changes,
                pass,
            )
            .await
        }
        RenderedTask::Delete { objects } => {
            let claimant = cluster_owned::claimant_of(inst);
            delete::run(ctx, &writer, &claimant, objects, changes).await
        }
        RenderedTask::Dummy {
            want_err,
            fatal,
            done,
        } => result(dummy_outcome(want_err, fatal, done, key.task()), Vec::new()),
        RenderedTask::KudoOperator { mut instance } => {
            // A child writes as its parent's account unless it names one.
            if instance.spec.service_account_name.is_none() {
                instance
                    .spec
                    .service_account_name
                    .clone_from(&inst.spec.service_account_name);
            }
            let parent = cluster_owned::claimant_of(inst);
            child::run(ctx, &writer, &parent, instance).await
        }
        RenderedTask::Pipe { pod, files } => pipe::run(ctx, &writer, &rctx, key, pod, files).await,
    };
    for note in &res.notes {
        ctx.say_once(inst, key, note.reason, &note.message).await;
    }
    match &res.outcome {
        TaskOutcome::Done => tracing::info!("task done"),
        TaskOutcome::InProgress { message } => tracing::info!(%message, "task in progress"),
        TaskOutcome::Transient { message } => {
            ctx.metrics.count_error("transient_task");
            tracing::warn!(%message, "task failed, will retry");
        }
        TaskOutcome::Fatal { message } => {
            ctx.metrics.count_error("fatal_task");
            tracing::error!(%message, "task failed fatally");
        }
    }
    res
}

pub(crate) fn result(outcome: TaskOutcome, objects: Vec<AppliedObject>) -> TaskResult {
    TaskResult {
        outcome,
        objects,
        notes: Vec::new(),
    }
}

fn dummy_outcome(want_err: bool, fatal: bool, done: bool, task: &str) -> TaskOutcome {
    match (want_err, fatal, done) {
        (true, true, _) => TaskOutcome::Fatal {
            message: format!("task {task}: dummy error"),
        },
        (true, false, _) => TaskOutcome::Transient {
            message: format!("task {task}: dummy error"),
        },
        (false, _, true) => TaskOutcome::Done,
        (false, _, false) => TaskOutcome::InProgress {
            message: format!("task {task}: Dummy task is not done"),
        },
    }
}

/// The render context of a task (names, `.Params`, `.Pipes`, and
/// `.Maintenance` from the Instance's `status.maintenance`). `.Params` are
/// the Instance's values with `execution`'s, the values given to this
/// execution alone, over them.
pub fn render_context(
    inst: &Instance,
    ov: &OperatorVersion,
    key: &TaskKey,
    execution: Option<&BTreeMap<String, String>>,
) -> Result<RenderContext, TaskOutcome> {
    let name = inst.metadata.name.clone().unwrap_or_default();
    let values =
        kudo_engine::execution::overlay(kudo_engine::select::spec_params(&inst.spec), execution);
    let params = kudo_package::params::template_values(&ov.spec, &values).map_err(|e| {
        TaskOutcome::Fatal {
            message: format!("parameters of Instance {name}: {e}"),
        }
    })?;
    Ok(RenderContext {
        instance_name: name.clone(),
        namespace: inst
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into()),
        instance_uid: inst.metadata.uid.clone(),
        plan: key.plan().to_string(),
        phase: key.phase().to_string(),
        step: key.step().to_string(),
        plan_uid: key.uid().to_string(),
        params,
        pipes: pipe_artifact_names(ov, key.plan(), &name),
        maintenance: MaintenanceContext::of_instance(inst),
        ..RenderContext::for_operator_version(ov)
    })
}

/// Render, resolving kinds the discovery cache does not know yet.
async fn render(
    ctx: &Context,
    ov: &Arc<OperatorVersion>,
    key: &TaskKey,
    rctx: &Arc<RenderContext>,
) -> Result<RenderedTask, TaskOutcome> {
    let mut asked = Vec::new();
    loop {
        let (ov, rctx, api) = (ov.clone(), rctx.clone(), ctx.api.clone());
        let task = key.task().to_string();
        let rendered = ctx
            .renders
            .run(move || render_task(&ov, &task, &rctx, &api))
            .await
            .map_err(|stalled| TaskOutcome::Fatal {
                message: format!("task {}: {stalled}", key.task()),
            })?;
        match rendered {
            Ok(r) => return Ok(r),
            Err(RenderError::UnknownKind {
                api_version, kind, ..
            }) if !asked.contains(&(api_version.clone(), kind.clone())) => {
                match ctx.api.resolve(&api_version, &kind).await {
                    Ok(_) => asked.push((api_version, kind)),
                    Err(e) => {
                        return Err(TaskOutcome::Transient {
                            message: format!("discovery of {kind} in {api_version}: {e}"),
                        });
                    }
                }
            }
            Err(e) if e.is_fatal() => {
                return Err(TaskOutcome::Fatal {
                    message: e.to_string(),
                });
            }
            Err(e) => {
                return Err(TaskOutcome::Transient {
                    message: e.to_string(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dummy_task_outcomes_follow_its_flags() {
        assert_eq!(dummy_outcome(false, false, true, "t"), TaskOutcome::Done);
        assert!(
            matches!(dummy_outcome(true, true, true, "t"), TaskOutcome::Fatal { message } if message == "task t: dummy error")
        );
        assert!(matches!(
            dummy_outcome(true, false, false, "t"),
            TaskOutcome::Transient { .. }
        ));
        assert!(matches!(
            dummy_outcome(false, false, false, "t"),
            TaskOutcome::InProgress { .. }
        ));
    }

    #[test]
    fn render_context_reads_maintenance_from_the_instance_status() {
        let ov = OperatorVersion::new("op-0.1.0", Default::default());
        let key = TaskKey::new("maintenance", "u", "p", "s", "t");
        let mut inst = Instance::new("zk", Default::default());
        let outside = render_context(&inst, &ov, &key, None).unwrap();
        assert_eq!(outside.maintenance, MaintenanceContext::default());
        inst.status = Some(kudo_api::InstanceStatus {
            maintenance: Some(kudo_api::InstanceMaintenance {
                nodes: vec!["n1".into()],
                start: serde_json::from_value(serde_json::json!("2024-05-01T02:00:00Z")).unwrap(),
                end: serde_json::from_value(serde_json::json!("2024-05-01T03:00:00Z")).unwrap(),
                response: kudo_api::MaintenanceResponse::Pending,
                message: String::new(),
                uid: Some("u".into()),
            }),
            ..Default::default()
        });
        let data = render_context(&inst, &ov, &key, None)
            .unwrap()
            .template_data();
        assert_eq!(
            data["Maintenance"],
            serde_json::json!({
                "Nodes": ["n1"],
                "Start": "2024-05-01T02:00:00Z",
                "End": "2024-05-01T03:00:00Z",
            })
        );
    }

    #[test]
    fn render_context_lays_the_executions_values_over_the_instances() {
        let ov: OperatorVersion = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "op-0.1.0"},
            "spec": {"parameters": [{"name": "BUCKET", "default": "main"}, {"name": "KEEP"}]}
        }))
        .unwrap();
        let key = TaskKey::new("backup", "u", "p", "s", "t");
        let mut inst = Instance::new("zk", Default::default());
        inst.spec.parameters = Some(BTreeMap::from([("KEEP".into(), "7".into())]));
        let own = render_context(&inst, &ov, &key, None).unwrap().params;
        assert_eq!(own["BUCKET"], "main");
        let run = BTreeMap::from([("BUCKET".to_string(), "x".to_string())]);
        let params = render_context(&inst, &ov, &key, Some(&run)).unwrap().params;
        assert_eq!(
            (params["BUCKET"].as_str(), params["KEEP"].as_str()),
            (Some("x"), Some("7"))
        );
    }
}
