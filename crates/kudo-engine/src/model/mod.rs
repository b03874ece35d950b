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
//! `windows::validate` when the manager starts; an invalid window
//! holds every step (with a blocker naming it).
//!
//! The model is the engine's lowest layer: the types that go in and come
//! out, and small facts about them. It imports nothing else of the crate.

mod actions;
pub mod error;
pub mod facts;
pub mod health;
mod inputs;
pub mod keys;
pub mod namespace;
mod observations;
pub mod outcome;
pub mod subject;

pub use actions::{Action, Decision, Effects, EventType};
pub use inputs::{EngineConfig, Input, RECOVERY_BACKOFF_BASE};
pub use keys::{REAPPLY, TaskKey, TaskKind};
pub use observations::{
    Drift, DriftCause, Note, Notice, Observed, TaskOutcome, TaskResult, describe_maintenance,
};

/// Wraps a timestamp as a Kubernetes `metav1.Time`.
pub(crate) fn time(ts: jiff::Timestamp) -> kudo_api::Time {
    kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts)
}
