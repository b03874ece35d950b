//! The contract between the engine and the manager: what goes into
//! [`decide`](crate::decide) and [`decide_in_place`](crate::decide_in_place)
//! and what comes out.
//!
//! The manager's reconcile loop:
//! 1. decide with the Instance, its OperatorVersion, what was observed so
//!    far in this reconcile (initially nothing) and `now`;
//! 2. execute the returned [`Action`]s, recording each task's
//!    [`TaskResult`] in [`Observed`];
//! 3. decide again with the observations, until no task is returned that
//!    has not been run in this reconcile;
//! 4. write the status if it changed, and requeue after `requeue_after`
//!    (if any).
//!
//! # Two entry points
//!
//! [`decide`](crate::decide) reads the stored status from
//! `input.instance.status` and returns a new one in [`Decision`]. It copies
//! the whole status tree on every call (milliseconds at 10,000 steps). Pass
//! the *stored* Instance in every pass of one reconcile: each pass
//! recomputes the whole decision from it plus `observed`, so the Events and
//! finalizer actions to perform are those of the last pass (earlier passes
//! repeat them).
//!
//! [`decide_in_place`](crate::decide_in_place) takes the status as a
//! separate working copy and updates it where it is; `input.instance.status`
//! is not read. [`Effects::changed`] says whether the call changed the
//! working copy (tracked while it is mutated, no deep comparison). The
//! intended use is one working copy per reconcile, cloned once from the
//! stored status and fed back into every pass:
//! - each pass continues from the previous one; an outcome applied twice
//!   changes nothing (a step already waiting for its retry ignores a
//!   repeated transient error, a COMPLETE task is not looked up again);
//! - Events are reported once, in the pass where they happen: emit the
//!   Events of every pass (warnings about a missing OperatorVersion or a
//!   failed cleanup repeat in every pass; drop identical repeats);
//! - finalizer actions, RunTask actions and `requeue_after` are those of
//!   the last pass;
//! - the status can differ from the stored one only if some pass reported
//!   `changed`; a later pass can undo an earlier change (the first pass of
//!   a reconcile drops a WaitingForResource blocker that the next pass,
//!   with the task re-checked, adds back), so when some pass changed it,
//!   compare with the stored status once before writing.
//!
//! Feeding back lets later passes see what earlier ones consumed, so a
//! reconcile can get further than the stored-Instance loop of `decide`,
//! which the next reconcile would otherwise do: a request waiting in spec
//! behind the plan started in this reconcile is already queued (or, naming
//! the same plan, restarts it); the Ready condition's `lastTransitionTime`
//! records a transition within the reconcile; a finished plan restarted
//! and finished again within one reconcile gets its `finishedAt` and
//! `PlanFinished` Event (the stored-Instance loop misses them, because the
//! stored status already shows that execution as finished). Timestamps are
//! those of the pass in which something happened.
//!
//! `decide(input)` is exactly `decide_in_place` on a clone of the stored
//! status.
//!
//! `EngineConfig::default_maintenance_windows` should be checked with
//! [`crate::windows::validate`] when the manager starts; an invalid window
//! holds every step (with a blocker naming it).

use std::collections::BTreeMap;
use std::time::Duration;

use kudo_api::{AppliedObject, Instance, InstanceStatus, MaintenanceWindow, OperatorVersion};

pub use crate::task_key::TaskKey;
pub(crate) use crate::task_key::{KeyParts, TaskKeyRef};

/// Everything `decide` looks at (`decide_in_place` takes the status
/// separately and ignores `instance.status`).
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The Instance: metadata (generation, deletionTimestamp, finalizers),
    /// spec and (for `decide` only) the stored status.
    pub instance: &'a Instance,
    /// The OperatorVersion `spec.operatorVersion` names; `None` if it does
    /// not exist (the plan cannot run; status says why).
    pub operator_version: Option<&'a OperatorVersion>,
    /// Outcomes of tasks run so far in this reconcile.
    pub observed: &'a Observed,
    /// The current time.
    pub now: jiff::Timestamp,
    /// Manager-wide settings.
    pub config: &'a EngineConfig,
}

/// Manager-wide engine settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// First retry delay after a step goes to ERROR.
    pub initial_backoff: Duration,
    /// Cap of the retry delay.
    pub max_backoff: Duration,
    /// Default maintenance windows, intersected with the Instance's.
    pub default_maintenance_windows: Vec<MaintenanceWindow>,
    /// Whether a plan ending in FATAL_ERROR suppresses further automatic plans.
    pub auto_suppress_on_failure: bool,
    /// How long an automatic suppression lasts (`None`: until cleared).
    pub auto_suppression_duration: Option<Duration>,
    /// Executions kept in `status.history`.
    pub history_limit: usize,
    /// Whether drift starts the `recovery` plan (`spec.recovery` can turn
    /// it off per Instance).
    pub recovery: bool,
    /// Wait after an object's first recovery within an hour before the
    /// next; it doubles with each further one (capped at an hour).
    pub recovery_backoff: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_secs(2),
            max_backoff: Duration::from_secs(300),
            default_maintenance_windows: Vec::new(),
            auto_suppress_on_failure: true,
            auto_suppression_duration: None,
            history_limit: 20,
            recovery: true,
            recovery_backoff: crate::recovery::BACKOFF_BASE,
        }
    }
}

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
    /// them (the manager looks only while no plan runs).
    pub drift: Vec<crate::recovery::Drift>,
    /// Node maintenance the Instance's pods are affected by (read from the
    /// MaintenanceSchedule's status).
    pub maintenance: Option<crate::maintenance::Notice>,
    /// Why the OperatorVersion cannot be used although it exists (it does
    /// not pass `package verify`): the Instance waits, saying so.
    pub operator_version_problem: Option<String>,
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

/// Kubernetes Event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

/// Something the manager must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run (or keep running: re-apply and check health) a task of a step.
    /// The objects it applied in an earlier run of the same step (to
    /// prune those it no longer renders) are in the status:
    /// [`TaskKey::previously_applied`].
    RunTask {
        /// Which task.
        key: TaskKey,
    },
    /// Add the cleanup finalizer.
    AddFinalizer,
    /// Remove the cleanup finalizer (the Instance may go).
    RemoveFinalizer,
    /// Delete these cluster-scoped objects of the Instance (before the
    /// finalizer goes; best effort).
    DeleteClusterScoped {
        /// The objects, as applied.
        objects: Vec<AppliedObject>,
    },
    /// Record an Event on the Instance.
    Event {
        /// Normal or Warning.
        event_type: EventType,
        /// Reason, e.g. `PlanStarted`.
        reason: String,
        /// Message, e.g. `Execution of plan deploy started`.
        message: String,
    },
}

/// What `decide` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The new status (write it only if it differs from the stored one).
    pub status: InstanceStatus,
    /// What to do now.
    pub actions: Vec<Action>,
    /// When to look again even without a watch event (retry backoff,
    /// window opening, suppression ending); `None` while idle.
    pub requeue_after: Option<Duration>,
}

/// What `decide_in_place` returns besides the updated status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// What to do now (as [`Decision::actions`]).
    pub actions: Vec<Action>,
    /// When to look again (as [`Decision::requeue_after`]).
    pub requeue_after: Option<Duration>,
    /// Whether the call changed the status it was given.
    pub changed: bool,
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
}
