//! What goes into a decision: the Instance, its OperatorVersion, what was
//! observed, the time and the manager's settings.

use std::time::Duration;

use kudo_api::{Instance, MaintenanceWindow, OperatorVersion};

use super::Observed;

/// Default delay after the first recovery of an object in the last hour
/// ([`EngineConfig::recovery_backoff`]); it doubles with each further one.
pub const RECOVERY_BACKOFF_BASE: Duration = Duration::from_secs(30);

/// The namespace-wide suppression's default threshold: a namespace holds
/// while more than this many of its Instances are automatically suppressed.
pub const DEFAULT_NAMESPACE_SUPPRESSION_THRESHOLD: u32 = 3;

/// Everything `decide` looks at (`decide_in_place` takes the status
/// separately and ignores `instance.status`).
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The Instance: metadata (generation, deletionTimestamp, finalizers),
    /// spec and (for `decide` only) the stored status.
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
    /// Whether drift starts the `recovery` plan (`spec.recovery` can turn
    /// it off per Instance).
    pub recovery: bool,
    /// Wait after an object's first recovery within an hour before the
    /// next; it doubles with each further one (capped at an hour).
    pub recovery_backoff: Duration,
    /// A plan held by a window or a suppression for this long gets a
    /// `PlanBlockedTooLong` Warning and the condition `Blocked` (Apollo
    /// alerts after four hours); `None`: never.
    pub blocked_warning_after: Option<Duration>,
    /// How many automatically suppressed Instances a namespace tolerates
    /// before its automatic plans hold, unless its Namespace says otherwise
    /// (the manager counts and passes [`Observed::namespace`]).
    pub namespace_suppression_threshold: super::namespace::Threshold,
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
            recovery: true,
            recovery_backoff: RECOVERY_BACKOFF_BASE,
            blocked_warning_after: None,
            namespace_suppression_threshold: super::namespace::Threshold::MoreThan(
                DEFAULT_NAMESPACE_SUPPRESSION_THRESHOLD,
            ),
        }
    }
}
