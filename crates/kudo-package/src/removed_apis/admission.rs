//! `admissionregistration.k8s.io/v1beta1` Validating- and
//! MutatingWebhookConfiguration → `admissionregistration.k8s.io/v1`
//! (removed in 1.22).
//!
//! v1 has the same fields but different defaults, and two required fields.
//! Each webhook gets the v1beta1 value written out where v1 would differ:
//! - `failurePolicy` Ignore (v1: Fail), `matchPolicy` Exact (v1:
//!   Equivalent), `timeoutSeconds` 30 (v1: 10);
//! - `admissionReviewVersions` `[v1beta1]` (required in v1; API servers
//!   still send v1beta1 reviews);
//! - `sideEffects` (required in v1, and only `None` or `NoneOnDryRun`):
//!   v1beta1's default `Unknown`, and `Some`, said the webhook may have side
//!   effects, so dry-run requests were refused instead of sent. The v1 value
//!   that admits side effects is `NoneOnDryRun`; it is used, and dry-run
//!   requests now reach the webhook (which should skip its side effects when
//!   `request.dryRun` is true).

use serde_json::{Value, json};

use super::Refusal;
use super::json::{array_mut, missing};

pub(super) fn webhook_configuration(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let mut defaults: Vec<&str> = Vec::new();
    let mut side_effects: Vec<String> = Vec::new();
    for webhook in array_mut(obj, &["webhooks"]).into_iter().flatten() {
        let Some(webhook) = webhook.as_object_mut() else {
            continue;
        };
        let name = webhook
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        for (field, value, label) in [
            ("failurePolicy", json!("Ignore"), "failurePolicy Ignore"),
            ("matchPolicy", json!("Exact"), "matchPolicy Exact"),
            ("timeoutSeconds", json!(30), "timeoutSeconds 30"),
            (
                "admissionReviewVersions",
                json!(["v1beta1"]),
                "admissionReviewVersions [v1beta1]",
            ),
        ] {
            if missing(webhook, field) {
                webhook.insert(field.into(), value);
                if !defaults.contains(&label) {
                    defaults.push(label);
                }
            }
        }
        let old = webhook
            .get("sideEffects")
            .and_then(Value::as_str)
            .unwrap_or("Unknown")
            .to_string();
        if old != "None" && old != "NoneOnDryRun" {
            webhook.insert("sideEffects".into(), json!("NoneOnDryRun"));
            side_effects.push(format!("{name} ({old})"));
        }
    }
    if !defaults.is_empty() {
        notes.push(format!(
            "v1beta1 defaults written out: {} (v1's defaults differ)",
            defaults.join(", ")
        ));
    }
    if !side_effects.is_empty() {
        notes.push(format!(
            "sideEffects set to NoneOnDryRun for {}: v1 accepts only None or NoneOnDryRun, and \
             NoneOnDryRun is the one that admits side effects; dry-run requests, which v1beta1 \
             refused for such webhooks, now reach them",
            side_effects.join(", ")
        ));
    }
    Ok(())
}
