//! MaintenanceSchedule reviews: the one schedule per cluster, checked as
//! Mesos checks a schedule (`kudo_engine::maintenance::{validate_name,
//! validate}`, the rules the CLI runs before it writes). Nothing is read
//! from the cluster, so a schedule is answered without waiting.

use std::borrow::Cow;

use kudo_api::MaintenanceScheduleSpec;
use kudo_engine::maintenance::{validate, validate_name};
use serde::Deserialize;

use super::answer::Answer;
use super::decode::Request;

/// What the review reads of a MaintenanceSchedule: its name and spec
/// (status and the rest of the metadata are skipped unread).
#[derive(Debug, Deserialize)]
pub(crate) struct Schedule {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    spec: MaintenanceScheduleSpec,
}

#[derive(Debug, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    name: Option<String>,
}

/// Answers a MaintenanceSchedule request: refused (403) when it is not the
/// cluster's one schedule or breaks a rule, with the rule's message (naming
/// the window and node); 400 when an object does not decode; allowed
/// otherwise.
pub(crate) fn review<'b>(request: &Request<'_>, uid: Cow<'b, str>) -> Answer<'b> {
    // Status writes, deletions and CONNECT change no spec: not judged.
    let (old, new) = match request.spec_write_as::<Schedule>("MaintenanceSchedule") {
        Ok(Some(objects)) => objects,
        Ok(None) => return Answer::allowed(uid, vec![]),
        Err(message) => return Answer::bad_request(uid, message),
    };
    // Writes that leave the spec alone (labels, annotations, finalizers)
    // pass, so a schedule from before these rules can still be tidied up.
    if old.is_some_and(|old| old.spec == new.spec) {
        return Answer::allowed(uid, vec![]);
    }
    let name = new
        .metadata
        .name
        .as_deref()
        .filter(|name| !name.is_empty())
        .unwrap_or(&request.name);
    match validate_name(name).and_then(|()| validate(&new.spec)) {
        Ok(()) => Answer::allowed(uid, vec![]),
        Err(message) => Answer::refused(uid, 403, "Forbidden", message),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use kube::core::DynamicObject;
    use kube::core::admission::{AdmissionResponse, AdmissionReview};
    use serde_json::{Value, json};

    use crate::webhook::Reviewer;
    use crate::webhook::ov_source::{FnSource, OperatorVersionSource};

    /// A reviewer whose OperatorVersion source counts its reads (a schedule
    /// must cause none).
    fn reviewer() -> (Reviewer<impl OperatorVersionSource>, Arc<Mutex<usize>>) {
        let reads = Arc::new(Mutex::new(0));
        let count = reads.clone();
        let source = FnSource(move |_: &str, _: &str| {
            *count.lock().unwrap() += 1;
            Ok(None)
        });
        (Reviewer::new(source, Duration::from_secs(1)), reads)
    }

    fn schedule(name: &str, spec: Value) -> Value {
        json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "MaintenanceSchedule",
            "metadata": {"name": name, "generation": 2},
            "spec": spec,
            "status": {"draining": 1}
        })
    }

    fn window(nodes: Value) -> Value {
        json!({"nodes": nodes, "unavailability": {"start": "2026-12-01T02:00:00Z", "duration": "1h"}})
    }

    fn body(operation: &str, object: Value, old: Value) -> Vec<u8> {
        let name = [&object, &old].map(|o| o["metadata"]["name"].clone());
        let name = name.into_iter().find(|n| !n.is_null()).unwrap();
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "ms-1",
                "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "MaintenanceSchedule"},
                "resource": {"group": "kudo.dev", "version": "v1beta1", "resource": "maintenanceschedules"},
                "name": name,
                "operation": operation,
                "userInfo": {"username": "ops"},
                "object": object,
                "oldObject": old,
            }
        }))
        .unwrap()
    }

    async fn answer(operation: &str, object: Value, old: Value) -> AdmissionResponse {
        let (reviewer, reads) = reviewer();
        let review: AdmissionReview<DynamicObject> =
            reviewer.review_bytes(&body(operation, object, old)).await;
        assert_eq!(
            *reads.lock().unwrap(),
            0,
            "a schedule reads no OperatorVersion"
        );
        let response = review.response.unwrap();
        assert_eq!(response.uid, "ms-1");
        response
    }

    /// The message of a refusal with `code` and `reason` (checked).
    fn refused(response: &AdmissionResponse, code: u16, reason: &str) -> String {
        assert!(!response.allowed, "{response:?}");
        assert_eq!(response.result.code, code);
        assert_eq!(response.result.reason, reason);
        response.result.message.clone()
    }

    #[tokio::test]
    async fn a_valid_schedule_is_allowed_without_any_read() {
        let spec = json!({
            "windows": [window(json!([{"name": "n1"}, {"hostname": "h2", "ip": "10.0.0.2"}])),
                        window(json!([{"ip": "10.0.0.3"}]))],
            "down": [{"name": "n1"}]
        });
        let response = answer("CREATE", schedule("default", spec), Value::Null).await;
        assert!(response.allowed, "{response:?}");
    }

    #[tokio::test]
    async fn a_node_scheduled_twice_is_refused_naming_window_and_node() {
        let spec = json!({"windows": [window(json!([{"hostname": "Node-A"}])),
                                      window(json!([{"name": "n2"}, {"hostname": "node-a"}]))]});
        let response = answer("CREATE", schedule("default", spec), Value::Null).await;
        let message = refused(&response, 403, "Forbidden");
        assert!(message.contains("spec.windows[1].nodes[1]"), "{message}");
        assert!(message.contains("node-a"), "{message}");
        assert!(message.contains("spec.windows[0]"), "{message}");
    }

    #[tokio::test]
    async fn a_window_without_nodes_or_unavailability_is_refused() {
        let spec =
            json!({"windows": [window(json!([{"name": "n1"}])), {"nodes": [{"name": "n2"}]}]});
        let response = answer("CREATE", schedule("default", spec), Value::Null).await;
        let message = refused(&response, 403, "Forbidden");
        assert!(
            message.starts_with("spec.windows[1] has no unavailability"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_second_schedule_is_refused_saying_there_is_one() {
        let spec = json!({"windows": [window(json!([{"name": "n1"}]))]});
        let response = answer("CREATE", schedule("weekend", spec), Value::Null).await;
        let message = refused(&response, 403, "Forbidden");
        assert!(message.contains("\"weekend\""), "{message}");
        assert!(message.contains("one schedule per cluster"), "{message}");
    }

    #[tokio::test]
    async fn an_update_that_drops_a_down_node_from_the_windows_is_refused() {
        let old = schedule(
            "default",
            json!({"windows": [window(json!([{"name": "n1"}]))], "down": [{"name": "n1"}]}),
        );
        let new = schedule("default", json!({"windows": [], "down": [{"name": "n1"}]}));
        let response = answer("UPDATE", new, old).await;
        let message = refused(&response, 403, "Forbidden");
        assert!(
            message.contains("spec.down[0]: node n1 is Down"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn writes_that_leave_the_spec_alone_and_deletions_are_allowed() {
        // A schedule from before the webhook: invalid, yet it can be
        // relabelled and deleted.
        let spec = json!({"windows": [{"nodes": []}]});
        let old = schedule("old", spec.clone());
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"team": "ops"});
        assert!(answer("UPDATE", new, old.clone()).await.allowed);
        assert!(answer("DELETE", Value::Null, old).await.allowed);
        // The same spec on CREATE is judged.
        let response = answer("CREATE", schedule("default", spec), Value::Null).await;
        refused(&response, 403, "Forbidden");
    }

    #[tokio::test]
    async fn a_schedule_of_the_wrong_shape_is_a_bad_request_naming_the_kind() {
        let response = answer(
            "CREATE",
            schedule("default", json!({"windows": 3})),
            Value::Null,
        )
        .await;
        let message = refused(&response, 400, "BadRequest");
        assert!(
            message.starts_with("request.object is not a valid MaintenanceSchedule"),
            "{message}"
        );
    }
}
