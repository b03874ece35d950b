//! What the manager remembers of channel moves that could not start, so a
//! held or failing move costs no download at each reconcile (drift
//! rechecks and other events bring an Instance back every few seconds):
//!
//! - per archive (repository, entry and the index's digest): a package
//!   refused for good, or a move that failed (a download, an API call),
//!   not tried again before its pause ends;
//! - per OperatorVersion in a move's way: the version of it compared, the
//!   archive, what differs, and the Instances waiting for it to go (a
//!   change to it brings them back).
//!
//! Each map keeps at most [`MAX_KEPT`] entries; an entry goes when the move
//! it held succeeds.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};

use super::package::MoveError;
use crate::bounded::insert_within;

/// Entries kept at most in each map.
const MAX_KEPT: usize = 1024;

/// `(repository URL, "entry label and archive digest")`.
pub(super) type Archive = (String, String);

/// What is remembered of channel moves that could not start.
#[derive(Debug, Default)]
pub struct MoveMemo {
    archives: Mutex<HashMap<Archive, Remembered>>,
    in_the_way: Mutex<HashMap<(String, String), Compared>>,
}

#[derive(Debug, Clone)]
enum Remembered {
    /// Refused whatever the moment: another index is needed.
    Refused(String),
    /// Failed; not tried again before `until`.
    Failed {
        until: jiff::Timestamp,
        message: String,
    },
}

#[derive(Debug)]
struct Compared {
    /// uid and resourceVersion of the OperatorVersion compared.
    version: (String, String),
    archive: Archive,
    message: String,
    /// Instances (by name, in the OperatorVersion's namespace) whose move
    /// it holds.
    waiting: BTreeSet<String>,
}

fn version_of(ov: &kudo_api::OperatorVersion) -> (String, String) {
    (
        ov.metadata.uid.clone().unwrap_or_default(),
        ov.metadata.resource_version.clone().unwrap_or_default(),
    )
}

fn key_of(ov: &kudo_api::OperatorVersion) -> (String, String) {
    (
        ov.metadata.namespace.clone().unwrap_or_default(),
        ov.metadata.name.clone().unwrap_or_default(),
    )
}

impl MoveMemo {
    /// Why the archive's move cannot start now, if that is known.
    pub(super) fn archive(&self, archive: &Archive, now: jiff::Timestamp) -> Option<MoveError> {
        let archives = self.archives.lock().unwrap_or_else(PoisonError::into_inner);
        match archives.get(archive)? {
            Remembered::Refused(message) => Some(MoveError::Package(message.clone())),
            Remembered::Failed { until, message } if now < *until => Some(MoveError::Paused {
                message: message.clone(),
                until: *until,
            }),
            Remembered::Failed { .. } => None,
        }
    }

    /// Remembers why fetching or checking the archive failed; it is tried
    /// again at `retry` (a refusal: not before another index).
    pub(super) fn archive_failed(
        &self,
        archive: Archive,
        failed: &MoveError,
        retry: jiff::Timestamp,
    ) {
        let remembered = match failed {
            MoveError::Package(message) => Remembered::Refused(message.clone()),
            MoveError::Failed(message) => Remembered::Failed {
                until: retry,
                message: message.clone(),
            },
            MoveError::InTheWay(_) | MoveError::Paused { .. } => return,
        };
        let mut archives = self.archives.lock().unwrap_or_else(PoisonError::into_inner);
        insert_within(&mut archives, archive, remembered, MAX_KEPT);
    }

    /// What differs, when this very version of `ov` was found in the way of
    /// the archive's package before; `instance` is then waiting for it.
    pub(super) fn in_the_way(
        &self,
        ov: &kudo_api::OperatorVersion,
        archive: &Archive,
        instance: &str,
    ) -> Option<String> {
        let mut found = self
            .in_the_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let compared = found.get_mut(&key_of(ov))?;
        if compared.version != version_of(ov) || compared.archive != *archive {
            return None;
        }
        compared.waiting.insert(instance.to_string());
        Some(compared.message.clone())
    }

