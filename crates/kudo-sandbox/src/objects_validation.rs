//! What a real API server checks of every object's names and labels.

use serde_json::Value;

use crate::registry::ResourceInfo;

fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// What a real API server says of the first bad label: a value of at most
/// 63 characters, alphanumeric at both ends with `-`, `_`, `.` between; a
/// key's name part likewise (and not empty), its prefix a DNS subdomain.
pub(super) fn labels_problem(meta: &serde_json::Map<String, Value>) -> Option<(String, String)> {
    let labels = meta.get("labels")?.as_object()?;
    let qualified = |text: &str| {
        text.len() <= 63
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && text
                .bytes()
                .next()
                .is_none_or(|b| b.is_ascii_alphanumeric())
            && text
                .bytes()
                .last()
                .is_none_or(|b| b.is_ascii_alphanumeric())
    };
    for (key, value) in labels {
        let value = value.as_str().unwrap_or_default();
        let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
        if name.is_empty() || !qualified(name) || (!prefix.is_empty() && !is_dns_subdomain(prefix))
        {
            return Some((
                "metadata.labels".into(),
                format!(
                    "Invalid value: {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)"
                ),
            ));
        }
        if !qualified(value) {
            return Some((
                "metadata.labels".into(),
                format!(
                    "Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character; must be no more than 63 characters"
                ),
            ));
        }
    }
    None
}

pub(super) fn name_problem(res: &ResourceInfo, name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("Required value: name or generateName is required".into());
    }
    if name == "." || name == ".." || name.contains('/') || name.contains('%') {
        return Some(format!(
            "Invalid value: {name:?}: may not be '.' or '..' and may not contain '/' or '%'"
        ));
    }
    if res.group == "rbac.authorization.k8s.io" || is_dns_subdomain(name) {
        return None;
    }
    Some(format!(
        "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    ))
}
