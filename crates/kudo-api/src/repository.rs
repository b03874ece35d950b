//! The `OperatorRepository` custom resource: a package repository the
//! manager follows. Cluster-scoped, so only a cluster administrator writes
//! one; the manager fetches its index on an interval with the same limits
//! and digest checks as the CLI and reports what it found in status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Condition, Time};

/// Sync interval when the spec gives none.
pub const DEFAULT_INTERVAL: &str = "10m";
/// Shortest sync interval, in seconds (a repository is a web server
/// someone else runs).
pub const MIN_INTERVAL_SECONDS: u64 = 10;
/// Longest sync interval, in seconds (a day).
pub const MAX_INTERVAL_SECONDS: u64 = 24 * 3600;
/// The condition type in status.
pub const READY_CONDITION: &str = "Ready";

/// Spec of an [`OperatorRepository`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "OperatorRepository",
    shortname = "orepo",
    category = "kudo",
    status = "OperatorRepositoryStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Packages","type":"integer","jsonPath":".status.packages"}"#,
    printcolumn = r#"{"name":"Last Sync","type":"date","jsonPath":".status.lastSyncTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorRepositorySpec {
    /// The repository: an http or https URL of the folder holding
    /// `index.yaml` (or of `index.yaml` itself).
    #[serde(default)]
    pub url: String,
    /// How often the index is fetched: a number with a unit `s`, `m`, `h`
    /// (`30s`, `10m`, `1h30m`); 10 s to 24 h, default 10m.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// A Secret in the manager's namespace with credentials (`username`
    /// and `password`, or `token`) and/or a CA bundle (`ca.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// The namespaces whose Instances may track this repository (and so
    /// get its packages, downloaded with its credentials); empty: every
    /// namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_namespaces: Vec<String>,
}

/// The most namespaces `spec.allowedNamespaces` lists.
pub const MAX_ALLOWED_NAMESPACES: usize = 1000;

/// What the manager last found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorRepositoryStatus {
    /// The spec generation this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When a sync last changed what status says (index, counts, Ready);
    /// a sync that finds the same index writes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
    /// sha256 of the index last read (`sha256:` and hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_digest: Option<String>,
    /// Operators in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<i64>,
    /// Versions in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<i64>,
    /// `Ready`: True when the last sync read a valid index; False with a
    /// reason (`FetchFailed`, `InvalidIndex`, `InvalidSpec`,
    /// `SecretUnreadable`) and the error; the last good index stays in use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Parses an interval (`30s`, `10m`, `1h30m`) into seconds.
pub fn parse_interval(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("an empty interval".into());
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => {
                return Err(format!(
                    "interval {text:?}: unknown unit {c:?} (use s, m or h, e.g. 10m)"
                ));
            }
        };
        let n: u64 = number
            .parse()
            .map_err(|_| format!("interval {text:?}: a unit without a number before it"))?;
        number.clear();
        total = total.saturating_add(n.saturating_mul(unit));
    }
    if !number.is_empty() {
        return Err(format!(
            "interval {text:?}: {number} has no unit (use s, m or h, e.g. 10m)"
        ));
    }
    Ok(total)
}

impl OperatorRepositorySpec {
    /// The sync interval in seconds, checked against the bounds.
    pub fn interval_seconds(&self) -> Result<u64, String> {
        let text = self.interval.as_deref().unwrap_or(DEFAULT_INTERVAL);
        let seconds = parse_interval(text)?;
        if !(MIN_INTERVAL_SECONDS..=MAX_INTERVAL_SECONDS).contains(&seconds) {
            return Err(format!(
                "interval {text:?} is outside 10s to 24h; a repository is polled at most every \
                 10 s and at least once a day"
            ));
        }
        Ok(seconds)
    }

