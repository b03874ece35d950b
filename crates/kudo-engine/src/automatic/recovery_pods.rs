//! `restartPod` and `replacePod` operations (DC/OS `pod restart` and
//! `pod replace`): each becomes a phase of the recovery plan, named after
//! the pod, whose one step (`restart` or `replace`) runs one task named
//! after the operation id. The manager's task deletes the pod the operation
//! names (by uid, so only once) and is done when its controller has
//! started it again and it is ready; the phase shows until then.
//!
//! A pod operation joins a running recovery plan, or starts a new one
//! (beside a running plan, which stays the active one). It is refused
//! (recorded as a no-op) when the running plan's current or remaining
//! steps touch the pod's workload ([`crate::plan::assets`]): that plan
//! replaces its pods itself.

use jiff::Timestamp;
use kudo_api::names::RECOVERY_PLAN;
use kudo_api::{
    ExecutionStatus as S, Instance, InstanceStatus, OperatorVersion, PhaseStatus, PlanAction,
    PlanOperation, PlanStatus, StepStatus, TaskStatus,
};

use crate::model::facts::{event, recovery_running, running_plan};
use crate::model::{EngineConfig, EventType};
use crate::plan::assets::Dirtied;
use crate::plan::lifecycle::{start, start_beside};
use crate::plan::select::{Consumes, PlanRequest, Trigger, derived_uid};
use crate::plan::walk::WalkOutput;

/// Step name of a pod operation's phase, and the verb its messages use.
pub fn step_name(action: PlanAction) -> &'static str {
    match action {
        PlanAction::ReplacePod => "replace",
        _ => "restart",
    }
}

/// Most pods one recovery plan works on (a phase each).
pub const MAX_RECOVERY_PHASES: usize = 32;

/// Phase name of the operation on `pod` of an Instance in `namespace`.
pub fn phase_name(namespace: &str, pod: &str) -> String {
    format!("Pod {namespace}/{pod}")
}

/// The pod operation a recovery task carries out (its task is named after
/// the operation id).
pub fn operation_of<'i>(instance: &'i Instance, task: &str) -> Option<&'i PlanOperation> {
    instance
        .spec
        .plan_operations
        .iter()
        .find(|o| o.id == task && o.action.is_pod())
}

/// Applies the pod operations of spec not yet recorded; whether the status
/// changed.
pub(crate) fn apply_new(
    inst: &Instance,
    ov: &OperatorVersion,
    st: &mut InstanceStatus,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> bool {
    let wanted = |o: &PlanOperation| o.action.is_pod();
    crate::plan::operations::apply_each(inst, st, now, wanted, |op, st| {
        apply_one(inst, ov, op, st, config, now, out)
    })
}

fn apply_one(
    inst: &Instance,
    ov: &OperatorVersion,
    op: &PlanOperation,
    st: &mut InstanceStatus,
    config: &EngineConfig,
    now: Timestamp,
    out: &mut WalkOutput,
) -> String {
    let (Some(pod), Some(_)) = (op.pod.as_deref(), op.pod_uid.as_deref()) else {
        return format!("no-op: {} needs the pod's name and uid", op.action);
    };
    let namespace = inst.metadata.namespace.as_deref().unwrap_or("default");
    let running = running_plan(st).filter(|p| p != RECOVERY_PLAN);
    if let Some(running) = &running
        && let Some(claim) = Dirtied::of_status(ov, running, st).claim_pod(Some(namespace), pod)
    {
        return format!(
            "no-op: plan {running:?} is working on pod {pod}'s workload ({claim}); {} it after \
             the plan ends",
            step_name(op.action)
        );
    }
    let phase = PhaseStatus {
        name: phase_name(namespace, pod),
        status: Some(S::Pending),
        steps: vec![StepStatus {
            name: step_name(op.action).to_string(),
            status: Some(S::Pending),
            tasks: vec![TaskStatus {
                name: op.id.clone(),
                ..TaskStatus::default()
            }],
            ..StepStatus::default()
        }],
        ..PhaseStatus::default()
    };
    let who = format!(
        "{}{}",
        op.requested_by.as_deref().unwrap_or("unknown"),
        op.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    );
    let cause = format!("pod {pod}: {} requested by {who}", step_name(op.action));
    if recovery_running(st)
        && let Some(ps) = st.plan_status.get_mut(RECOVERY_PLAN)
    {
        // One pending operation per pod, and a bounded plan: spec may hold
        // hundreds of operations for a pod that never gets ready.
        if ps
            .phases
            .iter()
            .any(|p| p.name == phase.name && !p.status().is_terminal())
        {
            return format!(
                "no-op: the running recovery plan already works on pod {pod}; {} it after \
                 the plan ends",
                step_name(op.action)
            );
        }
        if ps.phases.len() >= MAX_RECOVERY_PHASES {
            return format!(
                "no-op: the running recovery plan already holds {MAX_RECOVERY_PHASES} pods; {} \
                 pod {pod} after the plan ends",
                step_name(op.action)
            );
        }
        // Joins the running recovery plan.
        ps.phases.push(phase);
        out.actions
            .push(event(EventType::Normal, "PodOperation", cause));
        return format!(
            "{} of pod {pod} added to the running recovery plan",
            step_name(op.action)
        );
    }
    st.plan_status.insert(
        RECOVERY_PLAN.to_string(),
        PlanStatus {
            name: RECOVERY_PLAN.to_string(),
            phases: vec![phase],
            ..PlanStatus::default()
        },
    );
    let req = PlanRequest {
        plan: RECOVERY_PLAN.to_string(),
        uid: derived_uid(inst, RECOVERY_PLAN, &op.id),
        trigger: Trigger::Recovery(cause.clone()),
        break_glass: false,
        consumes: Consumes::Nothing,
        parameters: Default::default(),
    };
    match running {
        Some(_) => start_beside(inst, st, &req, config, now, out),
        None => start(inst, st, &req, config, now, out),
    }
    out.actions
        .push(event(EventType::Normal, "PodOperation", cause));
    format!(
        "{} of pod {pod} started in plan recovery",
        step_name(op.action)
    )
}

/// Why a pod may not be restarted or replaced through an Instance: it must
/// carry the Instance's `kudo.dev/instance` label (kudo-rs puts it on every
/// pod template it renders).
pub fn check_belongs(
    pod: &kudo_api::k8s_openapi::api::core::v1::Pod,
    instance: &str,
) -> Result<(), String> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let label = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(kudo_api::names::INSTANCE_LABEL));
    match label {
        Some(owner) if owner == instance => Ok(()),
        Some(owner) => Err(format!(
            "pod {name} belongs to Instance {owner}, not {instance}"
        )),
        None => Err(format!(
            "pod {name} does not belong to Instance {instance} (it has no {} label)",
            kudo_api::names::INSTANCE_LABEL
        )),
    }
}

