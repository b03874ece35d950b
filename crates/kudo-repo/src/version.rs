//! Versions as KUDO and Helm read them (Masterminds' lenient parse): an
//! optional `v`, one to three numbers (missing ones are 0), a pre-release
//! after `-` and build metadata after `+`. Ordered by semantic-versioning
//! precedence; build metadata does not count.

use std::cmp::Ordering;
use std::fmt;

/// One pre-release identifier: numbers order below words.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Identifier {
    /// Digits only.
    Numeric(u64),
    /// Anything else of `[0-9A-Za-z-]`.
    Alpha(String),
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Numeric(n) => write!(f, "{n}"),
            Self::Alpha(s) => f.write_str(s),
        }
    }
}

/// A parsed version. Equality and order ignore build metadata, as
/// precedence does.
#[derive(Clone, Debug)]
pub struct Version {
    /// Major number.
    pub major: u64,
    /// Minor number (0 when not written).
    pub minor: u64,
    /// Patch number (0 when not written).
    pub patch: u64,
    /// Pre-release identifiers; empty for a release.
    pub pre: Vec<Identifier>,
    /// Build metadata after `+`, as written.
    pub build: String,
}

/// Versions longer than this are not versions (bounds the work of a
/// hostile index).
const MAX_VERSION_LEN: usize = 256;

impl Version {
    /// A release `major.minor.patch`.
    pub fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
            pre: Vec::new(),
            build: String::new(),
        }
    }

    /// Parses leniently: `v1.2`, `1`, `1.2.3-rc.1+build.5`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (numbers, pre, build) = split_version(text)?;
        let mut parts = numbers.split('.');
        let mut next = |what: &str, required: bool| -> Result<u64, String> {
            match parts.next() {
                None if !required => Ok(0),
                None => Err(format!("{text:?} has no {what} number")),
                Some(p) => parse_number(p)
                    .ok_or_else(|| format!("{text:?}: the {what} part {p:?} is not a number")),
            }
        };
        let major = next("major", true)?;
        let minor = next("minor", false)?;
        let patch = next("patch", false)?;
        if parts.next().is_some() {
            return Err(format!(
                "{text:?} has more than three numbers (major.minor.patch)"
            ));
        }
        Ok(Self {
            major,
            minor,
            patch,
            pre: parse_pre(text, pre)?,
            build: build.to_string(),
        })
    }

    /// Whether this is a pre-release (`1.0.0-rc.1`).
    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }

    fn cmp_pre(&self, other: &Self) -> Ordering {
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            // A release is newer than its pre-releases.
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self.pre.cmp(&other.pre),
        }
    }
}

/// Splits `v1.2.3-pre+build` into numbers, pre-release and build, checking
/// the characters.
pub(crate) fn split_version(text: &str) -> Result<(&str, &str, &str), String> {
    if text.len() > MAX_VERSION_LEN {
        return Err(format!(
            "a version of {} characters is too long (at most {MAX_VERSION_LEN})",
            text.len()
        ));
    }
    let body = text.strip_prefix('v').unwrap_or(text);
    if body.is_empty() {
        return Err("an empty version".into());
    }
    let (rest, build) = body.split_once('+').unwrap_or((body, ""));
    let (numbers, pre) = rest.split_once('-').unwrap_or((rest, ""));
    let ident_ok = |s: &str| {
        s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    if body.contains('+') && !ident_ok(build) {
        return Err(format!(
            "{text:?}: the build metadata {build:?} is malformed"
        ));
    }
    if rest.contains('-') && !ident_ok(pre) {
        return Err(format!("{text:?}: the pre-release {pre:?} is malformed"));
    }
    Ok((numbers, pre, build))
}

fn parse_number(part: &str) -> Option<u64> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

fn parse_pre(text: &str, pre: &str) -> Result<Vec<Identifier>, String> {
    if pre.is_empty() {
        return Ok(Vec::new());
    }
    pre.split('.')
        .map(|p| {
            if p.bytes().all(|b| b.is_ascii_digit()) {
                if p.len() > 1 && p.starts_with('0') {
                    return Err(format!(
                        "{text:?}: the pre-release part {p:?} has a leading zero"
                    ));
                }
                p.parse()
                    .map(Identifier::Numeric)
                    .map_err(|_| format!("{text:?}: the pre-release part {p:?} is too large"))
            } else {
                Ok(Identifier::Alpha(p.to_string()))
            }
        })
        .collect()
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| self.cmp_pre(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, id) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            write!(f, "{id}")?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn missing_numbers_are_zero_and_a_leading_v_is_dropped() {
        assert_eq!(v("1"), Version::new(1, 0, 0));
        assert_eq!(v("v1.2"), Version::new(1, 2, 0));
        assert_eq!(v("1.2.3").to_string(), "1.2.3");
    }

    #[test]
    fn precedence_follows_semantic_versioning() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.10.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn build_metadata_does_not_count_in_order_or_equality() {
        assert_eq!(v("1.0.0+a"), v("1.0.0+b"));
        assert_eq!(v("1.0.0+build.7").to_string(), "1.0.0+build.7");
    }

    #[test]
    fn malformed_versions_are_refused_saying_why() {
        for (text, why) in [
            ("", "empty"),
            ("a.b.c", "not a number"),
            ("1.2.3.4", "more than three"),
            ("1.2.3-", "malformed"),
            ("1.2.3-01", "leading zero"),
            ("1.2.3+", "malformed"),
            ("1..3", "not a number"),
        ] {
            let err = Version::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        let long = "1".repeat(300);
        assert!(Version::parse(&long).unwrap_err().contains("too long"));
    }
}
