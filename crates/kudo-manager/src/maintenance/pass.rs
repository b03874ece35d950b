//! One pass over the schedule: validate it, bring every Node to its mode,
//! drain the Down ones, find the affected Instances and their answers,
//! and record it all in the schedule's status.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use kudo_api::{
    MachineMode, MaintenanceSchedule, MaintenanceScheduleSpec, MaintenanceScheduleStatus,
    NodeMaintenance,
};
use kudo_engine::maintenance::nodes::{NodeChange, Target, marked, node_change, targets};
use kudo_engine::maintenance::{validate, validate_name};
use serde_json::{Map, Value, json};

use super::affected::Placements;
use super::drain::drain;
use crate::status_patch::merge_patch;
use crate::{Error, Result};

/// Finalizer on the schedule: deleting it ends the maintenance of every
/// node (taints and cordons removed) before it goes.
pub(super) const FINALIZER: &str = "kudo.dev/maintenance-cleanup";

/// What the pass found, for when to look again.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// A Down node still has pods to evict.
    pub draining: bool,
    /// Some node is scheduled.
    pub scheduled: bool,
}

/// One pass over `schedule`.
pub(super) async fn run(client: &Client, schedule: &MaintenanceSchedule) -> Result<Outcome> {
    let name = schedule.name_any();
    let deleting = schedule.metadata.deletion_timestamp.is_some();
    let mut status = MaintenanceScheduleStatus {
        observed_generation: schedule.metadata.generation,
        ..MaintenanceScheduleStatus::default()
    };
    if let Err(message) = validate_name(&name).and_then(|()| validate(&schedule.spec)) {
        status.message = format!("not acted on: {message}");
        write_status(client, schedule, &status).await?;
        return Ok(Outcome::default());
    }
    if !deleting {
        add_finalizer(client, schedule).await?;
    }
    let nothing = MaintenanceScheduleSpec::default();
    let spec = if deleting { &nothing } else { &schedule.spec };
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube("listing Nodes for node maintenance", e))?
        .items;
    let targets = targets(spec, &nodes);
    for node in &nodes {
        let node_name = node.name_any();
        let target = targets
            .iter()
            .find(|t| t.node.as_deref() == Some(node_name.as_str()));
        if target.is_none() && !marked(node) {
            continue;
        }
        if let Some(change) = node_change(node, target) {
            patch_node(client, node, change).await?;
        }
    }
    if deleting {
        return release(client, schedule).await.map(|()| Outcome::default());
    }

    let now = Timestamp::now();
    let previous = schedule
        .status
        .as_ref()
        .map(|s| s.nodes.as_slice())
        .unwrap_or_default();
    let mut placements = Placements::default();
    let mut outcome = Outcome {
        scheduled: !targets.is_empty(),
        ..Outcome::default()
    };
    for target in &targets {
        let mut entry = entry(target, previous, now);
        match &target.node {
            None => {
                entry.message = "no registered Node matches it yet; it stays scheduled".into();
            }
            Some(node) => {
                let pods = pods_on(client, node).await?;
                tracing::debug!(node, pods = pods.len(), "pods on a scheduled node");
                placements.add(client, &pods, node).await;
                if target.mode == MachineMode::Down {
                    let drained = drain(client, &pods).await;
                    tracing::debug!(node, left = drained.left, "drain pass");
                    entry.pods_left = Some(drained.left);
                    entry.message = drained.message();
                    outcome.draining |= drained.left > 0;
                    entry.blocked = drained.blocked;
                }
            }
        }
        status.nodes.push(entry);
    }
    status.instances = placements.answers(client).await?;
    status.draining = count(&targets, MachineMode::Draining);
    status.down = count(&targets, MachineMode::Down);
    status.next_window = targets
        .iter()
        .filter(|t| t.end > now)
        .map(|t| t.start)
        .min()
        .map(|t| t.to_string());
    write_status(client, schedule, &status).await?;
    Ok(outcome)
}

/// The status entry of a target; `since` is kept while its mode stays.
fn entry(target: &Target, previous: &[NodeMaintenance], now: Timestamp) -> NodeMaintenance {
    let since = previous
        .iter()
        .find(|p| p.machine == target.machine && p.mode == target.mode)
        .and_then(|p| p.since.clone())
        .unwrap_or(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    NodeMaintenance {
        machine: target.machine.clone(),
        node: target.node.clone(),
        mode: target.mode,
        since: Some(since),
        start: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            target.start,
        )),
        end: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            target.end,
        )),
        ..NodeMaintenance::default()
    }
}

