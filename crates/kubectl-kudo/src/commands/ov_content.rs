//! An OperatorVersion is never changed once installed (Instances may run
//! it): installing a package whose content differs from the installed one
//! of the same name is refused, naming what differs and the ways on.

use std::collections::BTreeSet;

use kudo_api::OperatorVersionSpec;
use serde::Serialize;

use crate::error::CliError;

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

/// The refusal: what differs, why nothing was changed, and how to go on.
pub fn differs_error(namespace: &str, name: &str, differences: &[String]) -> CliError {
    CliError::Other(format!(
        "operatorversion {namespace}/{name} is installed with other content than this package \
         ({} {}): an installed version is never changed, as Instances may run it, so nothing \
         was written. Give the package a new operatorVersion in operator.yaml and run \
         `kubectl kudo upgrade PACKAGE --instance NAME -n {namespace}`, or, when no Instance \
         uses it, delete it with `kubectl delete operatorversion {name} -n {namespace}` and \
         install again",
        kudo_api::message::listed(differences),
        if differences.len() == 1 {
            "differs"
        } else {
            "differ"
        },
    ))
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

    #[test]
    fn the_refusal_says_what_to_do() {
        let text = differs_error("default", "web-0.1.0", &["templates/a.yaml".into()]).to_string();
        assert!(text.contains("(templates/a.yaml differs)"), "{text}");
        assert!(text.contains("kubectl kudo upgrade"), "{text}");
        assert!(
            text.contains("kubectl delete operatorversion web-0.1.0 -n default"),
            "{text}"
        );
    }
}
