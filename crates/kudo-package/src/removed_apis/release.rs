//! "Served?" for a Kubernetes minor release, without a cluster: a removed
//! version is served before its removal (alpha versions never, as they were
//! off by default), a successor from its introduction, anything else (core
//! kinds, versions still served, custom resources) always.

use std::fmt;
use std::str::FromStr;

use super::ServedApis;
use super::table::{introduced_minor, minor, rule};

/// A Kubernetes release (`1.32`), answering which built-in versions it
/// serves by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubernetesRelease {
    /// The minor number (32 for 1.32).
    pub minor: u32,
}

impl KubernetesRelease {
    /// The release whose served versions kudo-sandbox reproduces.
    pub const CURRENT: Self = Self { minor: 32 };

    /// Release `1.<minor>`.
    pub const fn new(minor: u32) -> Self {
        Self { minor }
    }
}

impl FromStr for KubernetesRelease {
    type Err = String;

    /// Reads `1.32`, `v1.32`, `1.32.3`, `v1.28.2+k3s1` or `1.27+`: only the
    /// major (must be 1) and minor count.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid Kubernetes version {text:?}: expected MAJOR.MINOR such as 1.32 (a patch \
                 part is ignored)"
            )
        };
        let digits = |part: &str| -> Option<u32> {
            let d: String = part.chars().take_while(char::is_ascii_digit).collect();
            d.parse().ok()
        };
        let trimmed = text.trim().trim_start_matches('v');
        let mut parts = trimmed.split('.');
        let major = parts.next().and_then(digits).ok_or_else(bad)?;
        let minor = parts.next().and_then(digits).ok_or_else(bad)?;
        if major != 1 {
            return Err(format!(
                "unsupported Kubernetes version {text:?}: only 1.x releases exist"
            ));
        }
        Ok(Self { minor })
    }
}

impl fmt::Display for KubernetesRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kubernetes 1.{}", self.minor)
    }
}

impl ServedApis for KubernetesRelease {
    fn serves(&self, api_version: &str, kind: &str) -> bool {
        if let Some(r) = rule(api_version, kind) {
            let served_before = introduced_minor(api_version, kind).unwrap_or(0);
            return !r.alpha && self.minor >= served_before && self.minor < minor(r.removed_in);
        }
        introduced_minor(api_version, kind).is_none_or(|since| self.minor >= since)
    }
}
