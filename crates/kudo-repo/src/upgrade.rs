//! The version an Instance that tracks a channel should run, from one
//! operator's index entries and what is installed. Pure; the manager
//! decides *when* (holds, windows, approval), this decides *what*.
//!
//! The rules, in order:
//! - a candidate is in the channel, fits the range, is neither removed nor
//!   recalled, and runs on the cluster's Kubernetes version;
//! - without a range, candidates keep the installed major version (a range
//!   that admits another major is how one asks to cross it);
//! - versions are compared by operator version (the range's subject);
//! - an installed recalled version moves to the newest candidate above it,
//!   or, only with `allow_downgrade`, to the newest below it;
//! - otherwise only a newer candidate is a move: never a silent downgrade.

use std::cmp::Ordering;

use crate::channels::Recall;
use crate::index::{PackageVersion, kudo_order};
use crate::range::Range;
use crate::version::Version;

/// What an Instance tracks and where it stands.
#[derive(Clone, Copy, Debug)]
pub struct Track<'a> {
    /// The channel (`stable`).
    pub channel: &'a str,
    /// Operator versions allowed; `None`: any of the installed major.
    pub range: Option<&'a Range>,
    /// The installed operator version; `None` before the first install.
    pub installed: Option<&'a str>,
    /// Whether a recalled version may be left for an older one.
    pub allow_downgrade: bool,
    /// The cluster's Kubernetes version (see
    /// [`crate::channels::kubernetes_release`]); `None` when unknown.
    pub kubernetes: Option<&'a Version>,
}

/// Why a version is moved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Nothing is installed yet.
    Install,
    /// A newer version in the channel.
    Newer {
        /// The installed version.
        from: String,
    },
    /// The installed version was recalled.
    Recall {
        /// The installed version.
        from: String,
        /// The recall's reason.
        reason: String,
        /// Whether the move goes to an older version (`allow_downgrade`).
        back: bool,
    },
}

/// The decision.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice<'a> {
    /// Run `to`.
    Move {
        /// The version to run.
        to: &'a PackageVersion,
        /// Why.
        why: Why,
    },
    /// The installed version is the right one; `note` says why.
    Stay {
        /// `1.4.0 is the newest in channel stable matching ^1`.
        note: String,
    },
    /// A move is needed (nothing installed, or a recall) but no version
    /// qualifies; `message` says what was excluded and why.
    NoVersion {
        /// The reason, for status and blockers.
        message: String,
    },
}

/// The decision and the newest version that qualifies (status shows it
/// as the available version).
#[derive(Clone, Debug, PartialEq)]
pub struct Resolution<'a> {
    /// What to do.
    pub choice: Choice<'a>,
    /// The newest candidate, if any.
    pub available: Option<&'a PackageVersion>,
}

impl Why {
    /// For history and plan status: `channel stable: 1.3.0 → 1.4.0`,
    /// `recall of 1.3.0: CVE-2026-1 (→ 1.3.1)`.
    pub fn describe(&self, channel: &str, to: &str) -> String {
        match self {
            Self::Install => format!("channel {channel}: install {to}"),
            Self::Newer { from } => format!("channel {channel}: {from} → {to}"),
            Self::Recall { from, reason, .. } => format!("recall of {from}: {reason} (→ {to})"),
        }
    }
}

/// Why a version is not a candidate; `None` when it is one.
fn exclusion(
    v: &PackageVersion,
    recalls: &[Recall],
    track: &Track<'_>,
    major: Option<u64>,
) -> Option<String> {
    let Some(semver) = v.operator_semver() else {
        return Some("not a semantic version".into());
    };
    if v.removed {
        return Some("removed from the repository".into());
    }
    if !v.in_channel(track.channel) {
        return Some(format!("not in channel {}", track.channel));
    }
    // A channel that names a pre-release offers it; the range still applies.
    if let Some(range) = track.range
        && !range.matches(&semver, true)
    {
        return Some(format!("outside {range}"));
    }
    if let Some(major) = major
        && semver.major != major
    {
        return Some(format!(
            "another major version than {major}.x (a range that admits it allows it)"
        ));
    }
    if let Some(recall) = recalls.iter().find(|r| r.covers(&semver)) {
        return Some(format!("recalled ({})", recall.reason));
    }
    v.kubernetes_mismatch(track.kubernetes)
}

fn by_operator_version(a: &PackageVersion, b: &PackageVersion) -> Ordering {
    a.operator_semver()
        .cmp(&b.operator_semver())
        .then_with(|| kudo_order(a, b))
}

/// `channel stable matching ^1`.
fn scope(track: &Track<'_>, major: Option<u64>) -> String {
    match (track.range, major) {
        (Some(range), _) => format!("channel {} matching {range}", track.channel),
        (None, Some(major)) => format!("channel {} matching {major}.x", track.channel),
        (None, None) => format!("channel {}", track.channel),
    }
}

