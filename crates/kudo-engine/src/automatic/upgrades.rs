//! When an Instance that tracks a channel may move to the version its
//! repository offers: the holds an automatic upgrade respects, decided
//! without IO. What version is chosen is the repository resolver's work;
//! this says whether the move may start now, and if not, why.
//!
//! In order: a manual approval that names another version, a running
//! plan, a manual suppression, the automatic suppression after a failure
//! (a recall goes ahead of it: leaving a recalled version is the fix), and
//! the maintenance windows.

use jiff::Timestamp;
use kudo_api::Instance;
use kudo_api::upgrades::Approval;

use crate::model::EngineConfig;
use crate::plan::{suppression, windows};

/// The move the repository offers.
#[derive(Clone, Copy, Debug)]
pub struct Offer<'a> {
    /// The operator version to move to.
    pub version: &'a str,
    /// Whether the move leaves a recalled version.
    pub recall: bool,
}

/// Whether the move may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Now.
    Go,
    /// Not now: what holds it, for status (`waiting for approval ...`).
    Hold(String),
}

/// Decides whether `instance` may move to `offer` at `now`.
pub fn gate(instance: &Instance, offer: &Offer<'_>, now: Timestamp, config: &EngineConfig) -> Gate {
    let spec = &instance.spec;
    if let Some(policy) = &spec.upgrades
        && policy.approval == Approval::Manual
        && policy.approved.as_deref() != Some(offer.version)
    {
        return Gate::Hold(format!(
            "waiting for approval (kubectl kudo upgrade approve --instance {} {})",
            instance.metadata.name.as_deref().unwrap_or_default(),
            offer.version
        ));
    }
    let status = instance.status.as_ref();
    if let Some(active) = status.and_then(|s| s.active_plan.as_ref())
        && active.status.is_running()
    {
        return Gate::Hold(format!("waiting for plan {} to finish", active.name));
    }
    if let Some(s) = suppression::active_manual(&spec.suppressions, now) {
        return Gate::Hold(format!("waiting: {}", suppression::describe_manual(s)));
    }
    if !offer.recall
        && let Some(a) =
            suppression::active_auto(status.and_then(|s| s.auto_suppression.as_ref()), now)
    {
        let who = (
            instance.metadata.namespace.as_deref().unwrap_or_default(),
            instance.metadata.name.as_deref().unwrap_or_default(),
        );
        return Gate::Hold(format!("waiting: {}", suppression::describe_auto(a, who)));
    }
    match windows::state(
        &spec.maintenance_windows,
        &config.default_maintenance_windows,
        now,
    ) {
        Ok(windows::WindowState::Open { .. }) => Gate::Go,
        Ok(windows::WindowState::Closed { opens_at: Some(at) }) => {
            Gate::Hold(format!("waiting for the maintenance window at {at}"))
        }
        Ok(windows::WindowState::Closed { opens_at: None }) => {
            Gate::Hold("waiting for a maintenance window; none opens in the next two weeks".into())
        }
        Err(e) => Gate::Hold(format!(
            "{e}; nothing starts until spec.maintenanceWindows is fixed"
        )),
    }
}

#[cfg(test)]
#[path = "upgrades_tests.rs"]
mod tests;
