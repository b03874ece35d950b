//! kube-apiserver's API approval rule for CustomResourceDefinitions (the
//! Kubernetes project's API review of its own groups): a CRD in a group the Kubernetes project
//! owns (`k8s.io`, `kubernetes.io` and their subdomains) needs the
//! annotation `api-approved.kubernetes.io`, a URL of its API review or a
//! reason beginning with `unapproved`. Checked on create, and on an update
//! only when the annotation's state changes, so a CRD stored before the
//! rule can still be updated.

use serde_json::Value;

use crate::status::ApiError;

/// The annotation the rule reads.
pub const ANNOTATION: &str = "api-approved.kubernetes.io";

const SEE: &str = "see https://github.com/kubernetes/enhancements/pull/1111";

/// What the annotation says, as kube-apiserver tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Approval {
    Missing,
    /// Begins with `unapproved`.
    Bypassed,
    /// A URL with a scheme and a host.
    Approved,
    Invalid,
}

/// Whether the Kubernetes project owns `group`.
pub fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"].iter().any(|domain| {
        group == *domain
            || group
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

fn annotation(crd: &Value) -> &str {
    crd.pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn approval(value: &str) -> Approval {
    if value.is_empty() {
        Approval::Missing
    } else if value.starts_with("unapproved") {
        Approval::Bypassed
    } else if is_url(value) {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

/// Refuses `crd` (created, or replacing `old`) as kube-apiserver does: 422
/// with the cause on `metadata.annotations[api-approved.kubernetes.io]`.
pub fn check(crd: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !is_protected_group(group) {
        return Ok(());
    }
    let value = annotation(crd);
    let state = approval(value);
    if old.is_some_and(|old| approval(annotation(old)) == state) {
        return Ok(());
    }
    let problem = match state {
        Approval::Approved | Approval::Bypassed => return Ok(()),
        Approval::Missing => format!(
            "Required value: protected groups must have approval annotation \"{ANNOTATION}\", {SEE}"
        ),
        Approval::Invalid => format!(
            "Invalid value: {value:?}: protected groups must have approval annotation \
             \"{ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", {SEE}"
        ),
    };
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(ApiError::invalid(
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        name,
        &format!("metadata.annotations[{ANNOTATION}]"),
        &problem,
    ))
}

/// Whether Go's `url.ParseRequestURI` accepts `value` with a scheme and a
/// host, which is what the API server asks of an approval URL (percent
/// escapes in the host are not checked).
fn is_url(value: &str) -> bool {
    if value.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let Some(rest) = rest.strip_prefix("//").filter(|_| scheme_ok) else {
        return false;
    };
    let rest = rest.split('?').next().unwrap_or_default();
    let authority = rest.split('/').next().unwrap_or_default();
    let (userinfo, host) = authority.rsplit_once('@').unwrap_or(("", authority));
    let userinfo_ok = userinfo
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c));
    userinfo_ok && is_host(host)
}

/// A non-empty host, optionally with a numeric port, of the characters Go
/// allows there (non-ASCII too).
fn is_host(host: &str) -> bool {
    let (name, port) = if let Some(bracketed) = host.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((_, port)) => (host, port),
            None => return false,
        }
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host, ""),
        }
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()));
    let chars_ok = name.chars().all(|c| {
        !c.is_ascii() || c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(c)
    });
    !host.is_empty() && port_ok && chars_ok
}

#[cfg(test)]
#[path = "api_approval_tests.rs"]
mod tests;
