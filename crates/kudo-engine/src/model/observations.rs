//! What the manager observed and reports back: task results, drifted
//! objects, maintenance notices.

use std::collections::BTreeMap;
use std::fmt;

use jiff::Timestamp;
use kudo_api::AppliedObject;

use super::health::{Health, object_label};
use super::keys::{KeyParts, TaskKey, TaskKeyRef};

/// What running a task produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The task finished: objects applied and healthy, deleted and gone, ...
    Done,
    /// Applied, but something is not healthy yet (not an error).
    InProgress {
        /// Which object, and why, e.g. `StatefulSet default/zk: 1 of 3 replicas ready`.
        message: String,
    },
    /// Failed in a way a retry may fix (ERROR, retried with backoff).
    Transient {
        /// The error, naming the object.
        message: String,
    },
    /// Failed in a way no retry fixes (FATAL_ERROR, the plan stops).
    Fatal {
        /// The error, naming the object or template.
        message: String,
    },
}

impl From<Health> for TaskOutcome {
    /// A task waiting for an object ends with its health: healthy is done,
    /// progressing is in progress (not an error), failed is fatal (no
    /// retry makes a failed Job or child plan succeed).
    fn from(health: Health) -> Self {
        match health {
            Health::Healthy => Self::Done,
            Health::Progressing(message) => Self::InProgress { message },
            Health::Failed(message) => Self::Fatal { message },
        }
    }
}

/// A task's outcome plus the objects it touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    /// Outcome.
    pub outcome: TaskOutcome,
    /// Objects applied (for pruning on later runs and for status).
    pub objects: Vec<AppliedObject>,
    /// What the task wants said even when it succeeds (e.g. an object applied
    /// in another API version than its template asked for): in the task's
    /// message and, once per plan run, as a Warning Event.
    pub notes: Vec<Note>,
}

/// Something a task wants said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Reason of its Event (`ApiVersionTranslated`, `ObjectUsedAsIs`, ...).
    pub reason: &'static str,
    /// The text.
    pub message: String,
}

impl Note {
    /// A note with its Event reason.
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// Observations gathered by the executor during one reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// Task results by task.
    pub tasks: BTreeMap<TaskKey, TaskResult>,
    /// Objects applied by plans that are no longer as those plans left
    /// them (the manager looks while recovery itself does not run).
    pub drift: Vec<Drift>,
    /// Node maintenance the Instance's pods are affected by (read from the
    /// MaintenanceSchedule's status).
    pub maintenance: Option<Notice>,
    /// Why the OperatorVersion cannot be used although it exists (it does
    /// not pass `package verify`): the Instance waits, saying so.
    pub operator_version_problem: Option<String>,
    /// That problem is only that its verification has not ended yet: an
    /// Instance being deleted keeps its finalizer (and its cleanup) until
    /// there is a verdict.
    pub operator_version_pending: bool,
    /// The automatically suppressed Instances of the Instance's namespace
    /// and its threshold (`None`: not counted, nothing holds).
    pub namespace: Option<super::namespace::NamespaceSuppressions>,
}

impl Observed {
    /// The result recorded for `key`, looked up without allocating.
    pub(crate) fn get(&self, key: &TaskKeyRef<'_>) -> Option<&TaskResult> {
        if self.tasks.is_empty() {
            return None;
        }
        self.tasks.get(key as &dyn KeyParts)
    }
}

/// An object a plan applied that is no longer as that plan left it, as the
/// manager observed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// The object, as recorded when it was applied.
    pub object: AppliedObject,
    /// What happened to it.
    pub cause: DriftCause,
}

/// What happened to a drifted object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriftCause {
    /// It is gone.
    Deleted,
    /// Fields kudo-manager owned are now owned by another field manager.
    Changed {
        /// The field manager that now owns the first of them, if any does.
        manager: Option<String>,
        /// The fields, e.g. `.spec.replicas` (a few, not necessarily all).
        fields: Vec<String>,
    },
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.object;
        let label = object_label(&o.kind, o.namespace.as_deref(), &o.name);
        match &self.cause {
            DriftCause::Deleted => write!(f, "{label} deleted"),
            DriftCause::Changed { manager, fields } => {
                write!(f, "{label}: {} changed", fields.join(", "))?;
                match manager {
                    Some(m) => write!(f, " by {m}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// What an Instance is told: the scheduled nodes its pods run on, and the
/// span of their windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Node names, sorted.
    pub nodes: Vec<String>,
    /// The earliest window start.
    pub start: Timestamp,
    /// The latest window end.
    pub end: Timestamp,
}

impl Notice {
    /// `node n1 scheduled for maintenance 2026-11-28T02:00:00Z–03:00:00Z`.
    pub fn describe(&self) -> String {
        describe_maintenance(&self.nodes, self.start, self.end)
    }
}

/// `node a, b scheduled for maintenance START–END`.
pub fn describe_maintenance(nodes: &[String], start: Timestamp, end: Timestamp) -> String {
    let noun = if nodes.len() == 1 { "node" } else { "nodes" };
    format!(
        "{noun} {} scheduled for maintenance {start}–{end}",
        nodes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key([plan, uid, phase, step, task]: [&str; 5]) -> TaskKey {
        TaskKey::new(plan, uid, phase, step, task)
    }

    fn done() -> TaskResult {
        TaskResult {
            outcome: TaskOutcome::Done,
            objects: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn borrowed_lookup_finds_exactly_the_key_with_the_same_names() {
        // Keys that differ in one field each, and names that are prefixes
        // of each other, so a wrong ordering would lose some of them.
        let keys = [
            ["deploy", "u1", "p", "s", "t"],
            ["deploy", "u1", "p", "s", "t2"],
            ["deploy", "u1", "p", "s1", "t"],
            ["deploy", "u1", "p1", "s", "t"],
            ["deploy", "u2", "p", "s", "t"],
            ["deploy2", "u1", "p", "s", "t"],
            ["deplo", "yu1", "p", "s", "t"],
            ["", "", "", "", ""],
        ];
        let mut observed = Observed::default();
        for (i, k) in keys.iter().enumerate() {
            let mut result = done();
            result.objects.push(AppliedObject {
                name: i.to_string(),
                ..Default::default()
            });
            observed.tasks.insert(key(*k), result);
        }
        for (i, [plan, uid, phase, step, task]) in keys.iter().enumerate() {
            let found = observed.get(&TaskKeyRef {
                plan,
                uid,
                phase,
                step,
                task,
            });
            assert_eq!(
                found.map(|r| r.objects[0].name.clone()),
                Some(i.to_string())
            );
        }
        let missing = TaskKeyRef {
            plan: "deploy",
            uid: "u1",
            phase: "p",
            step: "s",
            task: "t3",
        };
        assert!(observed.get(&missing).is_none());
        assert_eq!(
            missing.to_owned_key(),
            key(["deploy", "u1", "p", "s", "t3"])
        );
    }

    #[test]
    fn health_becomes_done_in_progress_or_fatal_with_its_message() {
        assert_eq!(TaskOutcome::from(Health::Healthy), TaskOutcome::Done);
        assert_eq!(
            TaskOutcome::from(Health::Progressing(
                "Deployment ns/web: 1 of 3 ready".into()
            )),
            TaskOutcome::InProgress {
                message: "Deployment ns/web: 1 of 3 ready".into()
            }
        );
        assert_eq!(
            TaskOutcome::from(Health::Failed("Job ns/migrate: failed".into())),
            TaskOutcome::Fatal {
                message: "Job ns/migrate: failed".into()
            }
        );
    }
}
