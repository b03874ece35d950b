//! `extensions/v1beta1`, `apps/v1beta1` and `apps/v1beta2` Deployment,
//! StatefulSet, DaemonSet and ReplicaSet → `apps/v1` (removed in 1.16).
//!
//! `apps/v1` has the same fields, but `spec.selector` is required and the
//! old versions' defaults differ where it matters:
//! - a missing selector was defaulted from the pod template's labels
//!   (extensions/v1beta1, apps/v1beta1); it is set the same way here;
//! - extensions/v1beta1 Deployment: rolling updates with maxUnavailable 1
//!   and maxSurge 1 (apps/v1: 25 %), no progress deadline (apps/v1: 600 s),
//!   and `spec.rollbackTo`, which apps/v1 dropped;
//! - extensions/v1beta1 DaemonSet and apps/v1beta1 StatefulSet updated pods
//!   only when deleted (`OnDelete`; apps/v1: `RollingUpdate`), and the
//!   DaemonSet had `spec.templateGeneration`.
//!
//! The old defaults are written out so the workload behaves as the package
//! author saw it; each is a note on the translation.

use serde_json::{Value, json};

use super::Refusal;
use super::json::{missing, object_mut};

/// What extensions/v1beta1 set when a Deployment had no progress deadline:
/// the largest int32, which the Deployment controller reads as "none".
const NO_PROGRESS_DEADLINE: i64 = i32::MAX as i64;

pub(super) fn extensions_deployment(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "extensions/v1beta1", notes);
    drop_rollback_to(obj, notes);
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return Ok(());
    };
    let strategy = spec
        .entry("strategy")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(strategy) = strategy {
        let kind = strategy
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("RollingUpdate");
        if kind == "RollingUpdate" {
            let rolling = strategy
                .entry("rollingUpdate")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            if let Some(rolling) = rolling {
                let mut set = Vec::new();
                for field in ["maxUnavailable", "maxSurge"] {
                    if missing(rolling, field) {
                        rolling.insert(field.into(), json!(1));
                        set.push(field);
                    }
                }
                if !set.is_empty() {
                    notes.push(format!(
                        "spec.strategy.rollingUpdate {} set to 1, the extensions/v1beta1 default \
                         (apps/v1 defaults to 25%)",
                        set.join(" and ")
                    ));
                }
            }
        }
        if strategy.is_empty() {
            spec.remove("strategy");
        }
    }
    if missing(spec, "progressDeadlineSeconds") {
        spec.insert(
            "progressDeadlineSeconds".into(),
            json!(NO_PROGRESS_DEADLINE),
        );
        notes.push(
            "spec.progressDeadlineSeconds set to 2147483647 (no deadline), as in \
             extensions/v1beta1 (apps/v1 defaults to 600)"
                .into(),
        );
    }
    Ok(())
}

pub(super) fn extensions_daemon_set(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "extensions/v1beta1", notes);
    if let Some(spec) = object_mut(obj, &["spec"])
        && spec.remove("templateGeneration").is_some()
    {
        notes.push("spec.templateGeneration dropped: apps/v1 has no such field".into());
    }
    keep_on_delete(obj, "extensions/v1beta1", notes);
    Ok(())
}

pub(super) fn replica_set(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "extensions/v1beta1", notes);
    Ok(())
}

pub(super) fn apps_v1beta1_deployment(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "apps/v1beta1", notes);
    drop_rollback_to(obj, notes);
    Ok(())
}

pub(super) fn apps_v1beta1_stateful_set(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "apps/v1beta1", notes);
    keep_on_delete(obj, "apps/v1beta1", notes);
    Ok(())
}

/// apps/v1beta2 already required the selector and has apps/v1's defaults;
/// a missing selector (which apps/v1beta2 refused) is defaulted anyway.
pub(super) fn apps_v1beta2(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    default_selector(obj, "extensions/v1beta1 and apps/v1beta1", notes);
    Ok(())
}

/// A missing `spec.selector` becomes `matchLabels` of the pod template's
/// labels, as the old versions defaulted it.
fn default_selector(obj: &mut Value, old: &str, notes: &mut Vec<String>) {
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    if !missing(spec, "selector") {
        return;
    }
    if let Some(labels) = labels {
        spec.insert("selector".into(), json!({ "matchLabels": labels }));
        notes.push(format!(
            "spec.selector set to the pod template's labels, as {old} defaulted it (apps/v1 \
             requires it)"
        ));
    }
}

fn drop_rollback_to(obj: &mut Value, notes: &mut Vec<String>) {
    if let Some(spec) = object_mut(obj, &["spec"])
        && spec.remove("rollbackTo").is_some()
    {
        notes.push(
            "spec.rollbackTo dropped: apps/v1 has no rollback field (roll back by applying the \
             old template)"
                .into(),
        );
    }
}

/// A missing update strategy becomes `OnDelete`, the old default; one that
/// only configures `rollingUpdate` is a rolling update.
fn keep_on_delete(obj: &mut Value, old: &str, notes: &mut Vec<String>) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    let strategy = spec
        .entry("updateStrategy")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(strategy) = strategy else {
        return;
    };
    if !missing(strategy, "type") {
        return;
    }
    if missing(strategy, "rollingUpdate") {
        strategy.insert("type".into(), json!("OnDelete"));
        notes.push(format!(
            "spec.updateStrategy.type set to OnDelete, the {old} default (apps/v1 defaults to \
             RollingUpdate): pods are replaced only when deleted, as before"
        ));
    } else {
        strategy.insert("type".into(), json!("RollingUpdate"));
    }
}
