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
fn completion_scripts_complete_kubectl_kudo_and_leave_the_rest_to_kubectl() {
    for (shell, marker) in [
        (
            "bash",
            "complete -o default -F __kubectl_kudo_complete kubectl",
        ),
        ("zsh", "compdef __kubectl_kudo_complete kubectl"),
        (
            "fish",
            "complete -c kubectl -n '__fish_seen_subcommand_from kudo'",
        ),
    ] {
        let output = run(&["completion", shell]);
        assert!(output.status.success(), "{shell}");
        let script = common::stdout(&output);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("kubectl-kudo __complete"),
            "{shell} asks the plugin for candidates"
        );
    }
}

/// Runs `script` in bash with the binary's directory first on PATH.
fn bash(script: &str) -> String {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_kubectl-kudo"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", transcript(&output));
    common::stdout(&output)
}

#[test]
fn bash_completes_the_words_after_kubectl_kudo() {
    let complete = |words: &str, cword: usize| {
        bash(&format!(
            "source <(kubectl-kudo completion bash); COMP_WORDS=({words}); COMP_CWORD={cword}; \
             __kubectl_kudo_complete; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        ))
    };
    assert_eq!(complete("kubectl kudo plan con", 3), "continue\n");
    assert_eq!(complete("kubectl kudo get -o ya", 4), "yaml\n");
    assert_eq!(
        complete("kubectl kudo plan status --inst", 4),
        "--instance\n"
    );
    assert_eq!(
        bash("source <(kubectl-kudo completion bash); complete -p kubectl"),
        "complete -o default -F __kubectl_kudo_complete kubectl\n"
    );
}

#[test]
fn the_plugin_completion_protocol_answers_candidates_and_a_directive() {
    let output = run(&["__complete", "plan", "res"]);
    assert!(output.status.success(), "{}", transcript(&output));
    assert_eq!(common::stdout(&output), "resume\nrestart\n:4\n");
    let output = run(&["__complete", "install", ""]);
    assert_eq!(common::stdout(&output), ":0\n", "file names for a package");
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    // More than a pipe holds, so the writer meets the closed pipe.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-kudo"))
        .args(["init", "--dry-run", "-o", "yaml"])
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "---\n");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
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
fn kubectl_verbosity_levels_and_counted_flags_are_accepted() {
    for args in [
        &["-v", "2", "version"][..],
        &["version", "--v=4"][..],
        &["-v=6", "version"][..],
        &["-v", "version"][..],
        &["-vvv", "version"][..],
    ] {
        let output = run(args);
        assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    }
}

#[test]
fn output_formats_a_command_does_not_print_are_usage_errors() {
    let output = run(&["plan", "history", "--instance", "x", "-o", "wide"]);
    assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
    assert!(
        common::stderr(&output).contains("plan history prints -o yaml or -o json, not -o wide"),
        "{}",
        transcript(&output)
    );
    let output = run(&["update", "--instance", "x", "-p", "A=1", "-o", "json"]);
    assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
}
