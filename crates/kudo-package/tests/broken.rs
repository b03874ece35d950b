//! Broken packages under tests/broken/ (one folder per problem): verify
//! reports each problem with a message naming the file and the item.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use kudo_package::verify::Severity;

fn load(name: &str) -> kudo_package::Package {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/broken")
        .join(name);
    kudo_package::load(&dir).unwrap()
}

/// (folder, severity, file, the message must contain this).
const CASES: &[(&str, Severity, &str, &str)] = &[
    (
        "unknown-task-in-step",
        Severity::Error,
        "operator.yaml",
        "plan deploy phase main step everything uses task migrate, which is not defined in tasks",
    ),
    (
        "missing-template",
        Severity::Error,
        "operator.yaml",
        "task app uses template secret.yaml, which does not exist under templates/",
    ),
    (
        "unused-template",
        Severity::Warning,
        "templates/leftover.yaml",
        "template is not used by any task",
    ),
    (
        "duplicate-task",
        Severity::Error,
        "operator.yaml",
        "task app is defined more than once",
    ),
    (
        "duplicate-step",
        Severity::Error,
        "operator.yaml",
        "plan deploy phase main has more than one step named everything",
    ),
    (
        "duplicate-parameter",
        Severity::Error,
        "params.yaml",
        "parameter greeting is declared more than once",
    ),
    (
        "undeclared-parameter",
        Severity::Error,
        "templates/cm.yaml",
        "template uses parameter FAREWELL, which is not declared in params.yaml",
    ),
    (
        "plan-without-phases",
        Severity::Error,
        "operator.yaml",
        "plan backup has no phases",
    ),
    (
        "invalid-strategy",
        Severity::Error,
        "operator.yaml",
        "plan deploy phase main: unknown strategy \"random\"",
    ),
    (
        "parameter-type-mismatch",
        Severity::Error,
        "params.yaml",
        "default of parameter REPLICAS has value \"three\", which is not a valid integer",
    ),
    (
        "default-not-in-enum",
        Severity::Error,
        "params.yaml",
        "default of parameter LEVEL has value \"TRACE\", but only allowed values are [INFO, DEBUG]",
    ),
    (
        "trigger-missing-plan",
        Severity::Error,
        "params.yaml",
        "parameter GREETING triggers plan restart, which is not defined in operator.yaml",
    ),
    (
        "no-deploy-plan",
        Severity::Error,
        "operator.yaml",
        "no deploy plan",
    ),
    (
        "unknown-root-field",
        Severity::Error,
        "templates/cm.yaml",
        "template uses .StepNumber, which templates do not have",
    ),
    (
        "invalid-rendered-yaml",
        Severity::Error,
        "templates/cm.yaml",
        "rendered template is not valid Kubernetes YAML",
    ),
    (
        "template-parse-error",
        Severity::Error,
        "templates/cm.yaml",
        "template does not parse: cm.yaml:",
    ),
    (
        "immutable-without-default",
        Severity::Error,
        "params.yaml",
        "parameter DISK is immutable but neither required nor defaulted",
    ),
    (
        "unknown-task-kind",
        Severity::Error,
        "operator.yaml",
        "task app has unknown kind \"Patch\"",
    ),
    (
        "bad-operator-version",
        Severity::Error,
        "operator.yaml",
        "operatorVersion \"latest\" is not a semantic version",
    ),
    (
        "bad-channel",
        Severity::Error,
        "operator.yaml",
        "channels: channel \"Beta\" is not a channel name",
    ),
    (
        "dependency-twice",
        Severity::Error,
        "operator.yaml",
        "dependencies: zookeeper is listed twice",
    ),
    (
        "dependency-on-itself",
        Severity::Error,
        "operator.yaml",
        "dependencies: broken cannot depend on itself",
    ),
    (
        "empty-resources",
        Severity::Error,
        "operator.yaml",
        "task app (Apply) has an empty resource list",
    ),
    (
        "toggle-undeclared-parameter",
        Severity::Error,
        "operator.yaml",
        "task app (Toggle) uses parameter ENABLED, which is not declared in params.yaml",
    ),
    (
        "enum-value-wrong-type",
        Severity::Error,
        "params.yaml",
        "enum value of parameter COUNT has value \"many\", which is not a valid integer",
    ),
    (
        "missing-namespace-manifest",
        Severity::Error,
        "operator.yaml",
        "namespaceManifest namespace.yaml does not exist under templates/",
    ),
    (
        "unused-parameter",
        Severity::Warning,
        "params.yaml",
        "parameter UNUSED is not used by any template and has no trigger",
    ),
];

#[test]
fn every_broken_package_reports_its_problem() {
    let mut failures = Vec::new();
    for (dir, severity, file, needle) in CASES {
        let report = load(dir).verify();
        let found = report
            .issues()
            .any(|i| i.severity == *severity && i.file == *file && i.message.contains(needle));
        if !found {
            failures.push(format!(
                "{dir}: expected {severity}: {file}: ...{needle}...; got:\n{report}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn packages_with_errors_are_refused_and_warnings_alone_are_not() {
    for (dir, severity, _, _) in CASES {
        let pkg = load(dir);
        let refused = pkg.verified().is_err();
        assert_eq!(
            refused,
            *severity == Severity::Error,
            "{dir}:\n{}",
            pkg.verify()
        );
    }
}

#[test]
fn every_broken_folder_has_a_case() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    for entry in std::fs::read_dir(root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            CASES.iter().any(|(d, ..)| *d == name),
            "tests/broken/{name} has no case"
        );
    }
}

#[test]
fn refusal_message_names_the_package_and_lists_the_issues() {
    let err = load("missing-template").verified().unwrap_err().to_string();
    assert!(
        err.contains("tests/broken/missing-template: package is invalid:"),
        "{err}"
    );
    assert!(
        err.contains("error: operator.yaml: task app uses template secret.yaml"),
        "{err}"
    );
}
