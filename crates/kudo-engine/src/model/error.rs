//! The engine's one error type.

/// Problems in Instance or OperatorVersion content that the engine cannot
/// work with. All of them are user errors: retrying does not help, fixing
/// the object does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A maintenance window field does not parse.
    #[error("maintenance window {index} ({field} {value:?}): {reason}")]
    InvalidWindow {
        /// Position in its list (0-based).
        index: usize,
        /// Field name: `days`, `start`, `end` or `timeZone`.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// Changed parameters trigger more than one plan.
    #[error(
        "parameters {} trigger different plans ({}); change them in separate updates, one plan at a time",
        kudo_api::message::listed(params),
        kudo_api::message::listed(plans)
    )]
    MultipleTriggers {
        /// The changed parameters.
        params: Vec<String>,
        /// The distinct plans they trigger.
        plans: Vec<String>,
    },
    /// A parameter's trigger names a plan the OperatorVersion does not have.
    #[error("parameter {param} triggers plan {plan:?}, which the OperatorVersion does not define")]
    UnknownTriggerPlan {
        /// Parameter.
        param: String,
        /// Plan it names.
        plan: String,
    },
    /// No plan can handle the change.
    #[error("the OperatorVersion has none of the plans {}, so this change cannot run", candidates.join(", "))]
    NoPlanFor {
        /// The plans looked for, in order.
        candidates: Vec<String>,
    },
}
