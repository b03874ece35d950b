//! Built-in API versions Kubernetes stopped serving, and the translation of
//! an object written for one of them into a version the API server serves.
//!
//! KUDO packages were written for Kubernetes 1.15–1.20 and name versions
//! such as `policy/v1beta1` PodDisruptionBudget or `apiextensions.k8s.io/v1beta1`
//! CustomResourceDefinition, which today's clusters no longer serve. At apply
//! time the caller asks [`translate`] (or [`object_to_apply`]) with a
//! predicate saying which versions the API server serves ([`ServedApis`]):
//!
//! - the version the template asks for is served → [`Translation::Untouched`];
//! - it is not, and a successor is served → [`Translation::Translated`], the
//!   object rewritten for the successor (field conversions where the schema
//!   changed, old defaults kept where they differ and matter) and a
//!   [`Change`] saying what happened;
//! - the kind is gone without a successor (PodSecurityPolicy, PodPreset), or
//!   the object cannot be expressed in the successor →
//!   [`Translation::Removed`], a message naming the release and what to use
//!   instead.
//!
//! Pure: no IO. The table of removals is in `table.rs`; each family's field
//! conversion has its own file. Without a cluster, [`KubernetesRelease`]
//! answers "served?" for a Kubernetes minor release from the same table.

mod admission;
mod autoscaling;
mod cluster;
mod crd;
mod networking;
mod plan;
mod release;
mod table;
mod workloads;

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod admission_tests;
#[cfg(test)]
mod autoscaling_tests;
#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod crd_tests;
#[cfg(test)]
mod networking_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod workloads_tests;

use std::fmt;

use serde_json::Value;

pub(crate) use crd::{API_APPROVED, UNAPPROVED, is_protected_group};
pub use plan::{PlanTranslation, translate_plan};
pub use release::KubernetesRelease;
pub use table::{RemovedVersion, introduced_in, removed_version, removed_versions};

/// Answers whether the API server serves a kind in an API version.
///
/// The manager answers from discovery; [`KubernetesRelease`] answers for a
/// Kubernetes release without a cluster; any `Fn(&str, &str) -> bool`
/// taking `(api_version, kind)` works too.
pub trait ServedApis {
    /// Whether `kind` is served in `api_version` (`policy/v1beta1`, `v1`).
    fn serves(&self, api_version: &str, kind: &str) -> bool;
}

impl<F> ServedApis for F
where
    F: Fn(&str, &str) -> bool,
{
    fn serves(&self, api_version: &str, kind: &str) -> bool {
        self(api_version, kind)
    }
}

/// What to do with one rendered object.
#[derive(Clone, Debug, PartialEq)]
pub enum Translation {
    /// Apply the object as written: its version is served, or it is not a
    /// built-in version this crate knows to be removed (custom resources
    /// included), or no successor is served either (the apply then fails
    /// with the API server's message).
    Untouched,
    /// Apply this object instead.
    Translated(Translated),
    /// The object cannot be applied on this API server.
    Removed(Removed),
}

/// An object rewritten for a served successor version.
#[derive(Clone, Debug, PartialEq)]
pub struct Translated {
    /// The object to apply.
    pub object: Value,
    /// What was changed and why.
    pub change: Change,
}

/// The description of a translation, for step messages and Events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Kind of the object.
    pub kind: String,
    /// The `apiVersion` the template asked for.
    pub from: String,
    /// The `apiVersion` applied.
    pub to: String,
    /// The Kubernetes release that stopped serving `from` (`1.25`).
    pub removed_in: &'static str,
    /// Field conversions and defaults worth knowing about, one sentence each.
    pub notes: Vec<String>,
}

impl Change {
    /// `applied policy/v1beta1 PodDisruptionBudget as policy/v1:
    /// policy/v1beta1 was removed in Kubernetes 1.25`, followed by the notes.
    pub fn message(&self) -> String {
        self.sentence("applied", "as")
    }

    /// The same for a plan not run yet: `policy/v1beta1 PodDisruptionBudget
    /// is applied as policy/v1: ...`.
    pub fn future_message(&self) -> String {
        let mut text = format!("{} {} is applied", self.from, self.kind);
        text.push_str(&self.tail("as"));
        text
    }

    fn sentence(&self, verb: &str, prep: &str) -> String {
        let mut text = format!("{verb} {} {}", self.from, self.kind);
        text.push_str(&self.tail(prep));
        text
    }

