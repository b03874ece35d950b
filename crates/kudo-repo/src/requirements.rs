//! A version's requirements on other operators in the index: Helm's
//! `dependencies` list of a chart version (`name`, `version` as a range,
//! `repository`), which Helm's strict reader already knows, so an index
//! that carries them stays readable by Helm and KUDO (which ignores the
//! field). kudo-rs reads `name` and `version`; the rest of Helm's fields
//! are kept as they are.

use std::collections::BTreeSet;

use kudo_api::requirements::{MAX_REQUIREMENTS, Requirement};
use serde::{Deserialize, Serialize};

use crate::range::Range;

/// One entry of a version's `dependencies`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDependency {
    /// The operator needed.
    #[serde(default)]
    pub name: String,
    /// Its operator versions that work (a range); empty: any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Where it comes from (Helm's field; kudo-rs does not read it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository: String,
}

impl IndexDependency {
    /// The requirement it states.
    pub fn requirement(&self) -> Requirement {
        Requirement {
            operator: self.name.clone(),
            versions: Some(self.version.clone()).filter(|v| !v.trim().is_empty()),
        }
    }
}

/// The index form of the requirements in `operator.yaml`.
pub fn from_package(requirements: &[Requirement]) -> Vec<IndexDependency> {
    requirements
        .iter()
        .map(|r| IndexDependency {
            name: r.operator.clone(),
            version: r.versions.clone().unwrap_or_default(),
            repository: String::new(),
        })
        .collect()
}

/// Checks a version's requirements: operator names, each once (Helm
/// skips a version that names one twice), ranges that parse, at most
/// [`MAX_REQUIREMENTS`].
pub fn check(dependencies: &[IndexDependency]) -> Result<(), String> {
    if dependencies.len() > MAX_REQUIREMENTS {
        return Err(format!(
            "dependencies: {} listed; at most {MAX_REQUIREMENTS}",
            dependencies.len()
        ));
    }
    let mut seen = BTreeSet::new();
    for dep in dependencies {
        crate::index::check_name(&dep.name).map_err(|e| format!("dependencies: {e}"))?;
        if !seen.insert(dep.name.as_str()) {
            return Err(format!("dependencies: {} is listed twice", dep.name));
        }
        let requirement = dep.requirement();
        Range::parse(requirement.range())
            .map_err(|e| format!("dependencies: {}: {e}", dep.name))?;
    }
    Ok(())
}

/// Whether operator version `version` is in `range` (pre-releases count:
/// a requirement is about what runs, not what is offered). An error names
/// what does not parse.
pub fn satisfies(range: &str, version: &str) -> Result<bool, String> {
    let range = Range::parse(range)?;
    let version = crate::version::Version::parse(version).map_err(|e| format!("version {e}"))?;
    Ok(range.matches(&version, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(name: &str, version: &str) -> IndexDependency {
        IndexDependency {
            name: name.into(),
            version: version.into(),
            repository: String::new(),
        }
    }

    #[test]
    fn a_range_is_satisfied_by_the_versions_in_it_only() {
        assert_eq!(satisfies(">=3.5 <4", "3.5.1"), Ok(true));
        assert_eq!(satisfies(">=3.6 <4", "3.5.1"), Ok(false));
        assert_eq!(satisfies("*", "0.1.0"), Ok(true));
        assert!(satisfies(">=three", "1.0.0").is_err());
        assert!(satisfies(">=1", "one").unwrap_err().contains("\"one\""));
    }

    #[test]
    fn requirements_with_a_bad_range_a_bad_name_or_twice_the_same_are_refused() {
        assert_eq!(
            check(&[dep("zookeeper", ">=3.5 <4"), dep("etcd", "")]),
            Ok(())
        );
        assert!(
            check(&[dep("zookeeper", ">=three")])
                .unwrap_err()
                .contains("zookeeper")
        );
        assert!(check(&[dep("a b", "1")]).is_err());
        assert_eq!(
            check(&[dep("zk", "1"), dep("zk", "2")]),
            Err("dependencies: zk is listed twice".into())
        );
        let many: Vec<_> = (0..=MAX_REQUIREMENTS)
            .map(|i| dep(&format!("o{i}"), ""))
            .collect();
        assert!(check(&many).unwrap_err().contains("at most"));
    }

    #[test]
    fn an_index_entry_with_dependencies_reads_as_helm_writes_them() {
        let text = "apiVersion: v1\nentries:\n  kafka:\n  - name: kafka\n    operatorVersion: 2.0.0\n    urls: [kafka-2.0.0.tgz]\n    dependencies:\n    - name: zookeeper\n      version: \">=3.6 <4\"\n      repository: \"\"\n      condition: zk.enabled\n";
        let index =
            crate::index::IndexFile::parse(text.as_bytes(), "test", &crate::Limits::default())
                .unwrap();
        let entry = &index.entries["kafka"][0];
        assert_eq!(entry.dependencies, vec![dep("zookeeper", ">=3.6 <4")]);
        assert_eq!(
            entry.dependencies[0].requirement().range(),
            ">=3.6 <4",
            "read as a requirement"
        );
        let bad = text.replace(">=3.6 <4", ">=three");
        let err = crate::index::IndexFile::parse(bad.as_bytes(), "test", &crate::Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kafka 2.0.0: dependencies: zookeeper"),
            "{err}"
        );
    }
}
