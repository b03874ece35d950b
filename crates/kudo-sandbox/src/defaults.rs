//! Defaults and derived fields the real API server gives some kinds
//! (namespace phase, secret stringData, service clusterIP, pod phase, CRD
//! status conditions, after the CRD's checks) and the core Event mirror of
//! events.k8s.io Events.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::objects::now_rfc3339;
use crate::registry::{ResourceInfo, crd_resource};
use crate::status::ApiError;

/// Defaults and derived fields some kinds get from the real server.
pub fn apply_defaults(
    res: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    match (res.group.as_str(), res.kind.as_str()) {
        ("", "Namespace") if old.is_none() => {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "Secret") => {
            if let Some(string_data) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
                && let Some(sd) = string_data.as_object()
            {
                if !obj["data"].is_object() {
                    obj["data"] = json!({});
                }
                for (k, v) in sd {
                    let text = v.as_str().unwrap_or_default();
                    obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text));
                }
            }
            if obj.get("type").is_none() {
                obj["type"] = json!("Opaque");
            }
            data_limit(res, obj)?;
        }
        ("", "Service") => {
            let spec = &mut obj["spec"];
            if !spec.is_object() {
                *spec = json!({});
            }
            if spec.get("type").is_none() {
                spec["type"] = json!("ClusterIP");
            }
            if spec.get("clusterIP").is_none_or(Value::is_null) {
                let kept = old.and_then(|o| o["spec"].get("clusterIP")).cloned();
                spec["clusterIP"] = kept.unwrap_or_else(|| {
                    let b = uuid::Uuid::new_v4().into_bytes();
                    json!(format!("10.96.{}.{}", b[0], b[1].max(1)))
                });
            }
        }
        ("", "ConfigMap") => data_limit(res, obj)?,
        ("batch", "Job") if old.is_some() => {
            immutable(res, obj, old, &["spec", "template"])?;
            immutable(res, obj, old, &["spec", "selector"])?;
        }
        ("apps", "StatefulSet" | "Deployment" | "DaemonSet" | "ReplicaSet") if old.is_some() => {
            immutable(res, obj, old, &["spec", "selector"])?;
        }
        ("", "Pod") if old.is_none() => {
            obj["status"] = json!({"phase": "Pending"});
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            crate::api_approval::check(obj, old)?;
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let info = crd_resource(obj).map_err(|p| {
                let (field, problem) = p.split_once(": ").unwrap_or(("spec", p.as_str()));
                ApiError::invalid(
                    "CustomResourceDefinition",
                    &res.group,
                    &name,
                    field,
                    problem,
                )
            })?;
            let expected = format!("{}.{}", info.plural, info.group);
            if name != expected {
                return Err(ApiError::invalid(
                    "CustomResourceDefinition",
                    &res.group,
                    &name,
                    "metadata.name",
                    &format!(
                        "Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group ({expected})"
                    ),
                ));
            }
            let now = now_rfc3339();
            let mut accepted = obj["spec"]["names"].clone();
            if accepted.get("singular").is_none() {
                accepted["singular"] = json!(info.singular);
            }
            if accepted.get("listKind").is_none() {
                accepted["listKind"] = json!(format!("{}List", info.kind));
            }
            obj["status"] = json!({
                "acceptedNames": accepted,
                "storedVersions": [info.preferred_version()],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found", "lastTransitionTime": now},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted", "lastTransitionTime": now},
                ],
            });
        }
        _ => {}
    }
    Ok(())
}

/// The core/v1 Event that mirrors an events.k8s.io/v1 Event, so `kubectl
/// describe` (which reads core events) shows what kube-runtime's recorder wrote.
pub fn core_event_from(ev: &Value) -> Value {
    let time = ev
        .get("deprecatedLastTimestamp")
        .or_else(|| ev.get("eventTime"))
        .cloned()
        .unwrap_or_else(|| json!(now_rfc3339()));
    let meta = &ev["metadata"];
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "involvedObject": ev["regarding"],
        "reason": ev["reason"],
        "message": ev["note"],
        "type": ev["type"],
        "action": ev["action"],
        "count": ev["series"]["count"].as_i64().or_else(|| ev["deprecatedCount"].as_i64()).unwrap_or(1),
        "firstTimestamp": ev.get("deprecatedFirstTimestamp").cloned().unwrap_or_else(|| time.clone()),
        "lastTimestamp": time,
        "source": {"component": ev["reportingController"]},
        "reportingComponent": ev["reportingController"],
        "reportingInstance": ev["reportingInstance"],
    })
}

/// Refuses a change of the field at `path` on an update, as the API server
/// does for the fields it keeps fixed (a Job's pod template, a workload's
/// selector).
fn immutable(
    res: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    path: &[&str],
) -> Result<(), ApiError> {
    let Some(old) = old else { return Ok(()) };
    if field_at(obj, path) == field_at(old, path) {
        return Ok(());
    }
    let name = old["metadata"]["name"].as_str().unwrap_or_default();
    Err(ApiError::invalid(
        &res.kind,
        &res.group,
        name,
        &path.join("."),
        "field is immutable",
    ))
}

/// The value at `path` (null when absent), without copying it.
fn field_at<'v>(obj: &'v Value, path: &[&str]) -> &'v Value {
    path.iter().fold(obj, |v, key| &v[*key])
}

/// The most a ConfigMap's or Secret's data may hold: keys and (decoded)
/// values together.
const MAX_DATA_BYTES: usize = 1 << 20;

/// Refuses a ConfigMap or Secret whose data is over [`MAX_DATA_BYTES`], as
/// a real server does.
fn data_limit(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let mut total = 0usize;
    for field in ["data", "binaryData"] {
        // A Secret's data and any binaryData are base64: counted decoded.
        let base64 = field == "binaryData" || res.kind == "Secret";
        for (k, v) in obj[field].as_object().into_iter().flatten() {
            let len = v.as_str().unwrap_or_default().len();
            let value = if base64 { len / 4 * 3 } else { len };
            total = total.saturating_add(k.len()).saturating_add(value);
        }
    }
    if total <= MAX_DATA_BYTES {
        return Ok(());
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    Err(ApiError::invalid(
        &res.kind,
        &res.group,
        name,
        "[]",
        &format!("Too long: must have at most {MAX_DATA_BYTES} bytes"),
    ))
}
