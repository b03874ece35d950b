//! KUDO's repository index, `index.yaml`: `apiVersion: v1` and `entries`,
//! operator name → its versions, newest first. Read as KUDO and Helm wrote
//! it (a number where a version belongs is read as its text, `version` for
//! `operatorVersion`), checked, and written back in KUDO's shape.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::channels::Recall;
use crate::digest::Digest;
use crate::error::RepoError;
use crate::limits::{Limits, human_bytes, yaml_options};
use crate::version::Version;

/// The index's `apiVersion`, the only one KUDO and Helm wrote.
pub const INDEX_API_VERSION: &str = "v1";
/// The index file name in a repository.
pub const INDEX_FILE: &str = "index.yaml";
/// Longest operator name accepted in an index.
const MAX_NAME_LEN: usize = 253;

/// An index file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexFile {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// Operator name → versions, newest first after [`IndexFile::sort`].
    #[serde(default, deserialize_with = "crate::index_bounded::entries")]
    pub entries: BTreeMap<String, Vec<PackageVersion>>,
    /// When the index was written (RFC 3339), if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
    /// Helm's free-form index annotations; kudo-rs reads its recalls from
    /// `recalls.kudo.dev/<operator>` ([`crate::channels`]).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::index_bounded::annotations"
    )]
    pub annotations: BTreeMap<String, String>,
}

/// One package version of an index.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageVersion {
    /// The operator's name (the entry's key).
    #[serde(default)]
    pub name: String,
    /// The package version; KUDO before 0.10 and Helm called it `version`.
    #[serde(default, alias = "version")]
    pub operator_version: String,
    /// The version of the application it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// One line about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who maintains it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Where the archive can be downloaded, tried in order; relative URLs
    /// are relative to the repository.
    #[serde(default)]
    pub urls: Vec<String>,
    /// sha256 of the archive: hex, or `sha256:` and hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// When it was indexed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Withdrawn by the repository: never chosen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// Kubernetes versions it runs on, a range as Helm's `kubeVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// Helm's free-form annotations; kudo-rs reads `kudo.dev/channels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Other operators it needs and their version ranges (Helm's
    /// `dependencies`; [`crate::requirements`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<crate::requirements::IndexDependency>,
}

/// A maintainer as KUDO (`name`, `email`) and Helm (`url` too) wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Maintainer {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// E-mail address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Web page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl PackageVersion {
    /// `kafka 1.2.1` or, with an app version, `kafka 1.2.1 (app 2.5.0)`.
    pub fn label(&self) -> String {
        match self.app_version.as_deref().filter(|a| !a.is_empty()) {
            Some(app) => format!("{} {} (app {app})", self.name, self.operator_version),
            None => format!("{} {}", self.name, self.operator_version),
        }
    }

    /// The operator version, parsed; `None` when it is not a version.
    pub fn operator_semver(&self) -> Option<Version> {
        Version::parse(&self.operator_version).ok()
    }

    /// The app version, parsed; `None` when missing or not a version.
    pub fn app_semver(&self) -> Option<Version> {
        self.app_version
            .as_deref()
            .and_then(|a| Version::parse(a).ok())
    }

    /// Whether the operator version is a pre-release (only those count:
    /// the package author decides what is stable, whatever the app is).
    pub fn is_prerelease(&self) -> bool {
        self.operator_semver().is_some_and(|v| v.is_prerelease())
    }

    fn same_version(&self, other: &Self) -> bool {
        self.operator_version == other.operator_version
            && self.app_version.as_deref().unwrap_or_default()
                == other.app_version.as_deref().unwrap_or_default()
    }
}

/// KUDO's order of versions of one operator, oldest first: by app version,
/// then by operator version; a missing or unparsable version is older than
/// any parsed one. Equal versions are ordered by their text, so the order
/// is total and the same everywhere.
pub fn kudo_order(a: &PackageVersion, b: &PackageVersion) -> Ordering {
    a.app_semver()
        .cmp(&b.app_semver())
        .then_with(|| a.operator_semver().cmp(&b.operator_semver()))
        .then_with(|| a.app_version.cmp(&b.app_version))
        .then_with(|| a.operator_version.cmp(&b.operator_version))
}

