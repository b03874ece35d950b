//! The AdmissionReview answer: what was decided, and its JSON through
//! kube's admission types.

use std::borrow::Cow;

use kube::core::admission::{AdmissionResponse, AdmissionReview};
use kube::core::{DynamicObject, Status};

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

    /// How the request was answered, for metrics.
    pub fn verdict(&self) -> ReviewVerdict {
        match &self.refusal {
            None => ReviewVerdict::Allowed,
            Some(refusal) if refusal.code >= 500 => ReviewVerdict::Failed,
            Some(refusal) if refusal.code == 400 => ReviewVerdict::Invalid,
            Some(_) => ReviewVerdict::Denied,
        }
    }

    /// The answer as the JSON body of the HTTP response.
    pub fn into_json(self) -> Vec<u8> {
        // Serialising kube's types cannot fail: no maps with non-string
        // keys, no floats.
        serde_json::to_vec(&self.into_review()).unwrap_or_default()
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
            Answer::refused("u-6".into(), 403, "Forbidden", String::new()),
            Answer::allowed("u-\"7\"".into(), vec!["line\nbreak, tab\t and \\".into()]),
        ]
    }

    #[test]
    fn every_answer_is_an_admission_review_v1_echoing_the_uid() {
        for answer in cases() {
            let (uid, allowed) = (answer.uid.to_string(), answer.refusal.is_none());
            let json: serde_json::Value = serde_json::from_slice(&answer.into_json()).unwrap();
            assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
            assert_eq!(json["kind"], "AdmissionReview");
            assert_eq!(json["response"]["uid"], uid.as_str());
            assert_eq!(json["response"]["allowed"], allowed);
        }
    }

    #[test]
    fn refusals_carry_code_reason_and_message() {
        let json: serde_json::Value = serde_json::from_slice(
            &Answer::refused("u".into(), 403, "Forbidden", "no".into()).into_json(),
        )
        .unwrap();
        assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["code"], 403);
        assert_eq!(json["response"]["status"]["reason"], "Forbidden");
        assert_eq!(json["response"]["status"]["message"], "no");
    }
}
