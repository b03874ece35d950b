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
mod engine;
pub mod error;
pub mod operations;
pub mod params;
pub mod ready;
pub mod select;
pub mod suppression;
pub mod tree;
pub mod walk;
pub mod windows;

pub use decision::{
    Action, Decision, EngineConfig, EventType, Input, Observed, TaskKey, TaskOutcome, TaskResult,
};
pub use error::EngineError;

/// Decides what to do next for one Instance (see [`decision`] for the loop
/// and the crate docs for the rules). Pure and deterministic: the same input
/// gives the same decision, and an idle Instance gets its stored status back
/// unchanged.
pub fn decide(input: Input<'_>) -> Decision {
    engine::decide(input)
}

/// Wraps a timestamp as a Kubernetes `metav1.Time`.
pub(crate) fn time(ts: jiff::Timestamp) -> kudo_api::Time {
    kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts)
}