fn count(targets: &[Target], mode: MachineMode) -> u32 {
    u32::try_from(targets.iter().filter(|t| t.mode == mode).count()).unwrap_or(u32::MAX)
}

async fn pods_on(client: &Client, node: &str) -> Result<Vec<Pod>> {
    let on_node = ListParams::default().fields(&format!("spec.nodeName={node}"));
    Api::<Pod>::all(client.clone())
        .list(&on_node)
        .await
        .map(|list| list.items)
        .map_err(|e| Error::kube(format!("listing the pods on node {node}"), e))
}

/// Applies `change` as a merge patch guarded by the Node's resourceVersion
/// (a concurrent change makes it fail, and the next pass judges again).
async fn patch_node(client: &Client, node: &Node, change: NodeChange) -> Result<()> {
    let name = node.name_any();
    let mut metadata = Map::new();
    if let Some(rv) = node.resource_version() {
        metadata.insert("resourceVersion".into(), Value::String(rv));
    }
    if !change.annotations.is_empty() {
        let annotations: Map<String, Value> = change
            .annotations
            .into_iter()
            .map(|(k, v)| (k, v.map_or(Value::Null, Value::String)))
            .collect();
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let mut spec = Map::new();
    let taints = serde_json::to_value(&change.taints).map_err(|source| Error::Serde {
        context: format!("serialising the taints of node {name}"),
        source,
    })?;
    spec.insert("taints".into(), taints);
    if let Some(unschedulable) = change.unschedulable {
        spec.insert("unschedulable".into(), Value::Bool(unschedulable));
    }
    let patch = json!({"metadata": metadata, "spec": spec});
    tracing::info!(node = %name, "updating node for maintenance");
    Api::<Node>::all(client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| Error::kube(format!("updating node {name} for maintenance"), e))?;
    Ok(())
}

async fn write_status(
    client: &Client,
    schedule: &MaintenanceSchedule,
    status: &MaintenanceScheduleStatus,
) -> Result<()> {
    let to_value = |s: Option<&MaintenanceScheduleStatus>| {
        serde_json::to_value(json!({ "status": s })).map_err(|source| Error::Serde {
            context: "serialising the MaintenanceSchedule status".into(),
            source,
        })
    };
    let old = to_value(schedule.status.as_ref())?;
    let new = to_value(Some(status))?;
    let patch = merge_patch(&old, &new);
    if patch.as_object().is_some_and(Map::is_empty) {
        return Ok(());
    }
    let name = schedule.name_any();
    Api::<MaintenanceSchedule>::all(client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            Error::kube(
                format!("writing the status of MaintenanceSchedule {name}"),
                e,
            )
        })?;
    Ok(())
}

async fn add_finalizer(client: &Client, schedule: &MaintenanceSchedule) -> Result<()> {
    if schedule.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(());
    }
    let patch =
        crate::status_patch::add_finalizer(schedule.metadata.finalizers.as_deref(), FINALIZER);
    patch_finalizers(client, schedule, patch, "adding the finalizer to").await
}

/// Removes the finalizer of a schedule being deleted, its nodes released.
async fn release(client: &Client, schedule: &MaintenanceSchedule) -> Result<()> {
    let Some(patch) = schedule
        .metadata
        .finalizers
        .as_deref()
        .and_then(|list| crate::status_patch::remove_finalizer(list, FINALIZER))
    else {
        return Ok(());
    };
    patch_finalizers(client, schedule, patch, "releasing").await
}

/// Sends one of `status_patch`'s guarded finalizer patches (a JSON patch).
async fn patch_finalizers(
    client: &Client,
    schedule: &MaintenanceSchedule,
    patch: Value,
    doing: &str,
) -> Result<()> {
    let name = schedule.name_any();
    let patch = serde_json::from_value(patch).map_err(|source| Error::Serde {
        context: "building the schedule's finalizer patch".into(),
        source,
    })?;
    Api::<MaintenanceSchedule>::all(client.clone())
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(|e| Error::kube(format!("{doing} MaintenanceSchedule {name}"), e))?;
    Ok(())
}
