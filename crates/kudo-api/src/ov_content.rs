//! Whether two OperatorVersions hold the same package: an installed one is
//! never changed (Instances may run it), so a package installed again, or
//! a release a channel moves to, must match what is there.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::OperatorVersionSpec;

/// What differs between the installed spec and the package's, in words
/// (`templates/deployment.yaml`, `parameter REPLICAS`, `plan deploy`);
/// empty when they are the same.
pub fn differences(installed: &OperatorVersionSpec, package: &OperatorVersionSpec) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = installed
        .templates
        .keys()
        .chain(package.templates.keys())
        .collect();
    for name in names {
        if installed.templates.get(name) != package.templates.get(name) {
            out.push(format!("templates/{name}"));
        }
    }
    let parameters: BTreeSet<&str> = installed
        .parameters
        .iter()
        .chain(&package.parameters)
        .map(|p| p.name.as_str())
        .collect();
    for name in parameters {
        if !same(&installed.parameter(name), &package.parameter(name)) {
            out.push(format!("parameter {name}"));
        }
    }
    let plans: BTreeSet<&String> = installed.plans.keys().chain(package.plans.keys()).collect();
    for name in plans {
        if !same(&installed.plan(name), &package.plan(name)) {
            out.push(format!("plan {name}"));
        }
    }
    if !same(&installed.tasks, &package.tasks) {
        out.push("tasks".into());
    }
    let rest = |spec: &OperatorVersionSpec| OperatorVersionSpec {
        templates: Default::default(),
        parameters: Vec::new(),
        plans: Default::default(),
        tasks: Vec::new(),
        ..spec.clone()
    };
    if !same(&rest(installed), &rest(package)) {
        out.push("operator.yaml".into());
    }
    out
}

/// Equal as the API server stores them (JSON), so a field left out and
/// one at its default compare as they are stored.
fn same<T: Serialize>(a: &T, b: &T) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(template: &str) -> OperatorVersionSpec {
        OperatorVersionSpec {
            templates: BTreeMap::from([("deployment.yaml".to_string(), template.to_string())]),
            ..Default::default()
        }
    }

    #[test]
    fn an_edited_template_is_named() {
        assert_eq!(
            differences(&spec("replicas: 1"), &spec("replicas: 2")),
            ["templates/deployment.yaml"]
        );
        assert!(differences(&spec("a"), &spec("a")).is_empty());
    }
}
