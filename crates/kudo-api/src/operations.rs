//! kudo-rs additions to `Instance.spec`: plan operations (DC/OS), maintenance
//! windows and suppressions (Apollo).
//!
//! Plan operations are requests with an id: the controller applies each
//! at most once, however long spec keeps it (`status.operationsMark` names
//! the newest one applied, `status.operations` records the last ones), so
//! an operation survives manager restarts and re-applying the same spec
//! (GitOps) is a no-op. New operations go at the end of the list, and only
//! the oldest may be dropped.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Time;

/// A one-shot request to act on a plan, phase or step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanOperation {
    /// Unique id of this request; applied once.
    pub id: String,
    /// What to do.
    pub action: PlanAction,
    /// Target plan; defaults to the active plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Target phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Target step (needs `phase`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Why (shown in status and history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who asked (the CLI fills in the kubeconfig user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Pod to restart or replace, in the Instance's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// uid of that pod when the operation was asked for: only that pod is
    /// deleted, so the operation acts once even if it is looked at again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
}

/// Plan operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PlanAction {
    /// Start no new steps in the plan or phase (running steps finish).
    #[default]
    Pause,
    /// Undo a pause.
    Resume,
    /// Approve the next canary step of a phase.
    Continue,
    /// Mark a step or phase COMPLETE without running it.
    ForceComplete,
    /// Put a step, phase or plan back to PENDING and run it again.
    Restart,
    /// Stop the plan: no new steps start and it ends FATAL_ERROR ("cancelled").
    Cancel,
    /// Clear an automatic suppression.
    ClearSuppression,
    /// Delete a pod of the Instance so its controller starts it again (DC/OS
    /// `pod restart`).
    RestartPod,
    /// Delete a pod and the PersistentVolumeClaims of its StatefulSet's
    /// volumeClaimTemplates, so it comes back with fresh storage (DC/OS
    /// `pod replace`).
    ReplacePod,
}

impl PlanAction {
    /// Name as written in spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Continue => "continue",
            Self::ForceComplete => "forceComplete",
            Self::Restart => "restart",
            Self::Cancel => "cancel",
            Self::ClearSuppression => "clearSuppression",
            Self::RestartPod => "restartPod",
            Self::ReplacePod => "replacePod",
        }
    }

    /// Whether it acts on a pod (not on a plan).
    pub fn is_pod(self) -> bool {
        matches!(self, Self::RestartPod | Self::ReplacePod)
    }
}

impl std::fmt::Display for PlanAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A weekly maintenance window, e.g. days `Mon-Fri`, start `22:00`, end
/// `04:00`, time zone `Europe/Berlin`. An end at or before the start means
/// the window crosses midnight into the next day.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// Days the window opens: `Mon-Fri`, `Sat,Sun`, `*` (every day).
    pub days: String,
    /// Opening time `HH:MM` (local to `timeZone`).
    pub start: String,
    /// Closing time `HH:MM` (local to `timeZone`).
    pub end: String,
    /// IANA time zone; UTC when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Which plans the window is for (Apollo): `NoDowntime` (unset) for
    /// every plan, `Downtime` only for plans that declare `downtime: true`,
    /// which also need a no-downtime window to be open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<WindowKind>,
}

/// Which plans a maintenance window is for: `NoDowntime` (the default)
/// every plan, `Downtime` only plans that declare `downtime: true` (which
/// need a no-downtime window open too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum WindowKind {
    /// A window for plans that keep the service up (the default).
    #[default]
    NoDowntime,
    /// A window for plans that take the service down.
    Downtime,
}

impl std::fmt::Display for WindowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NoDowntime => "no-downtime",
            Self::Downtime => "downtime",
        })
    }
}

/// A manual suppression window: while active, no plan starts automatically
/// and running plans start no new steps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    /// Start; active immediately when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Time>,
    /// End; active until removed when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Time>,
    /// Why (required, shown to everyone).
    pub reason: String,
    /// Who created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}
