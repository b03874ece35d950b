//! Classification of API failures into transient (step ERROR, retried
//! with backoff) and permanent (step FATAL_ERROR). Pure: it reads the
//! status code, reason and message the API server answered.

/// Whether an API failure can succeed on retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Retry with backoff (409, 429, 5xx, timeouts, connection errors).
    Transient,
    /// No retry fixes it (immutable field, unknown kind, invalid object).
    Fatal,
}

/// Classify an API status by HTTP code, reason and message.
pub fn classify_status(code: u16, reason: &str, message: &str) -> Severity {
    match code {
        409 | 429 | 408 | 500..=599 => Severity::Transient,
        // Admission webhooks and quota reject with 403; a person must act.
        400 | 403 | 404 | 405 | 415 => Severity::Fatal,
        422 => {
            if reason == "Invalid" || message.contains("field is immutable") {
                Severity::Fatal
            } else {
                Severity::Transient
            }
        }
        // Unauthorized may be a token rotation in progress.
        401 => Severity::Transient,
        _ if code >= 400 => Severity::Fatal,
        _ => Severity::Transient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_throttling_and_server_errors_are_transient() {
        for code in [409, 429, 500, 503, 504, 401, 408] {
            assert_eq!(classify_status(code, "", ""), Severity::Transient, "{code}");
        }
    }

    #[test]
    fn refusals_a_retry_cannot_fix_are_fatal() {
        assert_eq!(
            classify_status(
                404,
                "NotFound",
                "the server could not find the requested resource"
            ),
            Severity::Fatal
        );
        assert_eq!(classify_status(400, "BadRequest", "bad"), Severity::Fatal);
        assert_eq!(classify_status(403, "Forbidden", "denied"), Severity::Fatal);
        assert_eq!(
            classify_status(422, "Invalid", "spec.selector: field is immutable"),
            Severity::Fatal
        );
        assert_eq!(
            classify_status(422, "Other", "try again"),
            Severity::Transient
        );
    }
}
