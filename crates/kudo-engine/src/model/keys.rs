//! [`TaskKey`]: which task of which step of which plan execution.
//!
//! A big parallel plan emits thousands of RunTask actions per decide call,
//! so a key is one shared allocation holding all five names (cloning it is
//! a reference count increment), not five Strings.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kudo_api::names::RECOVERY_PLAN;
use kudo_api::{AppliedObject, InstanceStatus, OperatorVersion};

/// Name of the one step (and task) of each recovery phase.
pub const REAPPLY: &str = "reapply";

/// What kind of work a task is, so that the manager picks the code that
/// runs it without comparing plan or step names. (kudo-api's `TaskKind`
/// is the kind a package gives a task; this is the engine's view of a
/// task it asks to run.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskKind {
    /// A task of one of the OperatorVersion's plans: rendered and run as
    /// the package describes it.
    PlanTask,
    /// A plan task of kind `KudoOperator`: it creates or updates a child
    /// Instance.
    ChildInstance,
    /// A pod operation (`restartPod`, `replacePod`) in the recovery plan:
    /// the step names the operation, the task is the operation's id.
    PodOperation,
    /// The re-apply of a drifted object in the recovery plan: the phase
    /// names the object.
    Reapply,
}

/// Identifies one task of one step of one plan execution. Ordered, hashed
/// and compared by its names in the order plan, uid, phase, step, task.
#[derive(Clone)]
pub struct TaskKey {
    /// The five names back to back.
    text: Arc<str>,
    /// Where the plan, uid, phase and step names end in `text` (the task
    /// name runs to the end).
    ends: [u32; 4],
}

impl TaskKey {
    /// A key of the given names.
    ///
    /// # Panics
    /// If the names together are longer than 4 GiB (Kubernetes names are
    /// at most 253 bytes each).
    pub fn new(plan: &str, uid: &str, phase: &str, step: &str, task: &str) -> Self {
        let parts = [plan, uid, phase, step, task];
        let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut ends = [0u32; 4];
        for (i, part) in parts.iter().enumerate() {
            text.push_str(part);
            if let Some(end) = ends.get_mut(i) {
                #[allow(clippy::expect_used)]
                {
                    *end = u32::try_from(text.len()).expect("task key names under 4 GiB");
                }
            }
        }
        Self {
            text: Arc::from(text),
            ends,
        }
    }

    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends.get(i).map_or(self.text.len(), |e| *e as usize);
        &self.text[start..end]
    }

    /// Plan name.
    pub fn plan(&self) -> &str {
        self.part(0)
    }

    /// Execution uid.
    pub fn uid(&self) -> &str {
        self.part(1)
    }

    /// Phase name.
    pub fn phase(&self) -> &str {
        self.part(2)
    }

    /// Step name.
    pub fn step(&self) -> &str {
        self.part(3)
    }

    /// Task name (as in the step's `tasks` list).
    pub fn task(&self) -> &str {
        self.part(4)
    }

    /// The objects this task applied in an earlier run of the same step,
    /// as recorded in `status` (empty if the status has no such task): the
    /// executor prunes those the task no longer renders.
    pub fn previously_applied<'s>(&self, status: &'s InstanceStatus) -> &'s [AppliedObject] {
        status
            .plan_status
            .get(self.plan())
            .and_then(|plan| plan.phases.iter().find(|p| p.name == self.phase()))
            .and_then(|phase| phase.steps.iter().find(|s| s.name == self.step()))
            .and_then(|step| step.tasks.iter().find(|t| t.name == self.task()))
            .map_or(&[], |task| task.objects.as_slice())
    }

    /// The parameter values given for this task's execution
    /// (`spec.planExecution.parameters` when it started), as recorded in
    /// `status`; None when the plan status belongs to another execution or
    /// none were given. Renders read these, not spec, so a run keeps its
    /// values across manager restarts and later spec changes.
    pub fn execution_parameters<'s>(
        &self,
        status: &'s InstanceStatus,
    ) -> Option<&'s BTreeMap<String, String>> {
        status
            .plan_status
            .get(self.plan())
            .filter(|plan| plan.uid.as_deref() == Some(self.uid()))
            .map(|plan| &plan.parameters)
            .filter(|values| !values.is_empty())
    }
}

impl TaskKey {
    /// Whether the task's templates read the maintenance notice
    /// (`.Maintenance`): those of the maintenance plan, which the manager
    /// starts when it tells the Instance of a node's maintenance.
    pub fn reads_maintenance_notice(&self) -> bool {
        self.plan() == kudo_api::maintenance::MAINTENANCE_PLAN
    }

    /// What kind of task this is. `ov` is the OperatorVersion whose plan
    /// the task belongs to: it says which tasks create child Instances.
    /// Every task of the plan `recovery` is the engine's own (a re-apply
    /// or a pod operation).
    pub fn kind(&self, ov: Option<&OperatorVersion>) -> TaskKind {
        if self.plan() == RECOVERY_PLAN {
            return if self.step() == REAPPLY {
                TaskKind::Reapply
            } else {
                TaskKind::PodOperation
            };
        }
        let package_kind = ov
            .and_then(|ov| ov.spec.task(self.task()))
            .and_then(kudo_api::Task::task_kind);
        if package_kind == Some(kudo_api::TaskKind::KudoOperator) {
            TaskKind::ChildInstance
        } else {
            TaskKind::PlanTask
        }
    }
}

impl fmt::Debug for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskKey")
            .field("plan", &self.plan())
            .field("uid", &self.uid())
            .field("phase", &self.phase())
            .field("step", &self.step())
            .field("task", &self.task())
            .finish()
    }
}

