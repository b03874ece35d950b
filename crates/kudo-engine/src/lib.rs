//! # kudo-engine
//!
//! The pure plan engine of kudo-rs, shared by the controller and the
//! admission webhook so that what the webhook admits is exactly what the
//! controller does.
//!
//! ```text
//!  Instance (spec+status) ─┐
//!  OperatorVersion ────────┼─► decide(input) ─► Decision { status, actions, requeue_after }
//!  Observed task outcomes ─┤
//!  now ────────────────────┘
//!
//!  Instance (spec), OV, observed, now + &mut status ─► decide_in_place ─► Effects { actions, requeue_after, changed }
//! ```
//!
//! Pure: no tokio, no kube client, no clock (`now` is a parameter).
//!
//! # Rules
//!
//! - **Plan selection** ([`select`]): from spec vs what status recorded as
//!   consumed. Deletion with `cleanup` → cleanup (overrides a running plan);
//!   create → `deploy`; OperatorVersion change → first of `upgrade`,
//!   `update`, `deploy`; parameter change → its trigger (fallback `update`,
//!   then `deploy`; several triggers → nothing starts, a blocker says why);
//!   new `spec.planExecution.uid` → that plan. One plan runs at a time: a
//!   request for another plan is queued until the running one is terminal,
//!   a request for the same plan restarts it.
//! - **Strategies** ([`walk`]): `serial`/`parallel` over phases;
//!   `serial`, `parallel`, `serial-canary` (`canary`) and `parallel-canary`
//!   over steps (one `continue` releases step 0, the second the rest).
//!   Tasks of a step run in order.
//! - **Outcomes**: Done → COMPLETE; InProgress → IN_PROGRESS with message;
//!   Transient → ERROR and a retry at `now + backoff` (exponential, capped);
//!   Fatal → FATAL_ERROR for step and plan, absorbing until a new plan (or an
//!   explicit force-complete/restart).
//! - **Aggregation** ([`tree`], DC/OS `getAggregateStatus` restated for our
//!   seven statuses), first match wins for a phase over its steps and a plan
//!   over its phases:
//!   1. any child FATAL_ERROR → FATAL_ERROR;
//!   2. all children COMPLETE (or no children) → COMPLETE;
//!   3. any child ERROR → ERROR;
//!   4. the parent is paused → WAITING;
//!   5. any child IN_PROGRESS → IN_PROGRESS;
//!   6. any child WAITING → WAITING;
//!   7. some child COMPLETE and some PENDING → IN_PROGRESS;
//!   8. any child PENDING → PENDING;
//!   9. otherwise NEVER_RUN.
//! - **Holds**: a step that has not started yet starts only when eligible and
//!   not held by a pause (plan or phase), a manual suppression, a closed
//!   maintenance window (unless break-glass or cleanup) or a missing canary
//!   approval; held steps are WAITING and the reason is in `status.blockers`.
//!   Started steps finish under every hold.
//! - **Operations** ([`operations`]), **windows** ([`windows`]),
//!   **suppressions** ([`suppression`]), **Ready** ([`ready`]), **recovery**
//!   of drift ([`recovery`]), node **maintenance** ([`maintenance`]) and
//!   **admission** ([`admission`]) are described in their modules.
//! - **Tenancy** ([`tenancy`]): an Instance runs an OperatorVersion of its
//!   own namespace, or of another namespace that shares it with the
//!   Instance's; any other reference is a blocker (and refused by the
//!   webhook), worded the same whether the OperatorVersion exists or not.
//!
//! `decide` is deterministic, and an Instance with nothing to do gets its
//! stored status back unchanged, so the manager writes nothing while idle.

pub mod admission;
pub mod decision;
mod engine;
pub mod error;
pub mod facts;
pub mod health;
mod holds;
mod lifecycle;
pub mod maintenance;
pub mod operations;
pub mod outcome;
pub mod ownership;
pub mod params;
pub mod ready;
pub mod recovery;
pub mod recovery_fields;
pub mod recovery_pods;
pub mod select;
pub mod suppression;
mod task_key;
pub mod tenancy;
pub mod tree;
pub mod walk;
mod walk_output;
pub mod windows;

pub use decision::{
    Action, Decision, Effects, EngineConfig, EventType, Input, Note, Observed, TaskKey,
    TaskOutcome, TaskResult,
};
pub use error::EngineError;

/// Decides what to do next for one Instance (see [`decision`] for the loop
/// and the crate docs for the rules). Pure and deterministic: the same input
/// gives the same decision, and an idle Instance gets its stored status back
/// unchanged.
///
/// Copies the stored status (`input.instance.status`) into the Decision:
/// exactly [`decide_in_place`] on a clone of it.
pub fn decide(input: Input<'_>) -> Decision {
    engine::decide(input)
}

/// Decides what to do next for one Instance, updating `status` where it is
/// instead of copying it: `status` is the working copy (initially a clone
/// of the stored status) and `input.instance.status` is not read. The
/// returned [`Effects`] carry the actions, the requeue time and whether
/// `status` changed. Feed the same working copy into every pass of one
/// reconcile; see [`decision`] for what to do with the Events and actions
/// of each pass.
pub fn decide_in_place(input: Input<'_>, status: &mut kudo_api::InstanceStatus) -> Effects {
    engine::decide_in_place(input, status)
}

/// Wraps a timestamp as a Kubernetes `metav1.Time`.
pub(crate) fn time(ts: jiff::Timestamp) -> kudo_api::Time {
    kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts)
}
