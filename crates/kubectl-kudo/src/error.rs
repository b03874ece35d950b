//! The one error type of the CLI and how it maps to exit codes.

use std::path::PathBuf;

/// Everything that can make a command fail.
///
/// Exit codes follow kubectl: 2 for usage errors (the command line itself is
/// wrong), 1 for everything else.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line is wrong (bad flag value, missing flag, conflicting flags).
    #[error("{0}")]
    Usage(String),

    /// The kubeconfig could not be read or has no usable context.
    #[error("cannot load kubeconfig: {message}; pass --kubeconfig or --context, or set KUBECONFIG")]
    Kubeconfig {
        /// What went wrong.
        message: String,
    },

    /// A file the user named could not be read or parsed.
    #[error("cannot read {}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// A file the user named holds more than the CLI reads of such a file
    /// (a device such as `/dev/zero` or a pipe that keeps writing too).
    #[error("{} is larger than {limit}; {expected}", path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, e.g. `4 MiB`.
        limit: String,
        /// What such a file must be.
        expected: &'static str,
    },

    /// The API server refused or failed a request.
    #[error("{action} failed: {message}")]
    Api {
        /// What the CLI was doing, e.g. `patching Instance default/kafka`.
        action: String,
        /// The server's message (for admission denials, the webhook's).
        message: String,
        /// HTTP status code when the server answered.
        code: Option<u16>,
    },

    /// An object the command needs does not exist.
    #[error("{0}")]
    NotFound(String),

    /// A package could not be loaded, verified or rendered.
    #[error("{0}")]
    Package(String),

    /// A package repository or registry refused, failed, or has nothing
    /// that fits (the message says what was asked and what exists).
    #[error("{0}")]
    Repository(String),

    /// Parameter values are invalid for the OperatorVersion (the message
    /// lists at most [`kudo_api::message::MAX_LISTED`] problems).
    #[error("invalid parameters:\n  - {}", kudo_api::message::listed_problems(.0, "\n  - "))]
    Parameters(Vec<String>),

    /// A plan ended in FATAL_ERROR while waiting.
    #[error("{0}")]
    PlanFailed(String),

    /// Waiting took longer than --wait-timeout.
    #[error("{0}")]
    Timeout(String),

    /// Anything else the user must act on (message says what).
    #[error("{0}")]
    Other(String),
}

impl CliError {
    /// Process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage(_) => 2,
            _ => 1,
        }
    }

    /// Wraps a kube client error with what the CLI was doing.
    pub fn api(action: impl Into<String>, err: kube::Error) -> Self {
        let action = action.into();
        match err {
            kube::Error::Api(status) => Self::Api {
                action,
                message: if status.message.is_empty() {
                    status.reason.clone()
                } else {
                    status.message.clone()
                },
                code: Some(status.code),
            },
            other => Self::Api {
                action,
                message: other.to_string(),
                code: None,
            },
        }
    }

    /// HTTP code of an API error.
    pub fn code(&self) -> Option<u16> {
        match self {
            Self::Api { code, .. } => *code,
            _ => None,
        }
    }
}

/// Result alias used across the crate.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// HTTP status code of a kube error, if the server answered.
pub fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_others_exit_1() {
        assert_eq!(CliError::Usage("x".into()).exit_code(), 2);
        assert_eq!(CliError::Other("x".into()).exit_code(), 1);
        assert_eq!(CliError::PlanFailed("x".into()).exit_code(), 1);
    }

    #[test]
    fn parameter_errors_list_every_problem() {
        let e = CliError::Parameters(vec!["a is bad".into(), "b is missing".into()]);
        assert_eq!(
            e.to_string(),
            "invalid parameters:\n  - a is bad\n  - b is missing"
        );
    }

    #[test]
    fn parameter_errors_list_twenty_problems_and_count_the_rest() {
        let problems = (0..1_000).map(|i| format!("problem {i}")).collect();
        let text = CliError::Parameters(problems).to_string();
        assert_eq!(text.lines().count(), 22, "{text}");
        assert!(text.ends_with("\n  - and 980 more problems"), "{text}");
    }
}
