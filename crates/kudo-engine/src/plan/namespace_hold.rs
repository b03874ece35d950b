//! Namespace-wide suppression (Apollo's environment-level threshold): when
//! more Instances of a namespace than its threshold are automatically
//! suppressed after failures, the automatic plans of every Instance there
//! hold, as one Instance's automatic suppression holds its own. Plans a
//! person asks for (manual runs, rollback, cleanup) never hold for it.

use jiff::Timestamp;
use kudo_api::names::SUPPRESSION_THRESHOLD_ANNOTATION;

use crate::model::namespace::{NamespaceSuppressions, Threshold, ThresholdSource};

/// How many suppressed Instances a hold's message names before `and K more`.
const NAMED: usize = 5;

/// Largest threshold accepted (a bigger one is as good as `off`, and says
/// the writer meant something else).
pub const MAX_THRESHOLD: u32 = 100_000;

/// Reads a threshold: a whole number N (hold when more than N Instances are
/// suppressed) or `off`.
pub fn parse_threshold(text: &str) -> Result<Threshold, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("off") {
        return Ok(Threshold::Off);
    }
    match text.parse::<u32>() {
        Ok(n) if n <= MAX_THRESHOLD => Ok(Threshold::MoreThan(n)),
        _ => Err(format!(
            "{} is not a threshold: write a whole number from 0 to {MAX_THRESHOLD} \
             (hold when more than that many Instances are suppressed) or \"off\"",
            kudo_api::param_value::preview(text)
        )),
    }
}

/// The threshold in force for a namespace: its annotation when it reads,
/// else the manager's (saying why the annotation was not used).
pub fn threshold_for(annotation: Option<&str>, manager: Threshold) -> (Threshold, ThresholdSource) {
    match annotation.map(parse_threshold) {
        None => (manager, ThresholdSource::Manager),
        Some(Ok(t)) => (t, ThresholdSource::Annotation),
        Some(Err(e)) => (
            manager,
            ThresholdSource::Malformed(format!(
                "annotation {SUPPRESSION_THRESHOLD_ANNOTATION}: {e}"
            )),
        ),
    }
}

/// While the Namespace's annotation cannot be read: a blocker saying so
/// and which threshold applies instead (it holds nothing by itself).
pub fn malformed(ns: &NamespaceSuppressions) -> Option<kudo_api::Blocker> {
    let ThresholdSource::Malformed(why) = &ns.source else {
        return None;
    };
    let applies = match ns.threshold {
        Threshold::Off => "off".to_string(),
        Threshold::MoreThan(n) => n.to_string(),
    };
    Some(crate::model::facts::other(format!(
        "Namespace {}: {why}; the manager's threshold ({applies}) applies until it is fixed",
        ns.namespace
    )))
}

/// A namespace that holds: why, and when it lifts by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// Names the namespace, the threshold, the count and a few of the
    /// suppressed Instances.
    pub message: String,
    /// When enough suppressions have expired for the count to drop to the
    /// threshold (`None`: only clearing them lifts it).
    pub lifts_at: Option<Timestamp>,
}

/// What every hold's message says, so a held Instance can be found.
const HOLD_MARK: &str = "holds automatic plans";

/// Whether `status` shows a plan or a channel move its namespace holds
/// (the Instances the manager wakes when the namespace's count drops).
pub fn held_by_namespace(status: &kudo_api::InstanceStatus) -> bool {
    status
        .blockers
        .iter()
        .any(|b| b.kind == kudo_api::BlockerKind::Suppressed && b.message.contains(HOLD_MARK))
        || status
            .upgrades
            .as_ref()
            .and_then(|u| u.reason.as_deref())
            .is_some_and(|r| r.contains(HOLD_MARK))
}

/// Whether the namespace holds automatic plans at `now`.
pub fn hold(ns: &NamespaceSuppressions, now: Timestamp) -> Option<Hold> {
    let Threshold::MoreThan(n) = ns.threshold else {
        return None;
    };
    let mut active: Vec<_> = ns
        .suppressed
        .iter()
        .filter(|s| s.until.is_none_or(|u| now < u))
        .collect();
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    if active.len() <= limit {
        return None;
    }
    active.sort_by(|a, b| a.name.cmp(&b.name));
    let mut ends: Vec<Timestamp> = active.iter().filter_map(|s| s.until).collect();
    ends.sort();
    // The count drops to the threshold once `len - n` suppressions ended.
    let lifts_at = ends.get(active.len() - limit - 1).copied();
    let names: Vec<&str> = active.iter().take(NAMED).map(|s| s.name.as_str()).collect();
    let more = active.len().saturating_sub(NAMED);
    let source = match &ns.source {
        ThresholdSource::Manager => "the manager's --namespace-suppression-threshold".to_string(),
        ThresholdSource::Annotation => {
            format!("annotation {SUPPRESSION_THRESHOLD_ANNOTATION} of the Namespace")
        }
        ThresholdSource::Malformed(why) => {
            format!("the manager's --namespace-suppression-threshold; {why}")
        }
    };
    let message = format!(
        "namespace {} {HOLD_MARK}: {} Instances are automatically suppressed after \
         failures, more than its threshold {n} ({source}): {}{}; it lifts when their \
         suppressions end or are cleared (kubectl kudo suppress clear, or rollback)",
        ns.namespace,
        active.len(),
        names.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
    );
    Some(Hold { message, lifts_at })
}

#[cfg(test)]
#[path = "namespace_hold_tests.rs"]
mod tests;