    /// Remembers that `ov` is in the way of the archive's package, and that
    /// `instance` waits for it.
    pub(super) fn keep_in_the_way(
        &self,
        ov: &kudo_api::OperatorVersion,
        archive: &Archive,
        message: &str,
        instance: &str,
    ) {
        let mut found = self
            .in_the_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let key = key_of(ov);
        let mut waiting = found.remove(&key).map(|c| c.waiting).unwrap_or_default();
        waiting.insert(instance.to_string());
        let compared = Compared {
            version: version_of(ov),
            archive: archive.clone(),
            message: message.to_string(),
            waiting,
        };
        insert_within(&mut found, key, compared, MAX_KEPT);
    }

    /// The move to OperatorVersion `namespace/name` from `archive`
    /// started: nothing holds it any more.
    pub(super) fn moved(&self, archive: &Archive, namespace: &str, name: &str) {
        self.archives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(archive);
        self.in_the_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// Whether Instance `instance` of `namespace` waits for OperatorVersion
    /// `namespace/name` to go: a change to it brings the Instance back.
    pub fn waits_for(&self, namespace: &str, name: &str, instance: &str) -> bool {
        self.in_the_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(namespace.to_string(), name.to_string()))
            .is_some_and(|c| c.waiting.contains(instance))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ov(version: &str) -> kudo_api::OperatorVersion {
        let mut ov = kudo_api::OperatorVersion::new("web-0.3.0", Default::default());
        ov.metadata.namespace = Some("team".into());
        ov.metadata.uid = Some("u1".into());
        ov.metadata.resource_version = Some(version.into());
        ov
    }

    fn archive() -> Archive {
        ("https://repo/".into(), "sha256:aa".into())
    }

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn a_refused_package_stays_refused_and_a_failed_download_waits_its_pause() {
        let memo = MoveMemo::default();
        memo.archive_failed(archive(), &MoveError::Failed("timeout".into()), at(30));
        assert!(matches!(
            memo.archive(&archive(), at(10)),
            Some(MoveError::Paused { message, until }) if message == "timeout" && until == at(30)
        ));
        assert!(memo.archive(&archive(), at(30)).is_none(), "tried again");
        memo.archive_failed(archive(), &MoveError::Package("verify".into()), at(30));
        assert!(matches!(
            memo.archive(&archive(), at(9_999)),
            Some(MoveError::Package(_))
        ));
        memo.moved(&archive(), "team", "web-0.3.0");
        assert!(memo.archive(&archive(), at(10)).is_none());
    }

    #[test]
    fn an_operator_version_in_the_way_is_compared_again_only_once_it_changes() {
        let memo = MoveMemo::default();
        memo.keep_in_the_way(&ov("1"), &archive(), "templates/a.yaml differs", "web");
        assert_eq!(
            memo.in_the_way(&ov("1"), &archive(), "other").as_deref(),
            Some("templates/a.yaml differs")
        );
        assert!(memo.waits_for("team", "web-0.3.0", "web"));
        assert!(memo.waits_for("team", "web-0.3.0", "other"));
        assert!(!memo.waits_for("elsewhere", "web-0.3.0", "web"));
        assert_eq!(memo.in_the_way(&ov("2"), &archive(), "web"), None);
        let other_archive = ("https://repo/".into(), "sha256:bb".into());
        assert_eq!(memo.in_the_way(&ov("1"), &other_archive, "web"), None);
        memo.moved(&archive(), "team", "web-0.3.0");
        assert!(!memo.waits_for("team", "web-0.3.0", "web"));
    }

    #[test]
    fn what_is_remembered_stays_within_its_bound() {
        let memo = MoveMemo::default();
        for i in 0..=MAX_KEPT {
            let archive = ("https://repo/".to_string(), format!("sha256:{i}"));
            memo.archive_failed(archive, &MoveError::Package("no".into()), at(0));
        }
        assert_eq!(memo.archives.lock().unwrap().len(), MAX_KEPT);
    }
}
