//! Version ranges in the dialect Helm and KUDO users type (Helm's
//! Masterminds constraints):
//!
//! - `1.2.3` or `=1.2.3`: exactly that version; `!=1.2.3`: any other.
//! - `1.2`, `1.2.x`, `1.2.*`: any 1.2 patch (`>=1.2.0 <1.3.0`); `1`, `1.x`:
//!   any 1.y.z; `*`, `x` or an empty range: anything.
//! - `>`, `>=` (`=>`), `<`, `<=` (`=<`) compare; a wildcard widens them
//!   (`<=1.2` admits 1.2.9, `>1.2` starts at 1.3.0).
//! - `~1.2.3` (`~>`): `>=1.2.3 <1.3.0`; `~1`: `>=1.0.0 <2.0.0`.
//! - `^1.2.3`: `>=1.2.3 <2.0.0`; `^0.2.3`: `>=0.2.3 <0.3.0`; `^0.0.3`:
//!   exactly 0.0.3.
//! - `1.2 - 1.4.5`: `>=1.2 <=1.4.5`.
//! - Space or comma separated constraints must all hold; `||` separates
//!   alternatives.
//! - Pre-releases match only when asked for (`include_prereleases`, the
//!   CLI's `--devel`) or when an alternative itself names a pre-release
//!   (`>=1.0.0-rc.1`).

use std::fmt;

use crate::version::{Version, split_version};

/// Ranges longer than this are refused (they come from command lines and
/// package files).
const MAX_RANGE_LEN: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    Tilde,
    Caret,
}

/// Which parts of a constraint's version were wildcards or left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wild {
    /// `1.2.3`: nothing.
    None,
    /// `1.2` / `1.2.x`.
    Patch,
    /// `1` / `1.x`.
    Minor,
    /// `*` / `x`.
    Major,
}

#[derive(Clone, Debug)]
struct Constraint {
    op: Op,
    version: Version,
    wild: Wild,
}

/// A parsed range: alternatives (`||`) of constraints that must all hold.
#[derive(Clone, Debug)]
pub struct Range {
    text: String,
    alternatives: Vec<Vec<Constraint>>,
}

