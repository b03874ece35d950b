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
//! ```
//!
//! Pure: no tokio, no kube client, no clock (`now` is a parameter).

pub mod decision;

pub use decision::{
    Action, Decision, EngineConfig, EventType, Input, Observed, TaskKey, TaskOutcome, TaskResult,
};