/// Longest version text an index may hold.
const MAX_VERSION_LEN: usize = 128;

/// Versions, URLs and descriptions are printed to terminals: no control
/// characters (an escape sequence could rewrite what a person reads), and
/// versions of a sensible length.
fn check_printable(entry: &PackageVersion) -> Result<(), String> {
    let versions = [
        ("operatorVersion", Some(entry.operator_version.as_str())),
        ("appVersion", entry.app_version.as_deref()),
    ];
    for (field, value) in versions {
        let Some(value) = value else { continue };
        if value.chars().count() > MAX_VERSION_LEN {
            return Err(format!(
                "{field} is longer than {MAX_VERSION_LEN} characters"
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(format!("{field} holds a control character"));
        }
    }
    if entry.urls.iter().any(|u| u.chars().any(char::is_control)) {
        return Err("a URL holds a control character".into());
    }
    let description = entry.description.as_deref().unwrap_or_default();
    if description
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err("description holds a control character".into());
    }
    Ok(())
}

impl IndexFile {
    /// An empty index written now (`generated` is RFC 3339).
    pub fn new(generated: Option<String>) -> Self {
        Self {
            api_version: INDEX_API_VERSION.to_string(),
            entries: BTreeMap::new(),
            generated,
            annotations: BTreeMap::new(),
        }
    }

    /// Parses and checks an index; `source` names it in messages.
    pub fn parse(bytes: &[u8], source: &str, limits: &Limits) -> Result<Self, RepoError> {
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limits.max_index_bytes {
            return Err(RepoError::IndexTooLarge {
                source_name: source.to_string(),
                limit: human_bytes(limits.max_index_bytes),
            });
        }
        let parse_err = |detail: String| RepoError::IndexParse {
            source_name: source.to_string(),
            detail,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| parse_err(format!("not UTF-8 ({e})")))?;
        let mut index: IndexFile = serde_saphyr::from_str_with_options(text, yaml_options())
            .map_err(|e| parse_err(first_line(&e.to_string())))?;
        index.check(source)?;
        index.sort();
        Ok(index)
    }

    /// The rules an index must follow; entries without a name get their key.
    fn check(&mut self, source: &str) -> Result<(), RepoError> {
        let invalid = |detail: String| RepoError::IndexInvalid {
            source_name: source.to_string(),
            detail,
        };
        if self.api_version.is_empty() {
            return Err(invalid(
                "it has no apiVersion (an index starts with `apiVersion: v1`)".into(),
            ));
        }
        if self.api_version != INDEX_API_VERSION {
            return Err(invalid(format!(
                "apiVersion {:?} is not supported; kudo-rs reads apiVersion v1",
                self.api_version
            )));
        }
        for (key, versions) in &mut self.entries {
            check_name(key).map_err(|e| invalid(format!("entry {key:?}: {e}")))?;
            for (i, entry) in versions.iter_mut().enumerate() {
                let at = format!("entry {key:?} #{}", i + 1);
                if entry.name.is_empty() {
                    entry.name = key.clone();
                }
                if entry.name != *key {
                    return Err(invalid(format!(
                        "{at} is named {:?}; the versions under {key:?} must be {key:?}",
                        entry.name
                    )));
                }
                if entry.operator_version.is_empty() {
                    return Err(invalid(format!("{at} has no operatorVersion")));
                }
                check_printable(entry).map_err(|e| invalid(format!("{at}: {e}")))?;
                if let Some(digest) = &entry.digest {
                    Digest::parse(digest)
                        .map_err(|e| invalid(format!("{} {}: {e}", key, entry.operator_version)))?;
                }
                crate::channels::check_version(entry)
                    .map_err(|e| invalid(format!("{} {}: {e}", key, entry.operator_version)))?;
                crate::requirements::check(&entry.dependencies)
                    .map_err(|e| invalid(format!("{} {}: {e}", key, entry.operator_version)))?;
            }
        }
        crate::channels::check_index_annotations(&self.annotations).map_err(invalid)?;
        Ok(())
    }

    /// Sorts every operator's versions newest first ([`kudo_order`]).
    pub fn sort(&mut self) {
        for versions in self.entries.values_mut() {
            versions.sort_by(|a, b| kudo_order(b, a));
        }
    }

    /// Adds a version; an operator version with the same app version as
    /// one already there is refused (KUDO's duplicate rule).
    pub fn add(&mut self, entry: PackageVersion) -> Result<(), String> {
        let versions = self.entries.entry(entry.name.clone()).or_default();
        if let Some(existing) = versions.iter().find(|v| v.same_version(&entry)) {
            return Err(format!("{} is already in the index", existing.label()));
        }
        versions.push(entry);
        Ok(())
    }

    /// Adds the versions of `other` this index does not have: on a
    /// conflict this index's entry wins (KUDO's `--merge`, local first).
    /// Returns how many were added.
    pub fn merge(&mut self, other: IndexFile) -> usize {
        for (key, value) in other.annotations {
            self.annotations.entry(key).or_insert(value);
        }
        let mut added = 0;
        for entry in other.entries.into_values().flatten() {
            if self.add(entry).is_ok() {
                added += 1;
            }
        }
        self.sort();
        added
    }

    /// The index as YAML, versions newest first.
    pub fn to_yaml(&self) -> Result<String, RepoError> {
        let mut sorted = self.clone();
        sorted.sort();
        serde_saphyr::to_string(&sorted).map_err(|e| RepoError::IndexParse {
            source_name: "the index being written".into(),
            detail: e.to_string(),
        })
    }

    /// The recalls of operator `name` (none when the index has none or
    /// they are malformed; [`IndexFile::parse`] refuses malformed ones).
    pub fn recalls(&self, name: &str) -> Vec<Recall> {
        crate::channels::recalls_in(&self.annotations, name)
    }

    /// Adds a recall of operator `name`.
    pub fn add_recall(&mut self, name: &str, recall: Recall) {
        let mut recalls = self.recalls(name);
        recalls.push(recall);
        self.annotations.insert(
            format!("{}{name}", crate::channels::RECALLS_PREFIX),
            crate::channels::format_recalls(&recalls),
        );
    }

    /// Sets the channels of `OPERATOR` (every version) or
    /// `OPERATOR@VERSION` to `channels` (comma separated); returns how many
    /// versions changed, an error when none matches.
    pub fn set_channels(&mut self, target: &str, channels: &str) -> Result<usize, String> {
        let (name, version) = match target.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (target, None),
        };
        let channels = crate::channels::parse_channels(channels)?;
        let versions = self
            .entries
            .get_mut(name)
            .ok_or_else(|| format!("the index has no operator {name:?}"))?;
        let mut changed = 0;
        for entry in versions
            .iter_mut()
            .filter(|e| version.is_none_or(|v| e.operator_version == v))
        {
            entry.set_channels(&channels);
            changed += 1;
        }
        if changed == 0 {
            return Err(format!(
                "the index has no {name} {}",
                version.unwrap_or_default()
            ));
        }
        Ok(changed)
    }

    /// Number of versions over all operators.
    pub fn len(&self) -> usize {
        self.entries.values().map(Vec::len).sum()
    }

    /// Whether the index lists nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Operator names as Kubernetes names objects: lowercase letters, digits,
/// `-` and `.` (upper case and `_` are tolerated, as KUDO did not check).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("an empty name".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("a name longer than {MAX_NAME_LEN} characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        || name.starts_with('.')
    {
        return Err(format!(
            "{name:?} is not an operator name (letters, digits, '-', '.' and '_')"
        ));
    }
    Ok(())
}

/// KUDO's archive name: `<name>-<appVersion>_<operatorVersion>.tgz`, or
/// `<name>-<operatorVersion>.tgz` without an app version.
pub fn archive_name(name: &str, app_version: Option<&str>, operator_version: &str) -> String {
    match app_version.filter(|a| !a.is_empty()) {
        Some(app) => format!("{name}-{app}_{operator_version}.tgz"),
        None => format!("{name}-{operator_version}.tgz"),
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().to_string();
    // serde-saphyr adds a snippet of the input; the position is enough.
    match lines.find(|l| l.contains("-->")) {
        Some(at) => format!("{first} ({})", at.trim().trim_start_matches("-->").trim()),
        None => first,
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