impl Range {
    /// Parses a range; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_RANGE_LEN {
            return Err(format!(
                "a version range of {} characters is too long (at most {MAX_RANGE_LEN})",
                text.len()
            ));
        }
        let alternatives = text
            .split("||")
            .map(parse_alternative)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{text:?} is not a version or range: {e}"))?;
        Ok(Self {
            text: text.trim().to_string(),
            alternatives,
        })
    }

    /// Whether the range names exactly one version (`1.2.3`, `=1.2.3`).
    pub fn exact(&self) -> Option<&Version> {
        match self.alternatives.as_slice() {
            [only] => match only.as_slice() {
                [c] if c.op == Op::Eq && c.wild == Wild::None => Some(&c.version),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `version` is in the range; pre-releases only when
    /// `include_prereleases` or when the alternative names one.
    pub fn matches(&self, version: &Version, include_prereleases: bool) -> bool {
        self.alternatives.iter().any(|constraints| {
            let names_pre = constraints.iter().any(|c| c.version.is_prerelease());
            if version.is_prerelease() && !include_prereleases && !names_pre {
                return false;
            }
            constraints.iter().all(|c| c.admits(version))
        })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_alternative(text: &str) -> Result<Vec<Constraint>, String> {
    let tokens = tokens(text)?;
    let mut constraints = Vec::new();
    let mut i = 0;
    while let Some(token) = tokens.get(i) {
        // `A - B` (spaces around the hyphen) is an inclusive span.
        if tokens.get(i + 1).map(String::as_str) == Some("-") {
            let upper = tokens
                .get(i + 2)
                .ok_or_else(|| format!("{text:?} ends after a '-' span without its upper end"))?;
            let (op_a, a) = split_op(token);
            let (op_b, b) = split_op(upper);
            if !op_a.is_empty() || !op_b.is_empty() {
                return Err(format!(
                    "a span {token} - {upper} takes plain versions, without operators"
                ));
            }
            constraints.push(constraint(Op::Ge, a)?);
            constraints.push(constraint(Op::Le, b)?);
            i += 3;
            continue;
        }
        if token == "-" {
            return Err(format!("{text:?} has a '-' without a version before it"));
        }
        let (op, version) = split_op(token);
        let op = match op {
            "" | "=" => Op::Eq,
            "!=" => Op::Ne,
            ">" => Op::Gt,
            "<" => Op::Lt,
            ">=" | "=>" => Op::Ge,
            "<=" | "=<" => Op::Le,
            "~" | "~>" => Op::Tilde,
            "^" => Op::Caret,
            other => return Err(format!("unknown operator {other:?}")),
        };
        if version.is_empty() {
            return Err(format!("the operator {token:?} has no version after it"));
        }
        constraints.push(constraint(op, version)?);
        i += 1;
    }
    if constraints.is_empty() {
        // An empty range (or alternative) admits everything, as `*`.
        constraints.push(constraint(Op::Eq, "*")?);
    }
    Ok(constraints)
}

/// Splits at spaces and commas, keeping an operator with the version after
/// it (`>= 1.2` is one token `>=1.2`).
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending_op = String::new();
    for word in text.split([' ', '\t', ',']).filter(|w| !w.is_empty()) {
        let op_len = word
            .bytes()
            .take_while(|b| matches!(b, b'=' | b'!' | b'<' | b'>' | b'~' | b'^'))
            .count();
        if op_len == word.len() && word != "-" {
            if !pending_op.is_empty() {
                return Err(format!("two operators in a row: {pending_op} {word}"));
            }
            pending_op = word.to_string();
            continue;
        }
        out.push(format!("{}{word}", std::mem::take(&mut pending_op)));
    }
    if !pending_op.is_empty() {
        return Err(format!(
            "the operator {pending_op:?} has no version after it"
        ));
    }
    Ok(out)
}

fn split_op(token: &str) -> (&str, &str) {
    let at = token
        .find(|c: char| !matches!(c, '=' | '!' | '<' | '>' | '~' | '^'))
        .unwrap_or(token.len());
    token.split_at(at)
}

fn is_wild(part: &str) -> bool {
    matches!(part, "x" | "X" | "*")
}

fn constraint(op: Op, text: &str) -> Result<Constraint, String> {
    let (numbers, pre, build) = split_version(text)?;
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() > 3 {
        return Err(format!(
            "{text:?} has more than three numbers (major.minor.patch)"
        ));
    }
    let part = |i: usize| parts.get(i).copied().filter(|p| !p.is_empty());
    let wild = if part(0).is_none_or(is_wild) {
        Wild::Major
    } else if part(1).is_none_or(is_wild) {
        Wild::Minor
    } else if part(2).is_none_or(is_wild) {
        Wild::Patch
    } else {
        Wild::None
    };
    let kept = match wild {
        Wild::Major => 0,
        Wild::Minor => 1,
        Wild::Patch => 2,
        Wild::None => 3,
    };
    // A wildcard may only be followed by wildcards (`1.x.3` means nothing).
    if parts
        .iter()
        .skip(kept)
        .any(|p| !p.is_empty() && !is_wild(p))
    {
        return Err(format!("{text:?} has a number after a wildcard"));
    }
    let mut plain: Vec<&str> = parts.iter().take(kept).copied().collect();
    plain.resize(3, "0");
    let mut normal = plain.join(".");
    if !pre.is_empty() {
        normal.push('-');
        normal.push_str(pre);
    }
    if !build.is_empty() {
        normal.push('+');
        normal.push_str(build);
    }
    let version = Version::parse(&normal).map_err(|e| format!("{text:?}: {e}"))?;
    Ok(Constraint { op, version, wild })
}

impl Constraint {
    fn admits(&self, v: &Version) -> bool {
        let c = &self.version;
        match self.op {
            Op::Eq => match self.wild {
                Wild::None => v == c,
                _ => self.tilde(v),
            },
            Op::Ne => match self.wild {
                Wild::None => v != c,
                Wild::Major => false,
                Wild::Minor => v.major != c.major,
                Wild::Patch => (v.major, v.minor) != (c.major, c.minor),
            },
            Op::Gt => match self.wild {
                Wild::None => v > c,
                Wild::Major => v.major > 0 || v > c,
                Wild::Minor => v.major > c.major,
                Wild::Patch => (v.major, v.minor) > (c.major, c.minor),
            },
            Op::Lt => v < c,
            Op::Ge => v >= c,
            Op::Le => match self.wild {
                Wild::None => v <= c,
                Wild::Major => true,
                Wild::Minor => v.major <= c.major,
                Wild::Patch => (v.major, v.minor) <= (c.major, c.minor),
            },
            Op::Tilde => self.tilde(v),
            Op::Caret => self.caret(v),
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.version;
        match self.wild {
            Wild::Major => true,
            // `~0.0.0` admits everything (Masterminds' special case).
            Wild::None if (c.major, c.minor, c.patch) == (0, 0, 0) && c.pre.is_empty() => true,
            Wild::Minor => v >= c && v.major == c.major,
            Wild::Patch | Wild::None => v >= c && v.major == c.major && v.minor == c.minor,
        }
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.version;
        if self.wild == Wild::Major {
            return true;
        }
        if v < c {
            return false;
        }
        if c.major > 0 || self.wild == Wild::Minor {
            return v.major == c.major;
        }
        if c.minor > 0 || self.wild == Wild::Patch {
            return v.major == 0 && v.minor == c.minor;
        }
        v.major == 0 && v.minor == 0 && v.patch == c.patch
    }
}

#[cfg(test)]
#[path = "range_tests.rs"]
mod tests;
