//! API errors rendered as `meta.k8s.io/v1` Status objects, shaped like the
//! real API server's so clients recognise the reason and code.

use serde_json::{Value, json};

/// An error answered to an API client as a Status object.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `AlreadyExists`, ...).
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details` of the Status object, if any.
    pub details: Option<Value>,
}

/// Identifies the object an error is about, for messages and `details`.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// API group ("" for core).
    pub group: &'a str,
    /// Plural resource name.
    pub plural: &'a str,
    /// Object name.
    pub name: &'a str,
}

/// `deployments.apps`, or `configmaps` for the core group, as
/// kube-apiserver names a resource in its messages.
pub(crate) fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl Subject<'_> {
    /// `deployments.apps` or `configmaps`, as the real server prints it.
    fn qualified(&self) -> String {
        qualified(self.plural, self.group)
    }

    fn details(&self) -> Value {
        let mut d = json!({ "name": self.name, "kind": self.plural });
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// 404 for a missing object.
    pub fn not_found(s: Subject<'_>) -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", s.qualified(), s.name),
        );
        e.details = Some(s.details());
        e
    }

    /// 404 for a path that names no known resource.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 409 for a create of an existing object.
    pub fn already_exists(s: Subject<'_>) -> Self {
        let mut e = Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", s.qualified(), s.name),
        );
        e.details = Some(s.details());
        e
    }

    /// 409 for a stale resourceVersion or a failed precondition.
    pub fn conflict(s: Subject<'_>, why: &str) -> Self {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                s.qualified(),
                s.name
            ),
        );
        e.details = Some(s.details());
        e
    }

    /// 409 for the usual stale-resourceVersion case.
    pub fn stale(s: Subject<'_>) -> Self {
        Self::conflict(
            s,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 for an object that fails validation; `field` and `problem` form
    /// the cause. `problem` begins as the real server's does (`Required
    /// value`, `Invalid value: ...`, `Forbidden: ...`), which gives the
    /// cause its reason; the kind is qualified by its group, as there
    /// (`CustomResourceDefinition.apiextensions.k8s.io "x" is invalid`).
    pub fn invalid(kind: &str, group: &str, name: &str, field: &str, problem: &str) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {field}: {problem}"),
        );
        let mut d = json!({
            "name": name,
            "kind": kind,
            "causes": [{ "reason": cause_reason(problem), "message": problem, "field": field }],
        });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        e.details = Some(d);
        e
    }

    /// An object too large to store: etcd's refusal, which kube-apiserver
    /// passes on as a 500.
    pub fn too_large_to_store() -> Self {
        Self::new(500, "InternalError", "etcdserver: request is too large")
    }

    /// 400 for a malformed request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 for a forbidden request (admission denial, terminating namespace).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 410 for a resourceVersion that is no longer in the event log.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 415 for an unsupported patch content type.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 429 injected by fault injection.
    pub fn too_many_requests() -> Self {
        Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later (injected fault)",
        )
    }

    /// 503 injected by fault injection (kube's client retries it, as 429).
    pub fn service_unavailable() -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request (injected fault)",
        )
    }

    /// 500 for an internal problem.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 500 for a failing admission webhook under failurePolicy Fail.
    pub fn webhook_failed(name: &str, why: &str) -> Self {
        Self::internal(format!(
            "Internal error occurred: failed calling webhook \"{name}\": {why}"
        ))
    }

    /// 504 for a request that timed out.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The Status object sent to the client.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

/// The `reason` of a field cause, from the text Kubernetes' field errors
/// begin with.
fn cause_reason(problem: &str) -> &'static str {
    const REASONS: [(&str, &str); 6] = [
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
    ];
    REASONS
        .iter()
        .find(|(text, _)| problem.starts_with(text))
        .map_or("FieldValueInvalid", |(_, reason)| reason)
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_group_qualified_resource() {
        let e = ApiError::not_found(Subject {
            group: "apps",
            plural: "deployments",
            name: "web",
        });
        let s = e.to_status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["details"]["group"], "apps");
        assert_eq!(s["code"], 404);
    }

    #[test]
    fn core_conflict_has_no_group_in_details() {
        let e = ApiError::stale(Subject {
            group: "",
            plural: "configmaps",
            name: "c",
        });
        let s = e.to_status();
        assert_eq!(s["reason"], "Conflict");
        assert!(s["details"].get("group").is_none());
    }

    #[test]
    fn invalid_qualifies_the_kind_and_takes_the_cause_reason_from_the_problem() {
        let e = ApiError::invalid(
            "Scale",
            "autoscaling",
            "web",
            "spec.replicas",
            "Required value",
        );
        let s = e.to_status();
        assert_eq!(
            s["message"],
            "Scale.autoscaling \"web\" is invalid: spec.replicas: Required value"
        );
        assert_eq!(s["details"]["kind"], "Scale");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        let e = ApiError::invalid("Pod", "", "p", "metadata.name", "Invalid value: \"P\": x");
        let s = e.to_status();
        assert_eq!(
            s["message"],
            "Pod \"p\" is invalid: metadata.name: Invalid value: \"P\": x"
        );
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueInvalid");
    }
}
