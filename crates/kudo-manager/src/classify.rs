//! Classification of API errors into transient (step ERROR, retried with
//! backoff) and permanent (step FATAL_ERROR), with messages naming the
//! object.

use kudo_engine::TaskOutcome;

pub use kudo_engine::outcome::{Severity, classify_status};

/// Whether a kube client error is worth retrying.
pub fn is_transient_kube_error(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            classify_status(status.code, &status.reason, &status.message) == Severity::Transient
        }
        kube::Error::SerdeError(_) | kube::Error::BuildRequest(_) => false,
        _ => true,
    }
}

/// Human text of a kube error: the API message when there is one.
pub fn describe_kube_error(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => {
            format!("{} ({})", status.message, status.code)
        }
        other => other.to_string(),
    }
}

/// Turn an API failure on an object into a task outcome whose message
/// names the object, e.g. `StatefulSet default/zk: ... field is immutable`.
pub fn outcome_for(object: &str, err: &kube::Error) -> TaskOutcome {
    let mut message = format!("{object}: {}", describe_kube_error(err));
    if message.contains("field is immutable") || message.contains("are forbidden") {
        // No retry changes a field the API server keeps fixed.
        message.push_str(
            "; the object must be deleted before it is applied again with this change (a \
             Delete task for it before the Apply task)",
        );
    }
    if is_transient_kube_error(err) {
        TaskOutcome::Transient { message }
    } else {
        TaskOutcome::Fatal { message }
    }
}

pub use kudo_engine::health::object_label;

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            status: None,
            code,
            message: message.into(),
            metadata: None,
            reason: reason.into(),
            details: None,
        }))
    }

    #[test]
    fn conflicts_throttling_and_server_errors_are_transient() {
        for code in [409, 429, 500, 503, 504] {
            assert_eq!(classify_status(code, "", ""), Severity::Transient, "{code}");
        }
    }

    #[test]
    fn immutable_field_rejection_is_fatal_and_names_the_object() {
        let err = api_error(
            422,
            "Invalid",
            "StatefulSet.apps \"zk\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas' are forbidden; spec.selector: field is immutable",
        );
        let outcome = outcome_for(&object_label("StatefulSet", Some("default"), "zk"), &err);
        match outcome {
            TaskOutcome::Fatal { message } => {
                assert!(message.starts_with("StatefulSet default/zk: "), "{message}");
                assert!(message.contains("field is immutable"), "{message}");
                assert!(
                    message.ends_with("(a Delete task for it before the Apply task)"),
                    "{message}"
                );
            }
            other => panic!("expected fatal, got {other:?}"),
        }
    }

    #[test]
    fn unknown_kind_and_bad_request_are_fatal() {
        assert_eq!(
            classify_status(
                404,
                "NotFound",
                "the server could not find the requested resource"
            ),
            Severity::Fatal
        );
        assert_eq!(classify_status(400, "BadRequest", "bad"), Severity::Fatal);
    }

    #[test]
    fn internal_error_outcome_is_transient() {
        let err = api_error(500, "InternalError", "etcd is sad");
        assert!(matches!(
            outcome_for("ConfigMap default/a", &err),
            TaskOutcome::Transient { message } if message == "ConfigMap default/a: etcd is sad (500)"
        ));
    }

    #[test]
    fn cluster_scoped_label_has_no_namespace() {
        assert_eq!(object_label("Namespace", None, "x"), "Namespace x");
        assert_eq!(object_label("ConfigMap", Some("ns"), "x"), "ConfigMap ns/x");
    }
}
