//! Pipe tasks (KUDO's semantics): apply the pipe pod, wait until it is
//! Running and Ready (its init container wrote the files into the shared
//! emptyDir), copy each file out of the `waiter` container, store it in a
//! Secret or ConfigMap named as rendering computed (`.Pipes.<key>`), then
//! delete the pod. Decisions are pure ([`super::pipe_state`],
//! [`super::pipe_artifact`]); this module does the API calls. Why re-running
//! it is safe is explained in [`super::pipe_state`].

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, DeleteParams};
use kudo_api::AppliedObject;
use kudo_engine::{TaskKey, TaskOutcome, TaskResult};
use kudo_package::render::{EnhanceMode, PipeFile, RenderContext, enhance_object};
use serde_json::Value;

use super::apply::{apply_object, object_identity};
use super::pipe_artifact::build_artifact;
use super::pipe_exec::{KubeExec, PodExec, copy_files};
use super::pipe_state::{PipeAction, artifacts_matter, next_action, pod_label, stamped_with};
use crate::classify::{object_label, outcome_for};
use crate::context::Context;
use crate::identity::Writer;

/// Runs one pass of a Pipe task.
pub(super) async fn run(
    ctx: &Context,
    writer: &Writer,
    rctx: &RenderContext,
    key: &TaskKey,
    pod: Value,
    files: Vec<PipeFile>,
) -> TaskResult {
    // Exec and the artifact reads run as the Instance's account too.
    let exec = KubeExec::new(writer.client.clone());
    let pod_id = object_identity(&pod);
    let artifacts = artifact_ids(&pod_id, &files);
    match pass(ctx, writer, &exec, rctx, key, &pod, &files).await {
        Ok(Progress::Done) => TaskResult {
            outcome: TaskOutcome::Done,
            objects: artifacts,
            notes: Vec::new(),
        },
        Ok(Progress::Waiting(message)) => TaskResult {
            outcome: TaskOutcome::InProgress { message },
            objects: vec![pod_id],
            notes: Vec::new(),
        },
        Err(outcome) => {
            if matches!(outcome, TaskOutcome::Fatal { .. }) {
                discard_pod(writer, &pod_id).await;
            }
            TaskResult {
                outcome,
                objects: vec![pod_id],
                notes: Vec::new(),
            }
        }
    }
}

/// After a fatal failure the pod goes too, so that restarting the step runs
/// the init container again instead of failing on the same pod (the
/// failure's details are in the step message). Best effort.
async fn discard_pod(writer: &Writer, pod: &AppliedObject) {
    let ns = pod.namespace.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(writer.client.clone(), &ns);
    let label = object_label("Pod", Some(&ns), &pod.name);
    if let Err(outcome) = delete_pod(&pods, &pod.name, &label).await {
        tracing::warn!(pod = %label, ?outcome, "could not delete the pipe pod of a failed step");
    }
}

enum Progress {
    Done,
    Waiting(String),
}

fn artifact_ids(pod: &AppliedObject, files: &[PipeFile]) -> Vec<AppliedObject> {
    files
        .iter()
        .map(|f| AppliedObject {
            api_version: "v1".into(),
            kind: f.kind.clone(),
            namespace: pod.namespace.clone(),
            name: f.artifact_name.clone(),
        })
        .collect()
}

async fn pass<E: PodExec>(
    ctx: &Context,
    writer: &Writer,
    exec: &E,
    rctx: &RenderContext,
    key: &TaskKey,
    pod: &Value,
    files: &[PipeFile],
) -> Result<Progress, TaskOutcome> {
    let id = object_identity(pod);
    let ns = id.namespace.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    // The pod is created and deleted as the Instance's account; reads are the manager's.
    let writer_pods: Api<Pod> = Api::namespaced(writer.client.clone(), &ns);
    let label = pod_label(pod);
    let live = match pods.get_opt(&id.name).await {
        Ok(p) => p.and_then(|p| serde_json::to_value(p).ok()),
        Err(e) => return Err(outcome_for(&label, &e)),
    };
    let copied =
        artifacts_matter(live.as_ref()) && copied_in(writer, &ns, files, key.uid()).await?;
    let mut action = next_action(live.as_ref(), key.uid(), copied);
    if action == PipeAction::CreatePod {
        let stored = apply_object(ctx, writer, pod).await?;
        tracing::info!(pod = %label, "created the pipe pod");
        action = next_action(Some(&stored), key.uid(), false);
    }
    match action {
        PipeAction::AlreadyCopied => Ok(Progress::Done),
        PipeAction::CreatePod => Ok(Progress::Waiting(format!("{label} is being created"))),
        PipeAction::Wait(message) => Ok(Progress::Waiting(message)),
        PipeAction::Fail(message) => Err(TaskOutcome::Fatal { message }),
        PipeAction::DeletePod(message) => {
            delete_pod(&writer_pods, &id.name, &label).await?;
            Ok(Progress::Waiting(message))
        }
        PipeAction::Copy => {
            let contents = copy_files(exec, &ns, &id.name, files).await?;
            store_artifacts(ctx, writer, rctx, key, files, contents).await?;
            delete_pod(&writer_pods, &id.name, &label).await?;
            tracing::info!(pod = %label, files = files.len(), "copied the pipe files and deleted the pipe pod");
            Ok(Progress::Done)
        }
    }
}

/// Whether every artifact exists and was written in this plan execution.
async fn copied_in(
    writer: &Writer,
    ns: &str,
    files: &[PipeFile],
    plan_uid: &str,
) -> Result<bool, TaskOutcome> {
    for f in files {
        let label = object_label(&f.kind, Some(ns), &f.artifact_name);
        let found = if f.kind == "Secret" {
            Api::<Secret>::namespaced(writer.client.clone(), ns)
                .get_opt(&f.artifact_name)
                .await
                .map(|o| o.and_then(|o| serde_json::to_value(o).ok()))
        } else {
            Api::<ConfigMap>::namespaced(writer.client.clone(), ns)
                .get_opt(&f.artifact_name)
                .await
                .map(|o| o.and_then(|o| serde_json::to_value(o).ok()))
        };
        match found {
            Ok(Some(obj)) if stamped_with(&obj, plan_uid) => {}
            Ok(_) => return Ok(false),
            Err(e) => return Err(outcome_for(&label, &e)),
        }
    }
    Ok(true)
}

/// Builds, enhances (KUDO's labels, annotations, owner reference) and
/// applies the artifacts.
async fn store_artifacts(
    ctx: &Context,
    writer: &Writer,
    rctx: &RenderContext,
    key: &TaskKey,
    files: &[PipeFile],
    contents: Vec<Vec<u8>>,
) -> Result<(), TaskOutcome> {
    for (file, content) in files.iter().zip(contents) {
        let mut artifact = build_artifact(file, &content).map_err(|why| TaskOutcome::Fatal {
            message: format!("task {}: {why}", key.task()),
        })?;
        enhance_object(&mut artifact, rctx, true, EnhanceMode::Apply);
        apply_object(ctx, writer, &artifact).await?;
    }
    Ok(())
}

async fn delete_pod(pods: &Api<Pod>, name: &str, label: &str) -> Result<(), TaskOutcome> {
    match pods.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(outcome_for(label, &e)),
    }
}
