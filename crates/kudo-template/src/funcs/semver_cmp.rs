//! Sprig `semverCompare` (Masterminds constraint syntax) on top of the
//! `semver` crate: `||` alternatives, `,`/space-separated comparators,
//! `!=`, `=<`, `~>`, hyphen ranges, wildcards and a leading `v`.

use semver::{Comparator, Version};

use super::{Entry, FuncError, FuncResult, arg_str};
use crate::value::Value;

pub const TABLE: &[Entry] = &[("semverCompare", 2, Some(2), semver_compare)];

/// Parses a version leniently as Masterminds does (`v1.2` = `1.2.0`).
fn version(text: &str) -> Option<Version> {
    let t = text.trim().trim_start_matches(['v', 'V']);
    let split = t.find(['-', '+']).unwrap_or(t.len());
    let (core, rest) = t.split_at(split);
    let mut parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    while parts.len() < 3 {
        parts.push("0");
    }
    Version::parse(&format!("{}{rest}", parts.join("."))).ok()
}

fn comparator_matches(op_and_version: &str, v: &Version) -> Option<bool> {
    let c = op_and_version.trim();
    if let Some(rest) = c.strip_prefix("!=") {
        let other = version(rest)?;
        return Some(*v != other);
    }
    let op_len = c.len() - c.trim_start_matches(['<', '>', '=', '~', '^']).len();
    let (op, rest) = c.split_at(op_len);
    let op = match op {
        "=<" => "<=",
        "~>" => "~",
        other => other,
    };
    let normalized = format!("{op}{}", rest.trim().trim_start_matches(['v', 'V']));
    let cmp = Comparator::parse(&normalized).ok()?;
    Some(cmp.matches(v))
}

/// Splits `>= 1.2, < 2` into comparators, joining operators with their version.
fn comparators(group: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending_op = String::new();
    for token in group.split([',', ' ']).filter(|t| !t.is_empty()) {
        if token.chars().all(|c| "<>=!~^".contains(c)) {
            pending_op.push_str(token);
        } else {
            out.push(format!("{pending_op}{token}"));
            pending_op.clear();
        }
    }
    out
}

fn group_matches(group: &str, v: &Version) -> Option<bool> {
    // Hyphen range `a - b`.
    if let Some((lo, hi)) = group.split_once(" - ") {
        let lo = version(lo)?;
        let hi = version(hi)?;
        return Some(*v >= lo && *v <= hi);
    }
    let comps = comparators(group);
    if comps.is_empty() {
        return None;
    }
    let mut all = true;
    for c in comps {
        all &= comparator_matches(&c, v)?;
    }
    Some(all)
}

fn semver_compare<'a>(args: &[Value<'a>]) -> FuncResult<'a> {
    let constraint = arg_str(args, 0)?;
    let v = version(arg_str(args, 1)?)
        .ok_or_else(|| FuncError::Call("Invalid Semantic Version".into()))?;
    let mut any = false;
    for group in constraint.split("||") {
        any |= group_matches(group.trim(), &v)
            .ok_or_else(|| FuncError::Call(format!("improper constraint: {constraint}")))?;
    }
    Ok(Value::Bool(any))
}