/// The PersistentVolumeClaims a replace deletes: those of the pod's volumes
/// that its StatefulSet created from a volumeClaimTemplate
/// (`<template>-<pod>`). Other claims the pod mounts are shared or foreign
/// and stay.
pub fn replaced_claims(
    pod: &kudo_api::k8s_openapi::api::core::v1::Pod,
    statefulset: &kudo_api::k8s_openapi::api::apps::v1::StatefulSet,
) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let templates: Vec<String> = statefulset
        .spec
        .volume_claim_templates
        .iter()
        .flatten()
        .filter_map(|t| t.metadata.name.as_deref())
        .map(|t| format!("{t}-{pod_name}"))
        .collect();
    pod.spec
        .as_ref()
        .into_iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .filter(|c| templates.contains(c))
        .collect()
}

/// The StatefulSet that controls a pod, by name.
pub fn statefulset_of(pod: &kudo_api::k8s_openapi::api::core::v1::Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "StatefulSet" && o.controller == Some(true))
        .map(|o| o.name.as_str())
}

#[cfg(test)]
mod tests {
    use kudo_api::k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
    use kudo_api::k8s_openapi::api::core::v1::{
        PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume,
    };
    use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;

    fn pod(labels: &[(&str, &str)], claims: &[&str]) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("zk-1".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                owner_references: Some(vec![OwnerReference {
                    kind: "StatefulSet".into(),
                    name: "zk".into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                volumes: Some(
                    claims
                        .iter()
                        .map(|c| Volume {
                            name: c.to_string(),
                            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                                claim_name: c.to_string(),
                                ..Default::default()
                            }),
                            ..Volume::default()
                        })
                        .collect(),
                ),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn a_pod_belongs_to_the_instance_its_label_names() {
        assert!(check_belongs(&pod(&[("kudo.dev/instance", "zk")], &[]), "zk").is_ok());
        let other = check_belongs(&pod(&[("kudo.dev/instance", "kafka")], &[]), "zk");
        assert_eq!(
            other.unwrap_err(),
            "pod zk-1 belongs to Instance kafka, not zk"
        );
        let none = check_belongs(&pod(&[], &[]), "zk").unwrap_err();
        assert!(none.contains("has no kudo.dev/instance label"), "{none}");
    }

    #[test]
    fn only_claims_from_the_statefulset_templates_are_replaced() {
        let sts = StatefulSet {
            spec: StatefulSetSpec {
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("data".into()),
                        ..ObjectMeta::default()
                    },
                    ..PersistentVolumeClaim::default()
                }]),
                ..StatefulSetSpec::default()
            },
            ..StatefulSet::default()
        };
        let p = pod(&[], &["data-zk-1", "shared-backup", "data-zk-0"]);
        assert_eq!(replaced_claims(&p, &sts), ["data-zk-1"]);
        assert_eq!(statefulset_of(&p), Some("zk"));
    }
}
