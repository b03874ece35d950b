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
//!
//! # Layers
//!
//! Each module imports only from its own layer or a lower one (the test
//! `tests/layers.rs` fails on an import that reaches up):
//!
//! 0. [`model`]: inputs, observations, actions, task keys, health;
//! 1. [`plan`]: the plan walk and its rules;
//! 2. [`automatic`]: recovery, pod operations, node maintenance;
//! 3. `decide` and [`admission`]: the entry points.
//!
//! The modules are also re-exported here by their own names
//! (`kudo_engine::walk`, `kudo_engine::recovery`, ...).

pub mod admission;
pub mod automatic;
mod decide;
pub mod model;
pub mod plan;

pub use automatic::{maintenance, recovery, recovery_fields, recovery_pods};
pub use model::error::EngineError;
pub use model::{
    Action, Decision, Effects, EngineConfig, EventType, Input, Note, Observed, TaskKey, TaskKind,
    TaskOutcome, TaskResult, error, facts, health, namespace, outcome,
};
pub use plan::{
    assets, blocked, execution, namespace_hold, operations, ownership, params, ready, select,
    suppression, tenancy, tree, walk, windows,
};

/// Decides what to do next for one Instance (see [`model`] for the loop
/// and the crate docs for the rules). Pure and deterministic: the same input
/// gives the same decision, and an idle Instance gets its stored status back
/// unchanged.
///
/// Copies the stored status (`input.instance.status`) into the Decision:
/// exactly [`decide_in_place`] on a clone of it.
pub fn decide(input: Input<'_>) -> Decision {
    decide::decide(input)
}

/// Decides what to do next for one Instance, updating `status` where it is
/// instead of copying it: `status` is the working copy (initially a clone
/// of the stored status) and `input.instance.status` is not read. The
/// returned [`Effects`] carry the actions, the requeue time and whether
/// `status` changed. Feed the same working copy into every pass of one
/// reconcile; see [`model`] for what to do with the Events and actions
/// of each pass.
pub fn decide_in_place(input: Input<'_>, status: &mut kudo_api::InstanceStatus) -> Effects {
    decide::decide_in_place(input, status)
}
