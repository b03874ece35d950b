//! The contract between the engine and the manager: what goes into
//! [`decide`](crate::decide) and what comes out.
//!
//! The manager's reconcile loop:
//! 1. `decide` with the Instance, its OperatorVersion, what was observed so
//!    far in this reconcile (initially nothing) and `now`;
//! 2. execute the returned [`Action`]s, recording each task's
//!    [`TaskResult`] in [`Observed`];
//! 3. call `decide` again with the observations, until it returns no task
//!    to run that has not been run in this reconcile;
//! 4. write `Decision::status` if it differs from the stored status, and
//!    requeue after `Decision::requeue_after` (if any).
//!
//! Pass the *stored* Instance in every pass of one reconcile: each pass
//! recomputes the whole decision from it plus `observed`, so the Events and
//! finalizer actions to perform are those of the last pass (earlier passes
//! repeat them). Passing the previous pass's status instead also works: an
//! outcome applied twice changes nothing (a step already waiting for its
//! retry ignores a repeated transient error).
//!
//! `EngineConfig::default_maintenance_windows` should be checked with
//! [`crate::windows::validate`] when the manager starts; an invalid window
//! holds every step (with a blocker naming it).

use std::collections::BTreeMap;
use std::time::Duration;

use kudo_api::{AppliedObject, Instance, InstanceStatus, MaintenanceWindow, OperatorVersion};

/// Everything `decide` looks at.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The Instance: metadata (generation, deletionTimestamp, finalizers),
    /// spec and the stored status.
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
        }
    }
}

/// Identifies one task of one step of one plan execution.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey {
    /// Plan name.
    pub plan: String,
    /// Execution uid.
    pub uid: String,
    /// Phase name.
    pub phase: String,
    /// Step name.
    pub step: String,
    /// Task name (as in the step's `tasks` list).
    pub task: String,
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
}

/// Observations gathered by the executor during one reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// Task results by task.
    pub tasks: BTreeMap<TaskKey, TaskResult>,
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
    RunTask {
        /// Which task.
        key: TaskKey,
        /// Objects this task applied in an earlier run of the same step,
        /// to prune those it no longer renders.
        previously_applied: Vec<AppliedObject>,
    },
    /// Add the cleanup finalizer.
    AddFinalizer,
    /// Remove the cleanup finalizer (the Instance may go).
    RemoveFinalizer,
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
