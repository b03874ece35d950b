//! End to end through the binary with the real manager and webhook (run
//! in-process on kudo-sandbox): install → plan status → update → plan
//! trigger refused while a plan runs → plan trigger after completion →
//! uninstall.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{fixture_arg, run_with, stderr, stdout, transcript};
use kudo_sandbox::Sandbox;

const INSTANCE: &str = "demo-instance";

fn ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = run_with(kubeconfig, args);
    assert!(output.status.success(), "{args:?}: {}", transcript(&output));
    stdout(&output)
}

/// Waits (up to 20 s) until `plan status` output contains `needle`.
fn wait_for_status(kubeconfig: &Path, needle: &str) -> String {
    let mut last = String::new();
    for _ in 0..80 {
        last = ok(kubeconfig, &["plan", "status", "--instance", INSTANCE]);
        if last.contains(needle) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("plan status never showed {needle:?}; last:\n{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn install_status_update_refused_trigger_trigger_uninstall() {
    // Workloads take a while to become ready so a plan is still running
    // when the refused trigger arrives.
    let sandbox = Sandbox::builder()
        .ready_delay(Duration::from_secs(3))
        .start()
        .await
        .unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);

    let manager = common::Manager::start(&sandbox);

    // install --wait follows deploy to COMPLETE.
    let text = ok(
        kc,
        &[
            "install",
            &fixture_arg("demo"),
            "-p",
            "REPLICAS=2",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    assert!(
        text.contains("instance default/demo-instance created"),
        "{text}"
    );

    let status = wait_for_status(kc, "Plan deploy (serial strategy) [COMPLETE]");
    assert!(status.contains("Step app [COMPLETE]"), "{status}");

    // update starts a plan; while it runs, a manual trigger is refused by
    // the webhook and its message reaches the user.
    ok(kc, &["update", "--instance", INSTANCE, "-p", "REPLICAS=3"]);
    wait_for_status(kc, "[IN_PROGRESS]");
    let refused = run_with(
        kc,
        &[
            "plan",
            "trigger",
            "--name",
            "backup",
            "--instance",
            INSTANCE,
        ],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", transcript(&refused));
    let message = stderr(&refused);
    assert!(message.contains("triggering plan backup"), "{message}");
    assert!(
        message.contains("denied"),
        "the webhook's refusal is shown: {message}"
    );

    // Once the update finished, the trigger is accepted and --wait follows it.
    ok(
        kc,
        &[
            "plan",
            "status",
            "--instance",
            INSTANCE,
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let text = ok(
        kc,
        &[
            "plan",
            "trigger",
            "--name",
            "backup",
            "--instance",
            INSTANCE,
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    assert!(text.contains("triggered plan backup"), "{text}");
    let history = ok(kc, &["plan", "history", "--instance", INSTANCE]);
    assert!(history.contains("backup"), "{history}");

    let text = ok(
        kc,
        &[
            "uninstall",
            "--instance",
            INSTANCE,
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    assert!(text.contains("deleted"), "{text}");

    // A plan ending in FATAL_ERROR makes --wait fail at once with the
    // step's message; plan status and history show it.
    let failed = run_with(
        kc,
        &[
            "install",
            &fixture_arg("failing"),
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    assert_eq!(failed.status.code(), Some(1), "{}", transcript(&failed));
    let message = stderr(&failed);
    assert!(
        message.contains("plan deploy failed (FATAL_ERROR) in phase main, step boom"),
        "{message}"
    );
    let status = ok(kc, &["plan", "status", "--instance", "failing-instance"]);
    assert!(status.contains("Step boom [FATAL_ERROR]"), "{status}");

    manager.stop().await;
}
