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

pub mod admission;
pub mod decision;

pub use decision::{
    Action, Decision, EngineConfig, EventType, Input, Observed, TaskKey, TaskOutcome, TaskResult,
};

/// Decides what to do next for one Instance (see [`decision`] for the loop).
pub fn decide(input: Input<'_>) -> Decision {
    Decision {
        status: input.instance.status.clone().unwrap_or_default(),
        actions: Vec::new(),
        requeue_after: None,
    }
}
