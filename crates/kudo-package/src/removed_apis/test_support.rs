//! Table-driven conversion tests: each case is an object as a 2020 package
//! wrote it and the object expected on a Kubernetes 1.32 API server.

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{KubernetesRelease, Translation, translate};

/// One conversion case.
pub(super) struct Case<'a> {
    /// What the case shows.
    pub(super) name: &'a str,
    /// The object as the template renders it (YAML).
    pub(super) input: &'a str,
    /// The object to apply (YAML).
    pub(super) expected: &'a str,
    /// Text each expected note contains, in order of the notes.
    pub(super) notes: &'a [&'a str],
}

pub(super) fn yaml(text: &str) -> Value {
    crate::yaml::parse_value(text).unwrap_or_else(|e| panic!("bad YAML in test: {e}\n{text}"))
}

/// Runs every case against Kubernetes 1.32.
pub(super) fn run(cases: &[Case<'_>]) {
    run_on(cases, KubernetesRelease::CURRENT);
}

pub(super) fn run_on(cases: &[Case<'_>], release: KubernetesRelease) {
    for case in cases {
        let input = yaml(case.input);
        let expected = yaml(case.expected);
        let Translation::Translated(t) = translate(&input, &release) else {
            panic!(
                "{}: not translated: {:?}",
                case.name,
                translate(&input, &release)
            );
        };
        assert_eq!(t.object, expected, "{}", case.name);
        assert_eq!(
            t.change.notes.len(),
            case.notes.len(),
            "{}: notes {:#?}",
            case.name,
            t.change.notes
        );
        for (note, want) in t.change.notes.iter().zip(case.notes) {
            assert!(
                note.contains(want),
                "{}: note {note:?} does not contain {want:?}",
                case.name
            );
        }
    }
}
