//! What the index says about releases beyond KUDO's fields: the channels
//! a version is in, the Kubernetes versions it runs on, and the versions a
//! repository recalled.
//!
//! Helm reads a YAML index strictly (an unknown field refuses the whole
//! index), KUDO leniently. So these live only in fields Helm already has:
//! the version's `annotations` (`kudo.dev/channels: stable,beta`) and
//! `kubeVersion` (a range, as in a Helm chart), and the index's top-level
//! `annotations` (`recalls.kudo.dev/<operator>`, one `RANGE: REASON` per
//! line). KUDO ignores all of them.

use std::collections::BTreeMap;
use std::fmt;

use crate::index::PackageVersion;
use crate::range::Range;
use crate::version::Version;

/// Version annotation: the channels, comma separated.
pub const CHANNELS_ANNOTATION: &str = "kudo.dev/channels";
/// Index annotation prefix: `recalls.kudo.dev/<operator>`.
pub const RECALLS_PREFIX: &str = "recalls.kudo.dev/";
/// The channel of a release version that names none.
pub const DEFAULT_CHANNEL: &str = "stable";
/// Channels per version.
pub const MAX_CHANNELS: usize = 16;
/// Recalls per operator.
pub const MAX_RECALLS: usize = 64;
/// Characters of a recall's reason.
pub const MAX_REASON_LEN: usize = 1024;

/// Versions a repository withdrew, and why; a recalled version is never
/// chosen, and an Instance running one is moved off it.
#[derive(Clone, Debug)]
pub struct Recall {
    /// The operator versions recalled (pre-releases included).
    pub range: Range,
    /// Why, shown in status, history and Events (`CVE-2026-1: data loss`).
    pub reason: String,
}

impl Recall {
    /// A recall of the versions in `range` for `reason` (one line, at
    /// most [`MAX_REASON_LEN`] characters).
    pub fn new(range: &str, reason: &str) -> Result<Self, String> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(format!("recall {:?} gives no reason", range.trim()));
        }
        if reason.contains(['\n', '\r']) {
            return Err(format!(
                "the reason of recall {:?} must be one line",
                range.trim()
            ));
        }
        if reason.chars().count() > MAX_REASON_LEN {
            return Err(format!(
                "the reason of recall {:?} is longer than {MAX_REASON_LEN} characters",
                range.trim()
            ));
        }
        Ok(Self {
            range: Range::parse(range.trim())?,
            reason: reason.to_string(),
        })
    }

    /// Whether `version` (an operator version) is recalled.
    pub fn covers(&self, version: &Version) -> bool {
        self.range.matches(version, true)
    }
}

impl fmt::Display for Recall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.range, self.reason)
    }
}

/// Parses `kudo.dev/channels`: names separated by commas (spaces allowed).
pub fn parse_channels(text: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        kudo_api::package::check_channel(name)?;
        if !out.iter().any(|c| c == name) {
            out.push(name.to_string());
        }
    }
    if out.len() > MAX_CHANNELS {
        return Err(format!(
            "{} channels, more than the {MAX_CHANNELS} a version may be in",
            out.len()
        ));
    }
    Ok(out)
}

/// The recalls of operator `name` among an index's annotations (none when
/// the field is missing or malformed: a malformed one refuses the index
/// when it is read).
pub fn recalls_in(
    annotations: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Vec<Recall> {
    annotations
        .get(&format!("{RECALLS_PREFIX}{name}"))
        .and_then(|text| parse_recalls(text).ok())
        .unwrap_or_default()
}

/// Parses a recalls annotation: one `RANGE: REASON` per line.
pub fn parse_recalls(text: &str) -> Result<Vec<Recall>, String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (range, reason) = line
            .split_once(':')
            .ok_or_else(|| format!("recall {line:?} is not `RANGE: REASON`"))?;
        if reason.trim().is_empty() {
            return Err(format!("recall {line:?} gives no reason"));
        }
        out.push(Recall::new(range, reason)?);
    }
    if out.len() > MAX_RECALLS {
        return Err(format!(
            "{} recalls, more than the {MAX_RECALLS} an operator may have",
            out.len()
        ));
    }
    Ok(out)
}

/// Writes recalls back as the annotation's text.
pub fn format_recalls(recalls: &[Recall]) -> String {
    recalls
        .iter()
        .map(|r| format!("{r}\n"))
        .collect::<Vec<_>>()
        .concat()
}

