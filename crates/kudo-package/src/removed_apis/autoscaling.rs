//! `autoscaling/v2beta1` HorizontalPodAutoscaler → `autoscaling/v2`
//! (removed in 1.25; `autoscaling/v2beta2`, removed in 1.26, has v2's
//! fields and moves unchanged).
//!
//! v2beta1 wrote each metric's target as loose fields; v2beta2 and v2 group
//! the metric's identity under `metric: {name, selector}` and its target
//! under `target: {type, averageUtilization | averageValue | value}`:
//!
//! | v2beta1 | v2 |
//! |---|---|
//! | `resource.targetAverageUtilization` | `resource.target {type: Utilization, averageUtilization}` |
//! | `resource.targetAverageValue` | `resource.target {type: AverageValue, averageValue}` |
//! | `pods.metricName`, `pods.selector` | `pods.metric {name, selector}` |
//! | `pods.targetAverageValue` | `pods.target {type: AverageValue, averageValue}` |
//! | `object.target` | `object.describedObject` |
//! | `object.metricName`, `object.selector` | `object.metric {name, selector}` |
//! | `object.targetValue` / `object.averageValue` | `object.target {type: Value, value}` / `{type: AverageValue, averageValue}` |
//! | `external.metricName`, `external.metricSelector` | `external.metric {name, selector}` |
//! | `external.targetValue` / `external.targetAverageValue` | `external.target {type: Value, value}` / `{type: AverageValue, averageValue}` |
//! | `containerResource.targetAverage*` | `containerResource.target` as for `resource` |

use serde_json::{Map, Value, json};

use super::Refusal;
use super::json::array_mut;

pub(super) fn v2beta1_horizontal_pod_autoscaler(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let mut converted = 0usize;
    for metric in array_mut(obj, &["spec", "metrics"]).into_iter().flatten() {
        let Some(metric) = metric.as_object_mut() else {
            continue;
        };
        let mut changed = false;
        for source in ["resource", "containerResource"] {
            if let Some(m) = metric.get_mut(source).and_then(Value::as_object_mut) {
                changed |= resource_target(m);
            }
        }
        if let Some(m) = metric.get_mut("pods").and_then(Value::as_object_mut) {
            changed |= metric_identifier(m, "selector");
            changed |= target(m, None, Some("targetAverageValue"));
        }
        if let Some(m) = metric.get_mut("object").and_then(Value::as_object_mut) {
            if let Some(described) = m.remove("target") {
                m.insert("describedObject".into(), described);
                changed = true;
            }
            changed |= metric_identifier(m, "selector");
            // v2beta1's object metric had a required targetValue and an
            // optional averageValue that, when set, was the target.
            if m.contains_key("averageValue") {
                m.remove("targetValue");
                changed |= target(m, None, Some("averageValue"));
            } else {
                changed |= target(m, Some("targetValue"), None);
            }
        }
        if let Some(m) = metric.get_mut("external").and_then(Value::as_object_mut) {
            changed |= metric_identifier(m, "metricSelector");
            if m.contains_key("targetAverageValue") {
                m.remove("targetValue");
                changed |= target(m, None, Some("targetAverageValue"));
            } else {
                changed |= target(m, Some("targetValue"), None);
            }
        }
        if changed {
            converted += 1;
        }
    }
    if converted > 0 {
        notes.push(format!(
            "{converted} metric{} rewritten to v2's metric/target form",
            if converted == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

/// `targetAverageUtilization` / `targetAverageValue` → `target`.
fn resource_target(m: &mut Map<String, Value>) -> bool {
    if let Some(utilization) = m.remove("targetAverageUtilization") {
        m.remove("targetAverageValue");
        m.insert(
            "target".into(),
            json!({ "type": "Utilization", "averageUtilization": utilization }),
        );
        return true;
    }
    target(m, None, Some("targetAverageValue"))
}

/// `metricName` and the selector field → `metric: {name, selector}`.
fn metric_identifier(m: &mut Map<String, Value>, selector_field: &str) -> bool {
    let name = m.remove("metricName");
    let selector = m.remove(selector_field);
    if name.is_none() && selector.is_none() {
        return false;
    }
    let mut id = Map::new();
    if let Some(name) = name {
        id.insert("name".into(), name);
    }
    if let Some(selector) = selector {
        id.insert("selector".into(), selector);
    }
    m.insert("metric".into(), Value::Object(id));
    true
}

/// A plain value field or an average value field → `target`.
fn target(m: &mut Map<String, Value>, value: Option<&str>, average: Option<&str>) -> bool {
    if let Some(field) = average
        && let Some(v) = m.remove(field)
    {
        m.insert(
            "target".into(),
            json!({ "type": "AverageValue", "averageValue": v }),
        );
        return true;
    }
    if let Some(field) = value
        && let Some(v) = m.remove(field)
    {
        m.insert("target".into(), json!({ "type": "Value", "value": v }));
        return true;
    }
    false
}
