//! Help text of every command, usage errors and completions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{run, transcript};

const COMMANDS: &[&[&str]] = &[
    &[],
    &["init"],
    &["install"],
    &["update"],
    &["upgrade"],
    &["uninstall"],
    &["get"],
    &["plan"],
    &["plan", "status"],
    &["plan", "history"],
    &["plan", "trigger"],
    &["plan", "pause"],
    &["plan", "resume"],
    &["plan", "continue"],
    &["plan", "force-complete"],
    &["plan", "restart"],
    &["plan", "cancel"],
    &["suppress"],
    &["suppress", "clear"],
    &["rollback"],
    &["maintenance"],
    &["maintenance", "schedule"],
    &["maintenance", "status"],
    &["maintenance", "down"],
    &["maintenance", "up"],
    &["maintenance", "cancel"],
    &["package"],
    &["package", "verify"],
    &["package", "params", "list"],
    &["package", "render"],
    &["package", "create"],
    &["package", "push"],
    &["repo"],
    &["repo", "add"],
    &["repo", "remove"],
    &["repo", "list"],
    &["repo", "context"],
    &["repo", "update"],
    &["repo", "index"],
    &["search"],
    &["completion"],
];

#[test]
fn every_command_has_help_text() {
    for path in COMMANDS {
        let mut args: Vec<&str> = path.to_vec();
        args.push("--help");
        let output = run(&args);
        assert!(output.status.success(), "{args:?}");
        let name = if path.is_empty() {
            "help-root".to_string()
        } else {
            format!("help-{}", path.join("-"))
        };
        insta::assert_snapshot!(name, transcript(&output));
    }
}

#[test]
fn unknown_flags_and_missing_arguments_exit_with_2() {
    for args in [
        &["install"][..],
        &["plan", "trigger", "--instance", "x"],
        &["get", "widgets"],
        &["plan", "status", "--bogus"],
        &["plan", "pause", "--instance", "x", "--step", "s"],
        &["install", "pkg", "--wait-timeout", "5 parsecs"],
    ] {
        let output = run(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            transcript(&output)
        );
    }
}

#[test]
fn usage_error_message_names_the_problem() {
    let output = run(&["get", "widgets"]);
    insta::assert_snapshot!("usage-get-widgets", transcript(&output));
}

#[test]
fn bad_parameter_flags_are_usage_errors() {
    let output = run(&[
        "package",
        "render",
        &common::fixture_arg("demo"),
        "-p",
        "REPLICAS",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        common::stderr(&output).contains("has no '='"),
        "{}",
        transcript(&output)
    );
}

#[test]
fn completion_scripts_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef kubectl-kudo"),
        ("fish", "complete -c kubectl-kudo"),
    ] {
        let output = run(&["completion", shell]);
        assert!(output.status.success(), "{shell}");
        let script = common::stdout(&output);
        assert!(
            script.contains(marker),
            "{shell}: {}",
            &script[..script.len().min(300)]
        );
        assert!(
            script.contains("force-complete"),
            "{shell} completes subcommands"
        );
    }
}

#[test]
fn version_is_printed() {
    let version = env!("CARGO_PKG_VERSION");
    for args in [&["--version"][..], &["version"][..]] {
        let output = run(args);
        assert!(output.status.success(), "{args:?}");
        assert_eq!(common::stdout(&output), format!("kubectl-kudo {version}\n"));
    }
    let json = run(&["version", "-o", "json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value, serde_json::json!({ "clientVersion": version }));
}

#[test]
fn kudo_numeric_verbosity_is_accepted() {
    for args in [&["-v", "2", "version"][..], &["version", "--v=4"][..]] {
        let output = run(args);
        assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    }
}