/// The names of a task key, borrowed; the order is [`TaskKey`]'s, so
/// comparing them orders keys exactly as `TaskKey` does.
pub(crate) trait KeyParts {
    fn parts(&self) -> [&str; 5];
}

impl KeyParts for TaskKey {
    fn parts(&self) -> [&str; 5] {
        [
            self.plan(),
            self.uid(),
            self.phase(),
            self.step(),
            self.task(),
        ]
    }
}

impl PartialEq for TaskKey {
    fn eq(&self, other: &Self) -> bool {
        // The texts can be equal while the split points differ ("ab"+"c"
        // vs "a"+"bc"), so both must match.
        self.ends == other.ends && self.text == other.text
    }
}

impl Eq for TaskKey {}

impl PartialOrd for TaskKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TaskKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl Hash for TaskKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

/// A [`TaskKey`] of borrowed names, to look up [`crate::Observed::tasks`]
/// without allocating one.
pub(crate) struct TaskKeyRef<'a> {
    pub plan: &'a str,
    pub uid: &'a str,
    pub phase: &'a str,
    pub step: &'a str,
    pub task: &'a str,
}

impl KeyParts for TaskKeyRef<'_> {
    fn parts(&self) -> [&str; 5] {
        [self.plan, self.uid, self.phase, self.step, self.task]
    }
}

impl TaskKeyRef<'_> {
    /// The owned key, for an action that leaves the engine.
    pub fn to_owned_key(&self) -> TaskKey {
        TaskKey::new(self.plan, self.uid, self.phase, self.step, self.task)
    }
}

impl<'a> Borrow<dyn KeyParts + 'a> for TaskKey {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

impl PartialEq for dyn KeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyParts + '_ {}

impl PartialOrd for dyn KeyParts + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn KeyParts + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_come_back_as_given_even_when_empty() {
        let key = TaskKey::new("deploy", "", "nodes", "node-2", "app");
        assert_eq!(
            key.parts(),
            ["deploy", "", "nodes", "node-2", "app"],
            "{key:?}"
        );
        let empty = TaskKey::new("", "", "", "", "");
        assert_eq!(empty.parts(), [""; 5]);
    }

    #[test]
    fn keys_whose_names_concatenate_alike_are_different() {
        let a = TaskKey::new("ab", "c", "p", "s", "t");
        let b = TaskKey::new("a", "bc", "p", "s", "t");
        assert_ne!(a, b);
        assert_ne!(a.cmp(&b), Ordering::Equal);
        let set: HashSet<TaskKey> = [a.clone(), b, a].into_iter().collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn order_is_by_names_in_field_order() {
        let mut keys = [
            TaskKey::new("b", "u", "p", "s", "t"),
            TaskKey::new("a", "v", "p", "s", "t"),
            TaskKey::new("a", "u", "p", "s", "t2"),
            TaskKey::new("a", "u", "p", "s", "t"),
        ];
        keys.sort();
        let tasks: Vec<String> = keys
            .iter()
            .map(|k| format!("{}/{}/{}", k.plan(), k.uid(), k.task()))
            .collect();
        assert_eq!(tasks, ["a/u/t", "a/u/t2", "a/v/t", "b/u/t"]);
    }

    #[test]
    fn previously_applied_reads_the_tasks_objects_from_status() {
        let status: InstanceStatus = serde_json::from_value(serde_json::json!({
            "planStatus": {"deploy": {"name": "deploy", "phases": [{"name": "p", "steps": [
                {"name": "s", "tasks": [
                    {"name": "other", "objects": [{"apiVersion": "v1", "kind": "Secret", "name": "x"}]},
                    {"name": "t", "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}]}
                ]}
            ]}]}}
        }))
        .unwrap_or_else(|e| panic!("fixture: {e}"));
        let key = TaskKey::new("deploy", "u", "p", "s", "t");
        let objects = key.previously_applied(&status);
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].name, "cm");
        let unknown = TaskKey::new("deploy", "u", "p", "s", "nope");
        assert!(unknown.previously_applied(&status).is_empty());
    }

    #[test]
    fn a_task_is_a_reapply_a_pod_operation_a_child_instance_or_a_plan_task() {
        let task = |name: &str, kind: &str| kudo_api::Task {
            name: name.to_string(),
            kind: kind.to_string(),
            spec: Default::default(),
        };
        let ov = OperatorVersion::new(
            "op-1.0",
            kudo_api::OperatorVersionSpec {
                tasks: vec![task("child", "KudoOperator"), task("app", "Apply")],
                ..Default::default()
            },
        );
        let kind =
            |plan, phase, step, task, ov| TaskKey::new(plan, "u1", phase, step, task).kind(ov);
        let web = "Deployment ns/web";
        assert_eq!(
            kind(RECOVERY_PLAN, web, REAPPLY, REAPPLY, Some(&ov)),
            TaskKind::Reapply
        );
        assert_eq!(
            kind(RECOVERY_PLAN, "Pod ns/web-0", "restart", "op-7", Some(&ov)),
            TaskKind::PodOperation
        );
        assert_eq!(
            kind("deploy", "main", "child", "child", Some(&ov)),
            TaskKind::ChildInstance
        );
        assert_eq!(
            kind("deploy", "main", "app", "app", Some(&ov)),
            TaskKind::PlanTask
        );
        // A task the OperatorVersion does not have, or no OperatorVersion at
        // all, is run as a plan task (the executor says what is missing).
        assert_eq!(
            kind("deploy", "main", "x", "gone", Some(&ov)),
            TaskKind::PlanTask
        );
        assert_eq!(
            kind("deploy", "main", "child", "child", None),
            TaskKind::PlanTask
        );
    }
}
