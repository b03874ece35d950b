//! Draining a Down node: which pods are evicted (everything but DaemonSet
//! and mirror pods, as `kubectl drain` does), and which
//! PodDisruptionBudget stands in the way of an eviction the API server
//! refused.

use std::collections::BTreeMap;

use kudo_api::k8s_openapi::api::core::v1::Pod;
use kudo_api::k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Annotation the kubelet puts on a static pod's mirror.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// What draining does with a pod on the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Evict it.
    Evict,
    /// It is terminating already: wait for it.
    Terminating,
    /// It stays (a DaemonSet's or a mirror pod).
    Stays,
}

/// What draining does with `pod`.
pub fn disposition(pod: &Pod) -> Disposition {
    let meta = &pod.metadata;
    let mirror = meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION));
    let daemon = meta
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "DaemonSet" && o.controller == Some(true));
    if mirror || daemon {
        Disposition::Stays
    } else if meta.deletion_timestamp.is_some() {
        Disposition::Terminating
    } else {
        Disposition::Evict
    }
}

/// The DaemonSet (name, uid) `pod` says controls it, when that claim alone
/// keeps it from being evicted. Owner references are written by whoever
/// makes the pod, so the caller checks that this DaemonSet exists before
/// leaving the pod on the node, as `kubectl drain` does.
pub fn claimed_daemon_set(pod: &Pod) -> Option<(&str, &str)> {
    let meta = &pod.metadata;
    if meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION))
    {
        return None;
    }
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "DaemonSet" && o.controller == Some(true))
        .map(|o| (o.name.as_str(), o.uid.as_str()))
}

/// `namespace/name` of the first budget in `pdbs` that selects `pod`.
pub fn blocking_budget(pod: &Pod, pdbs: &[PodDisruptionBudget]) -> Option<String> {
    budgets_selecting(pod, pdbs).next().map(budget_name)
}

/// The budgets in `pdbs` that select `pod` (same namespace, selector matches).
pub fn budgets_selecting<'b>(
    pod: &Pod,
    pdbs: &'b [PodDisruptionBudget],
) -> impl Iterator<Item = &'b PodDisruptionBudget> {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone();
    pdbs.iter().filter(move |b| {
        b.metadata.namespace == namespace
            && b.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|s| selects(s, &labels))
    })
}

/// `namespace/name` of a budget.
pub fn budget_name(budget: &PodDisruptionBudget) -> String {
    format!(
        "{}/{}",
        budget.metadata.namespace.as_deref().unwrap_or_default(),
        budget.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether `selector` selects `labels` (an empty selector selects all, as
/// in policy/v1).
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let by_label = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expression = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_label && by_expression
}
