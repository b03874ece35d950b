//! Choosing one index entry for a name and optional version ranges: the
//! newest in KUDO's order ([`crate::index::kudo_order`]) among those that
//! fit, pre-releases only when asked for, removed and recalled versions
//! never (a recalled version is named with its reason). When
//! nothing fits, the error says what was asked and what there is.

use std::fmt;

use crate::channels::Recall;
use crate::error::RepoError;
use crate::index::{IndexFile, PackageVersion, kudo_order};
use crate::range::Range;
use crate::version::Version;

/// What to resolve.
#[derive(Clone, Copy, Debug, Default)]
pub struct Query<'a> {
    /// Operator name.
    pub name: &'a str,
    /// Operator version or range (`1.2.3`, `^1.2`, `>=1.2 <2`).
    pub operator_version: Option<&'a str>,
    /// App version or range.
    pub app_version: Option<&'a str>,
    /// Let pre-releases fit (`--devel`).
    pub include_prereleases: bool,
}

impl Query<'_> {
    /// `kafka`, `kafka 1.3.x`, `kafka 1.3.x (app version ^2)`.
    pub fn describe(&self) -> String {
        let mut text = self.name.to_string();
        if let Some(v) = self.operator_version {
            text.push(' ');
            text.push_str(v);
        }
        if let Some(a) = self.app_version {
            text.push_str(&format!(" (app version {a})"));
        }
        text
    }
}

/// Nothing in a repository fits a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// No operator of that name (rather than no fitting version).
    pub no_such_package: bool,
    /// The whole message.
    pub message: String,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A requested version: a range, or text that must equal a version that
/// is not semver (KUDO compared such versions as text).
enum Want {
    Any,
    Range(Range),
    Text(String),
}

impl Want {
    fn new<'e>(
        asked: Option<&str>,
        mut existing: impl Iterator<Item = Option<&'e str>>,
    ) -> Result<Self, RepoError> {
        let Some(asked) = asked.map(str::trim).filter(|a| !a.is_empty()) else {
            return Ok(Self::Any);
        };
        match Range::parse(asked) {
            Ok(range) => Ok(Self::Range(range)),
            Err(_) if existing.any(|e| e == Some(asked)) => Ok(Self::Text(asked.to_string())),
            Err(e) => Err(RepoError::Range(e)),
        }
    }

    fn fits(&self, text: Option<&str>, include_pre: bool) -> bool {
        match self {
            Self::Any => true,
            Self::Text(t) => text == Some(t.as_str()),
            Self::Range(r) => text
                .and_then(|t| Version::parse(t).ok())
                .is_some_and(|v| r.matches(&v, include_pre)),
        }
    }
}

/// Whether one of `recalls` covers `v`; which.
fn recall_of<'r>(recalls: &'r [Recall], v: &PackageVersion) -> Option<&'r Recall> {
    let version = v.operator_semver()?;
    recalls.iter().find(|r| r.covers(&version))
}

/// The entry of `versions` (one operator's versions in `repository`, whose
/// recalls are `recalls`) that fits `query` best.
pub fn select<'a>(
    versions: &'a [PackageVersion],
    recalls: &[Recall],
    repository: &str,
    query: &Query<'_>,
) -> Result<&'a PackageVersion, RepoError> {
    let op = Want::new(
        query.operator_version,
        versions.iter().map(|v| Some(v.operator_version.as_str())),
    )?;
    let app = Want::new(
        query.app_version,
        versions.iter().map(|v| v.app_version.as_deref()),
    )?;
    let fits = |v: &PackageVersion, pre: bool| {
        // Without a range, a pre-release is stable only with --devel.
        let stable_enough = pre || !v.is_prerelease() || !matches!(op, Want::Any);
        stable_enough
            && op.fits(Some(&v.operator_version), pre)
            && app.fits(v.app_version.as_deref(), pre)
    };
    let best = versions
        .iter()
        .filter(|v| !v.removed && recall_of(recalls, v).is_none())
        .filter(|v| fits(v, query.include_prereleases))
        .max_by(|a, b| kudo_order(a, b));
    if let Some(best) = best {
        return Ok(best);
    }
    if let Some((v, recall)) = versions
        .iter()
        .filter(|v| !v.removed && fits(v, true))
        .filter_map(|v| recall_of(recalls, v).map(|r| (v, r)))
        .max_by(|a, b| kudo_order(a.0, b.0))
    {
        return Err(NotFound {
            no_such_package: false,
            message: format!(
                "{}: {} is recalled in repository {repository} ({}){}",
                query.describe(),
                v.label(),
                recall.reason,
                newest_note(versions)
            ),
        }
        .into());
    }
    Err(no_version(versions, repository, query, &fits).into())
}

