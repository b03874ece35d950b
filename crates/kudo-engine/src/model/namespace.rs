//! What the manager counted in an Instance's namespace for the
//! namespace-wide suppression: the threshold in force and the Instances
//! automatically suppressed after a failure.

use jiff::Timestamp;

/// How many automatically suppressed Instances a namespace tolerates
/// before its automatic plans hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// The namespace never holds.
    Off,
    /// It holds while more than this many are suppressed (0: the first
    /// one holds it).
    MoreThan(u32),
}

/// Where the threshold in force comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThresholdSource {
    /// The manager's `--namespace-suppression-threshold`.
    Manager,
    /// The Namespace's `kudo.dev/suppression-threshold` annotation.
    Annotation,
    /// The manager's flag, because the annotation could not be read: why.
    Malformed(String),
}

/// An automatically suppressed Instance of the namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suppressed {
    /// Its name.
    pub name: String,
    /// When its suppression ends by itself (`None`: when cleared).
    pub until: Option<Timestamp>,
}

/// The namespace's count, as observed from the manager's caches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceSuppressions {
    /// The namespace.
    pub namespace: String,
    /// The threshold in force.
    pub threshold: Threshold,
    /// Where it comes from.
    pub source: ThresholdSource,
    /// Its automatically suppressed Instances, by name (expired ones may
    /// be among them; the engine leaves them out).
    pub suppressed: Vec<Suppressed>,
}
