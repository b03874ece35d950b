//! A repository's status after a sync, decided without IO: nothing is
//! written when nothing changed, so following an unchanged index costs its
//! one request.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kudo_api::Condition;
use kudo_api::repository::{OperatorRepositoryStatus, READY_CONDITION};

/// What one sync found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid index.
    Read {
        /// `sha256:` and hex of it.
        digest: String,
        /// Operators in it.
        packages: i64,
        /// Versions in it.
        versions: i64,
    },
    /// No valid index this time; the last good one stays in use.
    Failed {
        /// `InvalidSpec`, `SecretUnreadable`, `FetchFailed`, `InvalidIndex`.
        reason: &'static str,
        /// The error, naming the URL or the Secret.
        message: String,
    },
}

/// The status to write after `outcome`, or `None` when it would say what
/// `old` says already.
pub fn next_status(
    old: Option<&OperatorRepositoryStatus>,
    generation: Option<i64>,
    outcome: &Outcome,
    now: Timestamp,
) -> Option<OperatorRepositoryStatus> {
    let old_ready = old.and_then(|s| s.conditions.iter().find(|c| c.type_ == READY_CONDITION));
    let (status, reason, message) = match outcome {
        Outcome::Read {
            packages, versions, ..
        } => (
            "True",
            "Synced",
            format!("{packages} operators, {versions} versions"),
        ),
        Outcome::Failed { reason, message } => (
            "False",
            *reason,
            kudo_api::message::bounded(message).into_owned(),
        ),
    };
    let mut next = old.cloned().unwrap_or_default();
    next.observed_generation = generation;
    if let Outcome::Read {
        digest,
        packages,
        versions,
    } = outcome
    {
        next.index_digest = Some(digest.clone());
        next.packages = Some(*packages);
        next.versions = Some(*versions);
    }
    let condition = Condition {
        type_: READY_CONDITION.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: old_ready
            .filter(|c| c.status == status)
            .map_or(Time(now), |c| c.last_transition_time.clone()),
        observed_generation: generation,
    };
    next.conditions.retain(|c| c.type_ != READY_CONDITION);
    next.conditions.push(condition);
    if old == Some(&next) {
        return None;
    }
    next.last_sync_time = Some(Time(now));
    // lastSyncTime alone differing is no change.
    let mut compare = next.clone();
    compare.last_sync_time = old.and_then(|o| o.last_sync_time.clone());
    (old != Some(&compare)).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn read(digest: &str) -> Outcome {
        Outcome::Read {
            digest: digest.into(),
            packages: 3,
            versions: 4,
        }
    }

    #[test]
    fn an_unchanged_index_writes_nothing() {
        let first = next_status(
            None,
            Some(1),
            &read("sha256:aa"),
            at("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(first.packages, Some(3));
        assert_eq!(first.conditions[0].status, "True");
        assert_eq!(first.conditions[0].message, "3 operators, 4 versions");
        assert_eq!(
            next_status(
                Some(&first),
                Some(1),
                &read("sha256:aa"),
                at("2026-01-01T00:10:00Z")
            ),
            None
        );
        let changed = next_status(
            Some(&first),
            Some(1),
            &read("sha256:bb"),
            at("2026-01-01T00:10:00Z"),
        )
        .unwrap();
        assert_eq!(changed.index_digest.as_deref(), Some("sha256:bb"));
        assert_eq!(
            changed.conditions[0].last_transition_time, first.conditions[0].last_transition_time,
            "still Ready: the transition time stays"
        );
        assert!(
            next_status(
                Some(&first),
                Some(2),
                &read("sha256:aa"),
                at("2026-01-01T00:10:00Z")
            )
            .is_some(),
            "a new generation is recorded"
        );
    }

    #[test]
    fn a_failure_says_why_and_keeps_what_was_last_read() {
        let good = next_status(
            None,
            Some(1),
            &read("sha256:aa"),
            at("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        let failed = Outcome::Failed {
            reason: "FetchFailed",
            message: "http://r/index.yaml: connection refused".into(),
        };
        let bad = next_status(Some(&good), Some(1), &failed, at("2026-01-01T00:10:00Z")).unwrap();
        let ready = &bad.conditions[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "FetchFailed")
        );
        assert!(ready.message.contains("connection refused"));
        assert_eq!(
            bad.index_digest.as_deref(),
            Some("sha256:aa"),
            "the last good index"
        );
        assert_eq!(
            next_status(Some(&bad), Some(1), &failed, at("2026-01-01T00:20:00Z")),
            None,
            "the same failure again writes nothing"
        );
    }
}
