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
    /// Not now.
    Hold {
        /// What holds it, for status (`waiting for approval ...`).
        why: String,
        /// What lifts it: when the move is worth looking at again.
        lifts: Lifts,
    },
}

/// What lifts a hold, so the manager looks at a held move again then and
/// not on a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifts {
    /// A change to the Instance someone else makes (an approval, a fixed
    /// spec, a suppression cleared), which triggers a reconcile anyway.
    Change,
    /// Time: a window opens, a suppression expires.
    At(Timestamp),
    /// The Instance's running plan ends.
    PlanEnd,
    /// Another Instance of the namespace completes or starts a move.
    PeerMove,
}

impl Gate {
    /// A hold with what lifts it.
    pub fn held(why: impl Into<String>, lifts: Lifts) -> Self {
        Self::Hold {
            why: why.into(),
            lifts,
        }
    }

    /// A hold that time lifts at `at`, or only a change when `None`.
    pub(crate) fn held_until(why: String, at: Option<Timestamp>) -> Self {
        Self::held(why, at.map_or(Lifts::Change, Lifts::At))
    }
}

/// How far ahead an Instance with no maintenance window in the next two
/// weeks looks again (the two weeks move on with time).
const NO_WINDOW_RECHECK: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// Decides whether `instance` may move to `offer` at `now`.
pub fn gate(instance: &Instance, offer: &Offer<'_>, now: Timestamp, config: &EngineConfig) -> Gate {
    let spec = &instance.spec;
    if let Some(policy) = &spec.upgrades
        && policy.approval == Approval::Manual
        && policy.approved.as_deref() != Some(offer.version)
    {
        return Gate::held(
            format!(
                "waiting for approval (kubectl kudo upgrade approve --instance {} {})",
                instance.metadata.name.as_deref().unwrap_or_default(),
                offer.version
            ),
            Lifts::Change,
        );
    }
    let status = instance.status.as_ref();
    if let Some(active) = status.and_then(|s| s.active_plan.as_ref())
        && active.status.is_running()
    {
        return Gate::held(
            format!("waiting for plan {} to finish", active.name),
            Lifts::PlanEnd,
        );
    }
    if let Some(s) = suppression::active_manual(&spec.suppressions, now) {
        return Gate::held_until(
            format!("waiting: {}", suppression::describe_manual(s)),
            s.until.as_ref().map(|u| u.0),
        );
    }
    if !offer.recall
        && let Some(a) =
            suppression::active_auto(status.and_then(|s| s.auto_suppression.as_ref()), now)
    {
        let who = (
            instance.metadata.namespace.as_deref().unwrap_or_default(),
            instance.metadata.name.as_deref().unwrap_or_default(),
        );
        return Gate::held_until(
            format!("waiting: {}", suppression::describe_auto(a, who)),
            a.until.as_ref().map(|u| u.0),
        );
    }
    match windows::state(
        &spec.maintenance_windows,
        &config.default_maintenance_windows,
        now,
    ) {
        Ok(windows::WindowState::Open { .. }) => Gate::Go,
        Ok(windows::WindowState::Closed { opens_at: Some(at) }) => Gate::held(
            format!("waiting for the maintenance window at {at}"),
            Lifts::At(at),
        ),
        Ok(windows::WindowState::Closed { opens_at: None }) => Gate::held_until(
            "waiting for a maintenance window; none opens in the next two weeks".into(),
            now.checked_add(NO_WINDOW_RECHECK).ok(),
        ),
        Err(e) => Gate::held(
            format!("{e}; nothing starts until spec.maintenanceWindows is fixed"),
            Lifts::Change,
        ),
    }
}

#[cfg(test)]
#[path = "upgrades_tests.rs"]
mod tests;
