//! Small facts and constructors that the engine's passes share: which plan
//! runs, an Event action, a plain blocker. A leaf module, so that
//! `engine`, `lifecycle` and `holds` depend on it rather than on each other.

use kudo_api::{AppliedObject, Blocker, BlockerKind, InstanceStatus};

use crate::model::{Action, EventType};

/// The active plan, if it is still running.
pub(crate) fn running_plan(st: &InstanceStatus) -> Option<String> {
    let active = st.active_plan.as_ref()?;
    st.plan_status
        .get(&active.name)
        .filter(|p| p.status().is_running())
        .map(|_| active.name.clone())
}

/// Whether the recovery plan runs, as the active plan or beside it.
pub(crate) fn recovery_running(st: &InstanceStatus) -> bool {
    st.plan_status
        .get(kudo_api::names::RECOVERY_PLAN)
        .is_some_and(|p| p.status().is_running())
}

/// Whether the recovery plan runs beside the active plan (which stays the
/// plan a user or a change asked for).
pub(crate) fn recovery_beside(st: &InstanceStatus) -> bool {
    recovery_running(st)
        && st
            .active_plan
            .as_ref()
            .is_some_and(|a| a.name != kudo_api::names::RECOVERY_PLAN)
}

/// `(namespace, name)` of an Instance, as messages name it.
pub(crate) fn identity_of(instance: &kudo_api::Instance) -> (&str, &str) {
    (
        instance.metadata.namespace.as_deref().unwrap_or("default"),
        instance.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// A blocker of kind Other with this message.
pub(crate) fn other(message: String) -> Blocker {
    Blocker {
        kind: BlockerKind::Other,
        message,
        ..Default::default()
    }
}

/// An Event action.
pub(crate) fn event(event_type: EventType, reason: &str, message: String) -> Action {
    Action::Event {
        event_type,
        reason: reason.to_string(),
        message,
    }
}

/// Cluster-scoped objects the Instance's plans applied: they cannot carry an
/// owner reference to a namespaced Instance, so the garbage collector never
/// removes them and the Instance keeps its finalizer until they are deleted.
pub fn cluster_scoped_objects(status: &InstanceStatus) -> Vec<AppliedObject> {
    let mut out: Vec<AppliedObject> = status
        .plan_status
        .values()
        .flat_map(|p| &p.phases)
        .flat_map(|ph| &ph.steps)
        .flat_map(|st| &st.tasks)
        .flat_map(|t| &t.objects)
        .filter(|o| o.namespace.is_none())
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Let the Instance go: delete its cluster-scoped objects, then remove the
/// finalizer.
pub(crate) fn release(status: &InstanceStatus, actions: &mut Vec<Action>) {
    let objects = cluster_scoped_objects(status);
    if !objects.is_empty() {
        actions.push(Action::DeleteClusterScoped { objects });
    }
    actions.push(Action::RemoveFinalizer);
}

#[cfg(test)]
mod tests {
    use kudo_api::{PhaseStatus, PlanStatus, StepStatus, TaskStatus};

    use super::*;

    fn obj(kind: &str, ns: Option<&str>, name: &str) -> AppliedObject {
        AppliedObject {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn only_cluster_scoped_objects_are_collected_once() {
        let task = |objects| TaskStatus {
            name: "t".into(),
            objects,
            ..TaskStatus::default()
        };
        let plan = PlanStatus {
            phases: vec![PhaseStatus {
                steps: vec![StepStatus {
                    tasks: vec![
                        task(vec![
                            obj("Namespace", None, "team"),
                            obj("ConfigMap", Some("a"), "c"),
                        ]),
                        task(vec![obj("Namespace", None, "team")]),
                    ],
                    ..StepStatus::default()
                }],
                ..PhaseStatus::default()
            }],
            ..PlanStatus::default()
        };
        let mut status = InstanceStatus::default();
        status.plan_status.insert("deploy".into(), plan);
        assert_eq!(
            cluster_scoped_objects(&status),
            vec![obj("Namespace", None, "team")]
        );
        let mut actions = Vec::new();
        release(&status, &mut actions);
        assert_eq!(
            actions,
            vec![
                Action::DeleteClusterScoped {
                    objects: vec![obj("Namespace", None, "team")]
                },
                Action::RemoveFinalizer
            ]
        );
    }
}
