//! [`ExecutionStatus`]: the status of a plan, phase or step.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status of a plan, phase or step: KUDO's six values plus `WAITING`.
///
/// `WAITING` is a kudo-rs addition: paused, awaiting a canary `continue`, or
/// blocked by a maintenance or suppression window (the message says which).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum ExecutionStatus {
    /// Never executed.
    #[default]
    #[serde(rename = "NEVER_RUN")]
    NeverRun,
    /// Scheduled but not started.
    #[serde(rename = "PENDING")]
    Pending,
    /// Being executed.
    #[serde(rename = "IN_PROGRESS")]
    InProgress,
    /// Done and healthy.
    #[serde(rename = "COMPLETE")]
    Complete,
    /// Transient error; retried with backoff.
    #[serde(rename = "ERROR")]
    Error,
    /// Permanent error; the plan stopped.
    #[serde(rename = "FATAL_ERROR")]
    FatalError,
    /// Held: paused, awaiting a canary continue, or outside a window.
    #[serde(rename = "WAITING")]
    Waiting,
}

impl ExecutionStatus {
    /// All values, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::NeverRun,
        Self::Pending,
        Self::InProgress,
        Self::Complete,
        Self::Error,
        Self::FatalError,
        Self::Waiting,
    ];

    /// COMPLETE or FATAL_ERROR.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Complete | Self::FatalError)
    }

    /// COMPLETE only.
    pub fn is_finished(self) -> bool {
        self == Self::Complete
    }

    /// PENDING, IN_PROGRESS, ERROR (KUDO's set) or WAITING: a plan in one of
    /// these holds the instance.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            Self::Pending | Self::InProgress | Self::Error | Self::Waiting
        )
    }

    /// The wire form, e.g. `IN_PROGRESS`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NeverRun => "NEVER_RUN",
            Self::Pending => "PENDING",
            Self::InProgress => "IN_PROGRESS",
            Self::Complete => "COMPLETE",
            Self::Error => "ERROR",
            Self::FatalError => "FATAL_ERROR",
            Self::Waiting => "WAITING",
        }
    }
}

impl fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string is not one of the seven statuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown execution status {0:?}; expected one of NEVER_RUN, PENDING, IN_PROGRESS, COMPLETE, ERROR, FATAL_ERROR, WAITING"
)]
pub struct UnknownStatus(pub String);

impl FromStr for ExecutionStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_statuses_are_complete_and_fatal_error() {
        let terminal: Vec<_> = ExecutionStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            vec![ExecutionStatus::Complete, ExecutionStatus::FatalError]
        );
    }

    #[test]
    fn running_statuses_include_error_and_waiting_but_not_never_run() {
        assert!(ExecutionStatus::Error.is_running());
        assert!(ExecutionStatus::Waiting.is_running());
        assert!(ExecutionStatus::Pending.is_running());
        assert!(!ExecutionStatus::NeverRun.is_running());
        assert!(!ExecutionStatus::Complete.is_running());
    }

    #[test]
    fn wire_form_round_trips_through_serde_and_from_str() {
        for s in ExecutionStatus::ALL {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<ExecutionStatus>(&json).unwrap(), s);
            assert_eq!(s.as_str().parse::<ExecutionStatus>().unwrap(), s);
        }
        assert!("RUNNING".parse::<ExecutionStatus>().is_err());
    }
}
