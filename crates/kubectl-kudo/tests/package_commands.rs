//! `package verify|params list|render` on fixture packages (no cluster).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture_arg, run, transcript};

#[test]
fn verify_accepts_a_good_package() {
    let output = run(&["package", "verify", &fixture_arg("demo")]);
    assert!(output.status.success(), "{}", transcript(&output));
    insta::assert_snapshot!("package-verify-demo", transcript(&output));
}

#[test]
fn verify_reports_errors_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("templates")).unwrap();
    std::fs::write(
        dir.path().join("operator.yaml"),
        "name: broken\noperatorVersion: not-semver\nkubernetesVersion: 1.20.0\ntasks: []\nplans: {}\n",
    )
    .unwrap();
    let output = run(&["package", "verify", &dir.path().display().to_string()]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    assert!(common::stderr(&output).contains("has errors"));
}

#[test]
fn missing_package_is_an_error_naming_the_path() {
    let output = run(&["package", "verify", "/nonexistent/pkg"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        common::stderr(&output).contains("/nonexistent/pkg"),
        "{}",
        transcript(&output)
    );
}

#[test]
fn params_list_prints_a_table() {
    let output = run(&["package", "params", "list", &fixture_arg("demo")]);
    insta::assert_snapshot!("package-params-list-demo", transcript(&output));
}

#[test]
fn params_list_prints_yaml_with_o_yaml() {
    let output = run(&[
        "package",
        "params",
        "list",
        &fixture_arg("demo"),
        "-o",
        "yaml",
    ]);
    insta::assert_snapshot!("package-params-list-demo-yaml", transcript(&output));
}

#[test]
fn render_prints_every_object_of_the_plan_with_its_position() {
    let output = run(&[
        "package",
        "render",
        &fixture_arg("demo"),
        "-p",
        "REPLICAS=3",
        "--instance",
        "web",
        "-n",
        "shop",
    ]);
    assert!(output.status.success(), "{}", transcript(&output));
    insta::assert_snapshot!("package-render-demo", transcript(&output));
}

#[test]
fn render_of_an_unknown_plan_lists_the_plans() {
    let output = run(&["package", "render", &fixture_arg("demo"), "--plan", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!("package-render-unknown-plan", transcript(&output));
}

#[test]
fn a_parameter_file_that_never_ends_is_refused_after_four_mib() {
    let output = run(&["package", "render", &fixture_arg("demo"), "-P", "/dev/zero"]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    assert!(
        common::stderr(&output).contains(
            "/dev/zero is larger than 4 MiB; a parameter file must be a YAML map of parameter values"
        ),
        "{}",
        transcript(&output)
    );
}

#[test]
fn sixty_thousand_unknown_parameters_are_refused_in_a_few_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.yaml");
    let text: String = (0..60_000)
        .map(|i| format!("UNKNOWN_{i:05}: x\n"))
        .collect();
    std::fs::write(&file, text).unwrap();
    let output = run(&[
        "package",
        "render",
        &fixture_arg("demo"),
        "-P",
        &file.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    let stderr = common::stderr(&output);
    assert!(stderr.len() < 2_000, "{} bytes: {stderr}", stderr.len());
    assert!(
        stderr.contains("UNKNOWN_00019 and 59,980 more are not"),
        "{stderr}"
    );
}

#[test]
fn render_refuses_invalid_parameter_values() {
    let output = run(&[
        "package",
        "render",
        &fixture_arg("demo"),
        "-p",
        "REPLICAS=many",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    assert!(
        common::stderr(&output).contains("REPLICAS"),
        "{}",
        transcript(&output)
    );
}

#[test]
fn verify_lists_what_a_kubernetes_release_applies_in_another_version() {
    let output = run(&[
        "package",
        "verify",
        &fixture_arg("legacy"),
        "--kubernetes-version",
        "1.32",
    ]);
    assert!(output.status.success(), "{}", transcript(&output));
    insta::assert_snapshot!("package-verify-legacy-1.32", transcript(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_against_a_named_cluster_uses_its_version() {
    let sandbox = kudo_sandbox::Sandbox::start().await.unwrap();
    let output = common::run_with(
        sandbox.kubeconfig_path(),
        &["package", "verify", &fixture_arg("legacy")],
    );
    assert!(output.status.success(), "{}", transcript(&output));
    let text = transcript(&output);
    assert!(
        text.contains("against the cluster's Kubernetes 1.32 ("),
        "{text}"
    );
    assert!(
        text.contains("policy/v1beta1"),
        "lists translations: {text}"
    );
}

#[test]
fn verify_for_the_release_a_package_was_written_for_has_nothing_to_say() {
    let output = run(&[
        "package",
        "verify",
        &fixture_arg("legacy"),
        "--kubernetes-version",
        "v1.15.12",
    ]);
    assert!(output.status.success(), "{}", transcript(&output));
    assert!(
        !common::stdout(&output).contains("warning"),
        "{}",
        transcript(&output)
    );
}

#[test]
fn verify_fails_on_a_kind_removed_without_successor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("templates")).unwrap();
    std::fs::write(
        dir.path().join("operator.yaml"),
        "name: psp\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: psp\n    kind: Apply\n    spec:\n      resources: [psp.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [psp]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("templates/psp.yaml"),
        "apiVersion: policy/v1beta1\nkind: PodSecurityPolicy\nmetadata:\n  name: restricted\nspec:\n  privileged: false\n",
    )
    .unwrap();
    let path = dir.path().display().to_string();
    let output = run(&["package", "verify", &path, "--kubernetes-version", "1.32"]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    assert!(
        common::stdout(&output).contains(
            "PodSecurityPolicy was removed in Kubernetes 1.25 without a successor; use Pod Security Admission"
        ),
        "{}",
        transcript(&output)
    );
    let output = run(&["package", "render", &path, "--kubernetes-version", "1.32"]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    assert!(
        common::stderr(&output)
            .contains("1 object of plan deploy cannot be applied on Kubernetes 1.32"),
        "{}",
        transcript(&output)
    );
    let output = run(&["package", "verify", &path]);
    assert!(output.status.success(), "{}", transcript(&output));
}

#[test]
fn render_prints_objects_as_a_kubernetes_release_gets_them() {
    let output = run(&[
        "package",
        "render",
        &fixture_arg("legacy"),
        "--instance",
        "web",
        "-n",
        "shop",
        "--kubernetes-version",
        "1.32",
    ]);
    assert!(output.status.success(), "{}", transcript(&output));
    insta::assert_snapshot!("package-render-legacy-1.32", transcript(&output));
}

#[test]
fn an_unreadable_kubernetes_version_is_a_usage_error() {
    let output = run(&[
        "package",
        "verify",
        &fixture_arg("legacy"),
        "--kubernetes-version",
        "latest",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
    assert!(
        common::stderr(&output).contains("expected MAJOR.MINOR such as 1.32"),
        "{}",
        transcript(&output)
    );
}