/// `; 1.5.0 recalled (CVE-1); 1.6.0 needs Kubernetes >=1.30, ...` for
/// the versions above `above` that were left out for a reason worth
/// telling (not merely another channel or range), newest first, at most 3.
fn hidden_note(
    versions: &[PackageVersion],
    recalls: &[Recall],
    track: &Track<'_>,
    major: Option<u64>,
    above: Option<&Version>,
) -> String {
    let mut hidden: Vec<(&PackageVersion, String)> = versions
        .iter()
        .filter(|v| v.in_channel(track.channel))
        .filter(|v| {
            v.operator_semver()
                .is_some_and(|s| above.is_none_or(|a| &s > a))
        })
        .filter_map(|v| exclusion(v, recalls, track, major).map(|why| (v, why)))
        .filter(|(_, why)| why.starts_with("recalled") || why.starts_with("needs Kubernetes"))
        .collect();
    hidden.sort_by(|a, b| by_operator_version(b.0, a.0));
    hidden
        .iter()
        .take(3)
        .map(|(v, why)| format!("; {} {why}", v.operator_version))
        .collect()
}

/// Decides the version for `track` among one operator's `versions`.
pub fn resolve<'a>(
    versions: &'a [PackageVersion],
    recalls: &[Recall],
    track: &Track<'_>,
) -> Resolution<'a> {
    let installed = match track.installed {
        None => None,
        Some(text) => match Version::parse(text) {
            Ok(v) => Some(v),
            Err(_) => {
                return Resolution {
                    choice: Choice::NoVersion {
                        message: format!(
                            "the installed version {text:?} is not a semantic version, so no \
                             channel version can be compared with it"
                        ),
                    },
                    available: None,
                };
            }
        },
    };
    let major = match (track.range, &installed) {
        (None, Some(v)) => Some(v.major),
        _ => None,
    };
    let candidates: Vec<&PackageVersion> = versions
        .iter()
        .filter(|v| exclusion(v, recalls, track, major).is_none())
        .collect();
    let newest = candidates
        .iter()
        .copied()
        .max_by(|a, b| by_operator_version(a, b));
    let scope = scope(track, major);
    let Some(installed) = installed else {
        let choice = match newest {
            Some(to) => Choice::Move {
                to,
                why: Why::Install,
            },
            None => Choice::NoVersion {
                message: format!(
                    "no version in {scope} qualifies{}",
                    hidden_note(versions, recalls, track, major, None)
                ),
            },
        };
        return Resolution {
            choice,
            available: newest,
        };
    };
    let from = track.installed.unwrap_or_default().to_string();
    let newer = newest.filter(|n| n.operator_semver().is_some_and(|s| s > installed));
    let recall = recalls.iter().find(|r| r.covers(&installed));
    let choice = match (recall, newer) {
        (Some(recall), Some(to)) => Choice::Move {
            to,
            why: Why::Recall {
                from,
                reason: recall.reason.clone(),
                back: false,
            },
        },
        (Some(recall), None) => {
            let older = candidates
                .iter()
                .copied()
                .filter(|v| v.operator_semver().is_some_and(|s| s < installed))
                .max_by(|a, b| by_operator_version(a, b));
            match older {
                Some(to) if track.allow_downgrade => Choice::Move {
                    to,
                    why: Why::Recall {
                        from,
                        reason: recall.reason.clone(),
                        back: true,
                    },
                },
                Some(to) => Choice::NoVersion {
                    message: format!(
                        "{from} is recalled ({}) and no newer version in {scope} qualifies{}; \
                         {} is older: set allowDowngrade to move back to it",
                        recall.reason,
                        hidden_note(versions, recalls, track, major, Some(&installed)),
                        to.operator_version
                    ),
                },
                None => Choice::NoVersion {
                    message: format!(
                        "{from} is recalled ({}) and no other version in {scope} qualifies{}",
                        recall.reason,
                        hidden_note(versions, recalls, track, major, Some(&installed))
                    ),
                },
            }
        }
        (None, Some(to)) => Choice::Move {
            to,
            why: Why::Newer { from },
        },
        (None, None) => Choice::Stay {
            note: match newest {
                Some(n) if n.operator_semver().is_some_and(|s| s == installed) => format!(
                    "{from} is the newest in {scope}{}",
                    hidden_note(versions, recalls, track, major, Some(&installed))
                ),
                Some(n) => format!(
                    "{from} is newer than {}, the newest in {scope}; moving back would be a \
                     downgrade",
                    n.operator_version
                ),
                None => format!(
                    "no version in {scope} qualifies{}; {from} stays",
                    hidden_note(versions, recalls, track, major, Some(&installed))
                ),
            },
        },
    };
    Resolution {
        choice,
        available: newest,
    }
}

#[cfg(test)]
#[path = "upgrade_tests.rs"]
mod tests;
