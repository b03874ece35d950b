//! Turning a request body into an Instance review, or into the error
//! answer that explains why it is not one.
//!
//! The common case decodes in one pass into the slim request of
//! [`super::wire`]. Only when that fails is the body decoded again, loosely
//! (`DynamicObject`, then full `Instance`s, then raw JSON), to find the uid
//! to echo and to say precisely what is wrong.

use std::borrow::Cow;

use kube::core::admission::{AdmissionReview, META_API_VERSION_V1, META_KIND};
use kube::core::{DynamicObject, GroupVersionKind};
use kudo_api::Instance;
use kudo_api::names::{GROUP, VERSION};

use super::answer::Answer;
use super::wire::{self, WireKind, WireRequest};

/// Decodes the body into the request to review, or the error answer.
pub(crate) fn decode(body: &[u8]) -> Result<WireRequest<'_>, Answer<'static>> {
    let review = match wire::parse(body) {
        Ok(review) => review,
        Err(typed_error) => return Err(explain(body, &typed_error)),
    };
    check_review_type(&review.api_version, &review.kind, || {
        review.request.as_ref().map(|r| r.uid.to_string())
    })?;
    review.request.ok_or_else(|| {
        Answer::bad_request(
            Cow::Borrowed(""),
            "the AdmissionReview has no request".to_string(),
        )
    })
}

/// The message for a request of a kind this webhook does not review, if it is one.
pub(crate) fn foreign_kind(kind: &WireKind<'_>) -> Option<String> {
    if kind.group == GROUP && kind.kind == "Instance" {
        return None;
    }
    let gv = if kind.group.is_empty() {
        kind.version.to_string()
    } else {
        format!("{}/{}", kind.group, kind.version)
    };
    Some(format!(
        "this webhook reviews only {GROUP}/{VERSION} Instance objects, but was sent {gv} {}; \
         restrict the webhook configuration's rules to the instances resource",
        kind.kind
    ))
}

fn answer(message: String, uid: String) -> Answer<'static> {
    Answer::bad_request(Cow::Owned(uid), message)
}

fn check_review_type(
    api_version: &str,
    kind: &str,
    uid: impl FnOnce() -> Option<String>,
) -> Result<(), Answer<'static>> {
    if api_version == META_API_VERSION_V1 && kind == META_KIND {
        return Ok(());
    }
    Err(answer(
        format!(
            "expected apiVersion {META_API_VERSION_V1} kind {META_KIND}, got apiVersion \
             {api_version:?} kind {kind:?}; set admissionReviewVersions to [v1] in the webhook \
             configuration"
        ),
        uid().unwrap_or_default(),
    ))
}

/// Why the body is not an Instance review, as precisely as we can tell.
fn explain(body: &[u8], typed_error: &serde_json::Error) -> Answer<'static> {
    let review: AdmissionReview<DynamicObject> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(err) => {
            return answer(
                format!("the request body is not an AdmissionReview: {err}"),
                uid_of_malformed(body),
            );
        }
    };
    let uid = review.request.as_ref().map(|r| r.uid.clone());
    if let Err(answer) = check_review_type(&review.types.api_version, &review.types.kind, || {
        uid.clone()
    }) {
        return answer;
    }
    let Some(request) = review.request else {
        return answer(
            "the AdmissionReview has no request".to_string(),
            String::new(),
        );
    };
    if let Some(message) = foreign_kind(&gvk(&request.kind)) {
        return answer(message, request.uid);
    }
    for (field, object) in [
        ("object", &request.object),
        ("oldObject", &request.old_object),
    ] {
        if let Some(object) = object
            && let Err(message) = instance(object, field)
        {
            return answer(message, request.uid);
        }
    }
    answer(
        format!("the AdmissionReview cannot be read: {typed_error}"),
        request.uid,
    )
}

fn gvk(kind: &GroupVersionKind) -> WireKind<'_> {
    WireKind {
        group: Cow::Borrowed(&kind.group),
        version: Cow::Borrowed(&kind.version),
        kind: Cow::Borrowed(&kind.kind),
    }
}

/// Best effort: the uid of a review that failed to decode, so the API
/// server can still match our answer to its call.
fn uid_of_malformed(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value
                .get("request")?
                .get("uid")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

fn instance(object: &DynamicObject, field: &str) -> Result<Instance, String> {
    if let Some(types) = &object.types
        && (types.kind != "Instance" || !types.api_version.starts_with(GROUP))
    {
        return Err(format!(
            "request.{field} is a {} {}, not a {GROUP} Instance",
            types.api_version, types.kind
        ));
    }
    let value = serde_json::to_value(object)
        .map_err(|err| format!("request.{field} cannot be read: {err}"))?;
    serde_json::from_value(value).map_err(|err| {
        format!("request.{field} is not a valid Instance: {err}; check it against the Instance CRD")
    })
}