    fn tail(&self, prep: &str) -> String {
        let mut text = format!(
            " {prep} {}: {} was removed in Kubernetes {}",
            self.to, self.from, self.removed_in
        );
        for note in &self.notes {
            text.push_str("; ");
            text.push_str(note);
        }
        text
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

/// An object that cannot be applied: its kind was removed without a
/// successor, or the successor cannot express it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed {
    /// Kind of the object.
    pub kind: String,
    /// The `apiVersion` the template asked for.
    pub api_version: String,
    /// The Kubernetes release from which the object cannot be applied.
    pub removed_in: &'static str,
    /// Why, without the leading object description.
    pub reason: String,
    /// What to use instead.
    pub advice: String,
}

impl fmt::Display for Removed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} cannot be applied: {}; {}",
            self.api_version, self.kind, self.reason, self.advice
        )
    }
}

impl std::error::Error for Removed {}

/// Decides what to apply for `object` on an API server that serves what
/// `served` says. Only an object whose own version is not served is
/// translated; the object is not modified.
pub fn translate(object: &Value, served: &dyn ServedApis) -> Translation {
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version.is_empty() || kind.is_empty() || served.serves(api_version, kind) {
        return Translation::Untouched;
    }
    let Some(rule) = table::rule(api_version, kind) else {
        return Translation::Untouched;
    };
    for target in rule.targets {
        if !served.serves(target, kind) {
            continue;
        }
        let mut translated = object.clone();
        let mut notes = Vec::new();
        if let Err(refusal) = (rule.convert)(&mut translated, target, &mut notes) {
            return Translation::Removed(Removed {
                kind: kind.to_string(),
                api_version: api_version.to_string(),
                removed_in: rule.removed_in,
                reason: refusal.reason,
                advice: refusal.advice,
            });
        }
        if let Some(root) = translated.as_object_mut() {
            root.insert("apiVersion".into(), Value::String((*target).to_string()));
        }
        return Translation::Translated(Translated {
            object: translated,
            change: Change {
                kind: kind.to_string(),
                from: api_version.to_string(),
                to: (*target).to_string(),
                removed_in: rule.removed_in,
                notes,
            },
        });
    }
    match &rule.gone {
        Some(gone) => Translation::Removed(Removed {
            kind: kind.to_string(),
            api_version: api_version.to_string(),
            removed_in: gone.removed_in,
            reason: format!(
                "{kind} was removed in Kubernetes {} without a successor",
                gone.removed_in
            ),
            advice: gone.advice.to_string(),
        }),
        None => Translation::Untouched,
    }
}

/// The one call an apply path needs: the object to apply (translated when
/// its version is not served) and, when it was translated, what changed
/// ([`Change::message`] is the step message); or why it cannot be applied.
pub fn object_to_apply(
    object: Value,
    served: &dyn ServedApis,
) -> Result<(Value, Option<Change>), Removed> {
    match translate(&object, served) {
        Translation::Untouched => Ok((object, None)),
        Translation::Translated(t) => Ok((t.object, Some(t.change))),
        Translation::Removed(removed) => Err(removed),
    }
}

/// A conversion that cannot be done: the object has no equivalent in the
/// successor version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) reason: String,
    pub(crate) advice: String,
}

/// A family's conversion: rewrites the object (apiVersion is set by the
/// caller) for `target`, adding notes; or refuses.
pub(crate) type Convert = fn(&mut Value, &str, &mut Vec<String>) -> Result<(), Refusal>;

/// Small JSON helpers shared by the conversions.
pub(crate) mod json {
    use serde_json::{Map, Value};

    /// The object at `path` below `value`, if every step is an object.
    pub(crate) fn object_mut<'a>(
        value: &'a mut Value,
        path: &[&str],
    ) -> Option<&'a mut Map<String, Value>> {
        let mut current = value;
        for key in path {
            current = current.as_object_mut()?.get_mut(*key)?;
        }
        current.as_object_mut()
    }

    /// The array at `path` below `value`.
    pub(crate) fn array_mut<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Vec<Value>> {
        let mut current = value;
        for key in path {
            current = current.as_object_mut()?.get_mut(*key)?;
        }
        current.as_array_mut()
    }

    /// Whether `key` is absent or null in `map`.
    pub(crate) fn missing(map: &Map<String, Value>, key: &str) -> bool {
        map.get(key).is_none_or(Value::is_null)
    }

    /// Moves `from` to `to` inside `map` unless `to` is already set; returns
    /// whether something moved.
    pub(crate) fn rename(map: &mut Map<String, Value>, from: &str, to: &str) -> bool {
        match map.remove(from) {
            Some(value) if missing(map, to) => {
                map.insert(to.to_string(), value);
                true
            }
            _ => false,
        }
    }
}
