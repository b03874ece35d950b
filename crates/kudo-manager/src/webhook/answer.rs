//! The AdmissionReview answer, encoded straight to JSON.
//!
//! The bytes are the ones kube's `AdmissionResponse::into_review()` would
//! serialise (same fields, order and omissions; a test checks it), without
//! building kube's structs on every request.

use std::borrow::Cow;

use kube::core::admission::{AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND};
use kube::core::{DynamicObject, Status};
use serde::Serialize;

/// What the webhook answers to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer<'a> {
    /// The request's uid, echoed ("" when it could not be read).
    pub uid: Cow<'a, str>,
    /// `None` when allowed; otherwise why not.
    pub refusal: Option<Refusal>,
    /// Warnings shown to the user (allowed requests only).
    pub warnings: Vec<String>,
}

/// How a request was answered (the `verdict` label of
/// `kudo_manager_webhook_reviews_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewVerdict {
    /// Allowed, possibly with warnings.
    Allowed,
    /// Refused by a rule (403).
    Denied,
    /// Not a reviewable request: malformed, foreign kind, body too large (400, 413).
    Invalid,
    /// Our side failed: an OperatorVersion read failed or the review timed out (5xx).
    Failed,
}

impl ReviewVerdict {
    /// Every verdict, in declaration order (`verdict as usize` indexes it).
    pub const ALL: [Self; 4] = [Self::Allowed, Self::Denied, Self::Invalid, Self::Failed];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Invalid => "invalid",
            Self::Failed => "failed",
        }
    }
}

/// Why a request was not allowed, with the HTTP-style code the API server shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// 400 (bad request), 403 (denied by a rule), 500 (our failure).
    pub code: u16,
    /// `BadRequest`, `Forbidden`, `InternalError`.
    pub reason: &'static str,
    /// The message the user reads.
    pub message: String,
}

impl<'a> Answer<'a> {
    /// Allowed, with warnings if any.
    pub fn allowed(uid: Cow<'a, str>, warnings: Vec<String>) -> Self {
        Self {
            uid,
            refusal: None,
            warnings,
        }
    }

    /// Not allowed, for `reason` with `code`.
    pub fn refused(uid: Cow<'a, str>, code: u16, reason: &'static str, message: String) -> Self {
        Self {
            uid,
            refusal: Some(Refusal {
                code,
                reason,
                message,
            }),
            warnings: Vec::new(),
        }
    }

    /// A request that is not a reviewable AdmissionReview (400).
    pub fn bad_request(uid: Cow<'a, str>, message: String) -> Self {
        Self::refused(uid, 400, "BadRequest", message)
    }

    /// Whether the change may go through.
    pub fn is_allowed(&self) -> bool {
        self.refusal.is_none()
    }

    /// How the request was answered, for metrics.
    pub fn verdict(&self) -> ReviewVerdict {
        match &self.refusal {
            None => ReviewVerdict::Allowed,
            Some(refusal) if refusal.code >= 500 => ReviewVerdict::Failed,
            Some(refusal) if refusal.code == 400 => ReviewVerdict::Invalid,
            Some(_) => ReviewVerdict::Denied,
        }
    }

    /// The answer as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(160 + self.message_len());
        // Only strings, bools and numbers: writing to a Vec cannot fail.
        if let Err(err) = serde_json::to_writer(&mut out, &self.wire()) {
            tracing::error!(error = %err, "encoding an admission answer failed");
        }
        out
    }

    /// The same answer as kube's types (for callers that want a value).
    pub fn into_review(self) -> AdmissionReview<DynamicObject> {
        let mut response = AdmissionResponse::invalid("");
        response.uid = self.uid.into_owned();
        match self.refusal {
            None => {
                response.allowed = true;
                response.result = Status::default();
            }
            Some(refusal) => {
                response.allowed = false;
                response.result =
                    Status::failure(&refusal.message, refusal.reason).with_code(refusal.code);
            }
        }
        if !self.warnings.is_empty() {
            response.warnings = Some(self.warnings);
        }
        response.into_review()
    }

    fn message_len(&self) -> usize {
        self.refusal.as_ref().map_or(0, |r| r.message.len())
            + self.warnings.iter().map(String::len).sum::<usize>()
    }

    fn wire(&self) -> WireAnswer<'_> {
        WireAnswer {
            api_version: META_API_VERSION_V1,
            kind: META_KIND,
            response: WireResponse {
                uid: &self.uid,
                allowed: self.is_allowed(),
                status: WireStatus {
                    status: self.refusal.as_ref().map(|_| "Failure"),
                    code: self.refusal.as_ref().map(|r| r.code),
                    message: self
                        .refusal
                        .as_ref()
                        .map(|r| r.message.as_str())
                        .filter(|m| !m.is_empty()),
                    reason: self.refusal.as_ref().map(|r| r.reason),
                },
                warnings: (!self.warnings.is_empty()).then_some(self.warnings.as_slice()),
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireAnswer<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: WireResponse<'a>,
}

#[derive(Serialize)]
struct WireResponse<'a> {
    uid: &'a str,
    allowed: bool,
    status: WireStatus<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<&'a [String]>,
}

#[derive(Serialize)]
struct WireStatus<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cases() -> Vec<Answer<'static>> {
        vec![
            Answer::allowed("u-1".into(), vec![]),
            Answer::allowed(
                "u-2".into(),
                vec!["waits for the \"sat\" window".into(), "second".into()],
            ),
            Answer::refused(
                "u-3".into(),
                403,
                "Forbidden",
                "plan \"deploy\" is IN_PROGRESS".into(),
            ),
            Answer::refused(
                "".into(),
                500,
                "InternalError",
                "cannot read \u{7f} ünïcode".into(),
            ),
            Answer::bad_request("u-5".into(), "the AdmissionReview has no request".into()),
        ]
    }

    #[test]
    fn encodes_the_same_bytes_as_kube_would() {
        for answer in cases() {
            let direct = answer.to_json();
            let through_kube = serde_json::to_vec(&answer.clone().into_review()).unwrap();
            assert_eq!(
                String::from_utf8(direct).unwrap(),
                String::from_utf8(through_kube).unwrap()
            );
        }
    }

    #[test]
    fn refusals_carry_code_reason_and_message() {
        let json: serde_json::Value = serde_json::from_slice(
            &Answer::refused("u".into(), 403, "Forbidden", "no".into()).to_json(),
        )
        .unwrap();
        assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["code"], 403);
        assert_eq!(json["response"]["status"]["reason"], "Forbidden");
        assert_eq!(json["response"]["status"]["message"], "no");
    }
}