/// The cluster's version as ranges compare it: `v1.28.3-gke.100` is
/// 1.28.3 (providers tag releases as pre-releases).
pub fn kubernetes_release(text: &str) -> Result<Version, String> {
    let v = Version::parse(text.trim())?;
    Ok(Version::new(v.major, v.minor, v.patch))
}

/// `kubeVersion` for a package's minimum Kubernetes version (operator.yaml
/// `kubernetesVersion`): `1.27.0` becomes `>=1.27.0`; a range stays.
pub fn kube_version_of_minimum(minimum: &str) -> Result<String, String> {
    let minimum = minimum.trim();
    if Version::parse(minimum).is_ok() {
        return Ok(format!(">={minimum}"));
    }
    Range::parse(minimum).map(|_| minimum.to_string())
}

impl PackageVersion {
    /// The channels of this version: its annotation, or `stable` for a
    /// release that names none (indexes written before channels). A
    /// malformed annotation is refused when the index is read.
    pub fn channels(&self) -> Vec<String> {
        match self.annotations.get(CHANNELS_ANNOTATION) {
            Some(text) => parse_channels(text).unwrap_or_default(),
            None if self.is_prerelease() => Vec::new(),
            None => vec![DEFAULT_CHANNEL.to_string()],
        }
    }

    /// Whether this version is in `channel`.
    pub fn in_channel(&self, channel: &str) -> bool {
        self.channels().iter().any(|c| c == channel)
    }

    /// Sets the channels annotation (none removes it).
    pub fn set_channels(&mut self, channels: &[String]) {
        if channels.is_empty() {
            self.annotations.remove(CHANNELS_ANNOTATION);
        } else {
            self.annotations
                .insert(CHANNELS_ANNOTATION.to_string(), channels.join(","));
        }
    }

    /// The Kubernetes versions this version runs on; `None` when it says
    /// nothing (then any).
    pub fn kube_range(&self) -> Option<Range> {
        self.kube_version
            .as_deref()
            .filter(|k| !k.trim().is_empty())
            .and_then(|k| Range::parse(k).ok())
    }

    /// Why this version cannot run on Kubernetes `cluster`; `None` when it
    /// can. An unknown cluster version fails a version that has a range.
    pub fn kubernetes_mismatch(&self, cluster: Option<&Version>) -> Option<String> {
        let range = self.kube_range()?;
        match cluster {
            Some(v) if range.matches(v, true) => None,
            Some(v) => Some(format!("needs Kubernetes {range}, the cluster runs {v}")),
            None => Some(format!(
                "needs Kubernetes {range}, and the cluster's version is unknown"
            )),
        }
    }
}

/// Why `search` hides a version: recalled, or (when the cluster's version
/// is given) made for other Kubernetes versions; `None` when it is shown.
pub fn hidden_reason(
    entry: &PackageVersion,
    recalls: &[Recall],
    kubernetes: Option<&Version>,
) -> Option<String> {
    if let Some(recall) = entry
        .operator_semver()
        .and_then(|v| recalls.iter().find(|r| r.covers(&v)))
    {
        return Some(format!("recalled: {}", recall.reason));
    }
    kubernetes.and_then(|k| entry.kubernetes_mismatch(Some(k)))
}

/// Checks the kudo-rs fields of one version (called while reading).
pub(crate) fn check_version(entry: &PackageVersion) -> Result<(), String> {
    if let Some(text) = entry.annotations.get(CHANNELS_ANNOTATION) {
        parse_channels(text).map_err(|e| format!("{CHANNELS_ANNOTATION}: {e}"))?;
    }
    if let Some(k) = entry
        .kube_version
        .as_deref()
        .filter(|k| !k.trim().is_empty())
    {
        Range::parse(k).map_err(|e| format!("kubeVersion: {e}"))?;
    }
    Ok(())
}

/// Checks the recall annotations of an index (called while reading).
pub(crate) fn check_index_annotations(
    annotations: &BTreeMap<String, String>,
) -> Result<(), String> {
    for (key, text) in annotations {
        if let Some(name) = key.strip_prefix(RECALLS_PREFIX) {
            crate::index::check_name(name).map_err(|e| format!("annotation {key}: {e}"))?;
            parse_recalls(text).map_err(|e| format!("annotation {key}: {e}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "channels_tests.rs"]
mod tests;