    /// What is wrong with the spec: the URL (http or https, no
    /// credentials in it; a file URL would let the manager read its own
    /// files), the interval, the Secret's name.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let url = self.url.trim();
        match url.split_once("://") {
            _ if url.is_empty() => out.push("spec.url is empty; give the repository's http or https URL".into()),
            Some(("http" | "https", rest)) => {
                let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                if authority.is_empty() {
                    out.push(format!("spec.url {url:?} has no host"));
                }
                if authority.contains('@') {
                    out.push(format!(
                        "spec.url {url:?} holds credentials; put them in a Secret named by spec.secretName"
                    ));
                }
                if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    out.push(format!("spec.url {url:?} contains spaces or control characters"));
                }
            }
            _ => out.push(format!(
                "spec.url {url:?} is not an http or https URL (the manager reads repositories over the network only)"
            )),
        }
        if url.len() > 2048 {
            out.push("spec.url is longer than 2048 characters".into());
        }
        if let Err(e) = self.interval_seconds() {
            out.push(format!("spec.interval: {e}"));
        }
        if let Some(name) = &self.secret_name
            && (name.is_empty()
                || name.len() > 253
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'))
        {
            out.push(format!("spec.secretName {name:?} is not a Secret name"));
        }
        if self.allowed_namespaces.len() > MAX_ALLOWED_NAMESPACES {
            out.push(format!(
                "spec.allowedNamespaces lists {} namespaces; at most {MAX_ALLOWED_NAMESPACES}",
                self.allowed_namespaces.len()
            ));
        } else if let Some(bad) = self
            .allowed_namespaces
            .iter()
            .find(|ns| !is_namespace_name(ns))
        {
            out.push(format!(
                "spec.allowedNamespaces: {bad:?} is not a namespace name (lowercase letters, \
                 digits and '-', at most 63)"
            ));
        }
        out
    }

    /// Whether Instances of `namespace` may track this repository.
    pub fn serves(&self, namespace: &str) -> bool {
        self.allowed_namespaces.is_empty() || self.allowed_namespaces.iter().any(|n| n == namespace)
    }
}

/// A namespace name: an RFC 1123 label.
fn is_namespace_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str, interval: Option<&str>) -> OperatorRepositorySpec {
        OperatorRepositorySpec {
            url: url.into(),
            interval: interval.map(Into::into),
            secret_name: None,
            allowed_namespaces: Vec::new(),
        }
    }

    #[test]
    fn a_repository_serves_every_namespace_or_those_it_lists() {
        let mut repo = spec("https://r", None);
        assert!(repo.serves("team-a"));
        repo.allowed_namespaces = vec!["team-a".into()];
        assert!(repo.serves("team-a"));
        assert!(!repo.serves("team-b"));
        assert!(repo.problems().is_empty());
        repo.allowed_namespaces.push("Team_B".into());
        let problems = repo.problems().join("; ");
        assert!(
            problems.contains("\"Team_B\" is not a namespace name"),
            "{problems}"
        );
        repo.allowed_namespaces = vec!["a".into(); MAX_ALLOWED_NAMESPACES + 1];
        assert!(repo.problems().join("; ").contains("at most 1000"));
    }

    #[test]
    fn intervals_take_units_and_stay_within_bounds() {
        assert_eq!(parse_interval("1h30m").unwrap(), 5400);
        assert_eq!(spec("https://r", None).interval_seconds().unwrap(), 600);
        assert_eq!(
            spec("https://r", Some("10s")).interval_seconds().unwrap(),
            10
        );
        for (bad, needle) in [
            ("5s", "outside 10s to 24h"),
            ("25h", "outside 10s to 24h"),
            ("10", "has no unit"),
            ("10d", "unknown unit 'd'"),
            ("m", "without a number"),
        ] {
            let err = spec("https://r", Some(bad)).interval_seconds().unwrap_err();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn a_spec_needs_a_network_url_without_credentials() {
        assert!(
            spec("https://charts.example/kudo", None)
                .problems()
                .is_empty()
        );
        assert!(spec("http://127.0.0.1:8080/", None).problems().is_empty());
        for (url, needle) in [
            ("", "spec.url is empty"),
            ("file:///etc", "not an http or https URL"),
            ("oci://r/x", "not an http or https URL"),
            ("https://u:p@r/", "holds credentials"),
            ("https:///x", "has no host"),
            ("https://r/a b", "spaces"),
        ] {
            let problems = spec(url, None).problems().join("; ");
            assert!(problems.contains(needle), "{url}: {problems}");
        }
        let mut bad_secret = spec("https://r", Some("5s"));
        bad_secret.secret_name = Some("Creds".into());
        let problems = bad_secret.problems().join("; ");
        assert!(
            problems.contains("spec.interval") && problems.contains("not a Secret name"),
            "{problems}"
        );
    }
}