fn no_version(
    versions: &[PackageVersion],
    repository: &str,
    query: &Query<'_>,
    fits: &dyn Fn(&PackageVersion, bool) -> bool,
) -> NotFound {
    let asked = query.describe();
    let message = if let Some(removed) = versions.iter().find(|v| v.removed && fits(v, true)) {
        format!(
            "{asked}: {} was removed from repository {repository}{}",
            removed.label(),
            newest_note(versions)
        )
    } else if !query.include_prereleases {
        match versions
            .iter()
            .filter(|v| !v.removed && fits(v, true))
            .max_by(|a, b| kudo_order(a, b))
        {
            Some(pre) => format!(
                "{asked}: only pre-releases fit in repository {repository} ({}); pass --devel to use them",
                pre.operator_version
            ),
            None => format!(
                "{asked}: no such version in repository {repository}{}",
                newest_note(versions)
            ),
        }
    } else {
        format!(
            "{asked}: no such version in repository {repository}{}",
            newest_note(versions)
        )
    };
    NotFound {
        no_such_package: false,
        message,
    }
}

/// `; newest is 1.2.1 (it has 1.2.1, 1.2.0 and 3 more)`.
fn newest_note(versions: &[PackageVersion]) -> String {
    let mut live: Vec<&PackageVersion> = versions.iter().filter(|v| !v.removed).collect();
    live.sort_by(|a, b| kudo_order(b, a));
    let Some(newest) = live
        .iter()
        .find(|v| !v.is_prerelease())
        .or_else(|| live.first())
    else {
        return "; it has no versions".into();
    };
    let shown: Vec<String> = live.iter().take(5).map(|v| short_label(v)).collect();
    let more = live.len().saturating_sub(shown.len());
    let mut note = format!("; newest is {}", short_label(newest));
    if live.len() > 1 {
        note.push_str(&format!(" (it has {}", shown.join(", ")));
        if more > 0 {
            note.push_str(&format!(" and {more} more"));
        }
        note.push(')');
    }
    note
}

fn short_label(v: &PackageVersion) -> String {
    match v.app_version.as_deref().filter(|a| !a.is_empty()) {
        Some(app) => format!("{} (app {app})", v.operator_version),
        None => v.operator_version.clone(),
    }
}

/// [`select`] over a whole index; an unknown name is an error listing
/// similar names.
pub fn select_in_index<'a>(
    index: &'a IndexFile,
    repository: &str,
    query: &Query<'_>,
) -> Result<&'a PackageVersion, RepoError> {
    match index.entries.get(query.name) {
        Some(versions) => select(versions, &index.recalls(query.name), repository, query),
        None => Err(no_such_package(
            query.name,
            repository,
            index.entries.keys().map(String::as_str),
        )
        .into()),
    }
}

/// `kafka: no package of that name in repository community; similar: kafka-connect`.
pub fn no_such_package<'a>(
    name: &str,
    repository: &str,
    names: impl Iterator<Item = &'a str>,
) -> NotFound {
    let lower = name.to_ascii_lowercase();
    let similar: Vec<&str> = names
        .filter(|n| {
            let n = n.to_ascii_lowercase();
            n.contains(&lower) || lower.contains(&n) || close(&n, &lower)
        })
        .take(5)
        .collect();
    let hint = if similar.is_empty() {
        String::new()
    } else {
        format!("; similar names: {}", similar.join(", "))
    };
    NotFound {
        no_such_package: true,
        message: format!("{name}: no package of that name in repository {repository}{hint}"),
    }
}

/// Edit distance of at most 2, for typos (names are short).
fn close(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 || b.len() > 64 {
        return false;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let best = (prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1);
            row.push(best);
        }
        prev = row;
    }
    prev.last().is_some_and(|d| *d <= 2)
}

/// Whether a version is listed by `search TEXT`: the text (any case) in its
/// name or description; an empty text lists everything.
pub fn matches_search(entry: &PackageVersion, text: &str) -> bool {
    let text = text.to_lowercase();
    text.is_empty()
        || entry.name.to_lowercase().contains(&text)
        || entry
            .description
            .as_deref()
            .is_some_and(|d| d.to_lowercase().contains(&text))
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
