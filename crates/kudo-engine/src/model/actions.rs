//! What comes out of a decision: the actions for the manager, the new
//! status and when to look again.

use std::time::Duration;

use kudo_api::{AppliedObject, InstanceStatus};

use super::TaskKey;

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
