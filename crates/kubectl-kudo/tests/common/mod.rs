//! Helpers shared by the CLI tests: run the binary, redact what changes
//! between runs, find fixtures.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// A `kubectl-kudo` command with a clean environment (no colours, no
/// user kubeconfig).
pub fn kudo() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-kudo").unwrap();
    // No package repositories unless a test configures some.
    let nowhere = std::env::temp_dir().join(format!("kudo-test-no-home-{}", std::process::id()));
    cmd.env("NO_COLOR", "1")
        .env("KUDO_HOME", &nowhere)
        .env("XDG_CACHE_HOME", nowhere.join("cache"))
        .env_remove("KUBECONFIG")
        .env_remove("KUDO_LOG");
    cmd
}

/// Runs the binary with `args`.
pub fn run(args: &[&str]) -> Output {
    kudo().args(args).output().unwrap()
}

/// Runs the binary against a kubeconfig.
pub fn run_with(kubeconfig: &Path, args: &[&str]) -> Output {
    kudo()
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

/// Runs against a kubeconfig and asserts that the command succeeded
/// (the transcript shows why not).
pub fn ok(kubeconfig: &Path, args: &[&str]) -> Output {
    let output = run_with(kubeconfig, args);
    assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    output
}

/// Runs against a kubeconfig and asserts the exit code.
pub fn fails(kubeconfig: &Path, args: &[&str], code: i32) -> Output {
    let output = run_with(kubeconfig, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{args:?}: {}",
        transcript(&output)
    );
    output
}

/// [`ok`]'s transcript.
pub fn ok_text(kubeconfig: &Path, args: &[&str]) -> String {
    transcript(&ok(kubeconfig, args))
}

/// [`fails`]'s transcript.
pub fn fails_text(kubeconfig: &Path, args: &[&str], code: i32) -> String {
    transcript(&fails(kubeconfig, args, code))
}

/// stdout as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `stdout`, then `stderr` under a marker, then the exit code: one text to
/// snapshot per command.
pub fn transcript(output: &Output) -> String {
    let mut text = stdout(output);
    let err = stderr(output);
    if !err.is_empty() {
        text.push_str("--- stderr ---\n");
        text.push_str(&err);
    }
    text.push_str(&format!(
        "--- exit {} ---\n",
        output.status.code().unwrap_or(-1)
    ));
    redact(&text)
}

/// Replaces uuids, elapsed times, ports and certificate bodies by
/// placeholders (tests write fixed timestamps, so those stay).
pub fn redact(text: &str) -> String {
    let uuid =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let elapsed = regex::Regex::new(r"after \d+s").unwrap();
    let b64 = regex::Regex::new(r"[A-Za-z0-9+/=]{200,}").unwrap();
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    // Placeholders keep the original width so table columns stay aligned.
    let same_width = |label: &'static str| {
        move |caps: &regex::Captures<'_>| format!("{label:<width$}", width = caps[0].len())
    };
    let text = uuid.replace_all(text, same_width("[uid]"));
    let text = elapsed.replace_all(&text, "after [n]s");
    let text = b64.replace_all(&text, "[base64]");
    port.replace_all(&text, "127.0.0.1:[port]")
        .replace(env!("CARGO_MANIFEST_DIR"), "[crate]")
}

/// A fixture package directory.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Fixture path as &str for argument lists.
pub fn fixture_arg(name: &str) -> String {
    fixture(name).display().to_string()
}

/// The real manager with its webhook, running in-process against a sandbox
/// until [`Manager::stop`].
pub struct Manager {
    shutdown: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<Result<(), kudo_manager::Error>>,
    _certs: tempfile::TempDir,
}

impl Manager {
    /// Starts the controller and a local webhook registered with the sandbox.
    pub fn start(sandbox: &kudo_sandbox::Sandbox) -> Self {
        use kudo_manager::controller::ControllerConfig;
        use kudo_manager::manager::{self, ManagerOptions, WebhookMode};
        let certs = tempfile::tempdir().unwrap();
        let shutdown = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(manager::run(
            sandbox.client().unwrap(),
            ManagerOptions {
                admin_addr: "127.0.0.1:0".parse().unwrap(),
                leader_election: None,
                webhook: WebhookMode::Local {
                    port: 0,
                    cert_dir: certs.path().to_path_buf(),
                },
                controller: ControllerConfig::default(),
            },
            shutdown.clone(),
        ));
        Self {
            shutdown,
            task,
            _certs: certs,
        }
    }

    /// Asks it to stop and waits (up to 10 s) until it has.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let stopped = tokio::time::timeout(std::time::Duration::from_secs(10), self.task).await;
        assert!(
            matches!(stopped, Ok(Ok(Ok(())))),
            "the manager did not stop cleanly: {stopped:?}"
        );
    }
}
