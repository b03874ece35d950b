//! A newcomer's first hour, end to end through the binary with the real
//! manager and webhook (in-process on kudo-sandbox, as `kudo-manager dev`
//! runs them): init where kudo-rs already runs, a break-glass run past a
//! closed window, a pause that holds the next run, an update that waits
//! for a suppression, and the hints the CLI prints run as printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::{ok, stderr, stdout, transcript};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kudo_api::Instance;
use kudo_sandbox::Sandbox;
use serde_json::json;

fn operator(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../operators")
        .join(name)
        .display()
        .to_string()
}

fn fails(kubeconfig: &Path, args: &[&str]) -> Output {
    common::fails(kubeconfig, args, 1)
}

/// The sandbox with the CRDs, and the manager serving it.
async fn dev_server() -> (Sandbox, common::Manager, PathBuf) {
    let sandbox = Sandbox::start().await.unwrap();
    let kc = sandbox.kubeconfig_path().to_path_buf();
    ok(&kc, &["init", "--crd-only"]);
    let manager = common::Manager::start(&sandbox);
    // The local webhook is registered once the manager serves.
    for _ in 0..200 {
        let configs: Api<
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
        > = Api::all(sandbox.client().unwrap());
        if configs
            .get_opt(kudo_certs::LOCAL_WEBHOOK_CONFIGURATION_NAME)
            .await
            .unwrap()
            .is_some()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (sandbox, manager, kc)
}

async fn instance(sandbox: &Sandbox, name: &str) -> Instance {
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.get(name).await.unwrap()
}

/// Polls `plan status` (up to 30 s) until it contains `needle`.
fn status_showing(kc: &Path, instance: &str, needle: &str) -> String {
    let mut last = String::new();
    for _ in 0..120 {
        last = stdout(&ok(kc, &["plan", "status", "--instance", instance]));
        if last.contains(needle) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("plan status never showed {needle:?}:\n{last}");
}

/// The `kubectl kudo` command in `text` that starts with `start`, as the
/// arguments after `kubectl kudo` (hints end with `-n NAMESPACE`).
fn hint(text: &str, start: &str) -> Vec<String> {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in {text}"));
    let rest = &text[at..];
    let end = rest.find(" -n ").map(|i| i + 4).unwrap_or(rest.len());
    let namespace: String = rest[end..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let command = format!("{}{namespace}", &rest[..end]);
    command
        .split_whitespace()
        .skip(2)
        .map(str::to_string)
        .collect()
}

/// Runs a hint as printed.
fn run_hint(kc: &Path, words: &[String]) -> Output {
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    ok(kc, &args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn init_where_kudo_rs_runs_is_refused_and_uninstall_clears_an_earlier_one() {
    let (sandbox, manager, kc) = dev_server().await;
    let refused = fails(&kc, &["init"]);
    assert!(
        stderr(&refused).contains("kudo-rs already runs here"),
        "{}",
        transcript(&refused)
    );
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(sandbox.client().unwrap());
    assert!(namespaces.get_opt("kudo-system").await.unwrap().is_none());

    // What an earlier CLI installed: a webhook behind a Service the dev
    // server cannot call (it runs no pods), which refuses every write.
    let objects: serde_json::Value =
        serde_json::from_slice(&ok(&kc, &["init", "--dry-run", "-o", "json"]).stdout).unwrap();
    for item in objects["items"].as_array().unwrap() {
        match item["kind"].as_str() {
            Some("Namespace") => {
                namespaces
                    .create(
                        &PostParams::default(),
                        &serde_json::from_value(item.clone()).unwrap(),
                    )
                    .await
                    .unwrap();
            }
            Some("ValidatingWebhookConfiguration") => {
                let api: Api<
                    k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
                > = Api::all(sandbox.client().unwrap());
                api.create(
                    &PostParams::default(),
                    &serde_json::from_value(item.clone()).unwrap(),
                )
                .await
                .unwrap();
            }
            _ => {}
        }
    }
    let broken = fails(&kc, &["install", &operator("first-operator")]);
    assert!(
        stderr(&broken).contains("has no endpoints"),
        "{}",
        transcript(&broken)
    );

    let cleared = ok(&kc, &["init", "--uninstall"]);
    assert!(
        stdout(&cleared).contains("the CRDs and the kudo-instance ClusterRole stay"),
        "{}",
        transcript(&cleared)
    );
    ok(
        &kc,
        &[
            "install",
            &operator("first-operator"),
            "--instance",
            "first-operator",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    manager.stop().await;
}

/// A window of one minute, six hours from now (UTC): closed now.
fn closed_window() -> serde_json::Value {
    let opens = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(6))
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC);
    let closes = opens
        .checked_add(jiff::SignedDuration::from_mins(1))
        .unwrap();
    json!({
        "days": "*",
        "start": opens.strftime("%H:%M").to_string(),
        "end": closes.strftime("%H:%M").to_string(),
        "timeZone": "UTC",
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn break_glass_runs_now_past_a_closed_window_taking_the_waiting_change() {
    let (sandbox, manager, kc) = dev_server().await;
    let name = "first-operator";
    let install = [
        "install",
        &operator(name),
        "--instance",
        name,
        "--wait",
        "--wait-timeout",
        "60s",
    ];
    ok(&kc, &install);
    let api: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"maintenanceWindows": [closed_window()]}})),
    )
    .await
    .unwrap();

    // The update waits for the window: the webhook says so, --wait names
    // the window and stops rather than wait hours.
    let waits = fails(
        &kc,
        &[
            "update",
            "--instance",
            name,
            "-p",
            "REPLICAS=3",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let text = stderr(&waits);
    assert!(
        text.contains("Warning: plan \"deploy\" will wait for the maintenance window opening at"),
        "{text}"
    );
    assert!(
        text.contains("the plan will not start within --wait-timeout (60s)")
            && text.contains("maintenance window closed until"),
        "{text}"
    );
    // Its way out runs as printed, and takes the change along.
    let mut now = hint(&text, "kubectl kudo plan trigger");
    now.extend([
        "--wait".to_string(),
        "--wait-timeout".to_string(),
        "60s".to_string(),
    ]);
    let ran = run_hint(&kc, &now);
    assert!(
        stderr(&ran).contains("plan deploy is COMPLETE"),
        "{}",
        transcript(&ran)
    );
    let status = instance(&sandbox, name).await.status.unwrap();
    assert_eq!(
        status
            .applied_parameters
            .unwrap()
            .get("REPLICAS")
            .map(String::as_str),
        Some("3")
    );
    assert!(status.blockers.is_empty(), "{:?}", status.blockers);
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pause_holds_the_next_run_until_resumed_and_the_refusal_says_so() {
    let (sandbox, manager, kc) = dev_server().await;
    ok(
        &kc,
        &[
            "install",
            &operator("zookeeper"),
            "--instance",
            "zk",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let paused = ok(
        &kc,
        &["plan", "pause", "--instance", "zk", "--plan", "reconfigure"],
    );
    assert!(
        stdout(&paused).contains(
            "plan reconfigure is not running: its next run starts paused and runs no step until \
             `kubectl kudo plan resume --instance zk --plan reconfigure -n default`"
        ),
        "{}",
        transcript(&paused)
    );
    for _ in 0..120 {
        let recorded = instance(&sandbox, "zk")
            .await
            .status
            .is_some_and(|s| s.operations.iter().any(|o| o.result.contains("paused")));
        if recorded {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }

    let update = ok(
        &kc,
        &["update", "--instance", "zk", "-p", "SNAP_RETAIN_COUNT=5"],
    );
    assert!(
        stderr(&update).contains(
            "Warning: plan \"reconfigure\" is paused: it starts, but runs no step until resumed \
             with kubectl kudo plan resume --instance zk --plan reconfigure -n default"
        ),
        "{}",
        transcript(&update)
    );
    status_showing(
        &kc,
        "zk",
        "Plan reconfigure (serial strategy) [WAITING], paused",
    );

    // Another plan is refused while it is paused, with a way out that works.
    let refused = fails(
        &kc,
        &["plan", "trigger", "--name", "deploy", "--instance", "zk"],
    );
    let message = stderr(&refused);
    assert!(
        message.contains(
            "Resume it with kubectl kudo plan resume --instance zk --plan reconfigure -n default \
             and wait, or stop it with kubectl kudo plan cancel --instance zk -n default"
        ),
        "{message}"
    );
    // A second update restarts the run, still paused.
    let before = instance(&sandbox, "zk").await.status.unwrap();
    let first_uid = before.plan_status["reconfigure"].uid.clone();
    ok(
        &kc,
        &["update", "--instance", "zk", "-p", "SNAP_RETAIN_COUNT=6"],
    );
    let mut restarted = None;
    for _ in 0..120 {
        let status = instance(&sandbox, "zk").await.status.unwrap();
        let reconfigure = &status.plan_status["reconfigure"];
        if reconfigure.uid != first_uid && reconfigure.uid.is_some() {
            restarted = Some(reconfigure.clone());
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let restarted = restarted.expect("the second update restarts reconfigure");
    assert_eq!(restarted.paused, Some(true));

    run_hint(&kc, &hint(&message, "kubectl kudo plan resume"));
    ok(
        &kc,
        &[
            "plan",
            "status",
            "--instance",
            "zk",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let history = stdout(&ok(&kc, &["plan", "history", "--instance", "zk"]));
    assert!(history.contains("SUPERSEDED"), "{history}");
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_update_held_by_a_suppression_says_so_and_its_hint_releases_it() {
    let (sandbox, manager, kc) = dev_server().await;
    let name = "first-operator";
    ok(
        &kc,
        &[
            "install",
            &operator(name),
            "--instance",
            name,
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    ok(&kc, &["suppress", "--instance", name, "--reason", "freeze"]);
    let held = fails(
        &kc,
        &[
            "update",
            "--instance",
            name,
            "-p",
            "REPLICAS=4",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let text = stderr(&held);
    assert!(
        text.contains("Warning: plan \"deploy\" will wait: the Instance is suppressed"),
        "{text}"
    );
    assert!(
        text.contains("the plan will not start within --wait-timeout (60s)"),
        "{text}"
    );
    let cleared = run_hint(&kc, &hint(&text, "kubectl kudo suppress clear"));
    assert!(
        stdout(&cleared).contains("1 manual suppression removed"),
        "{}",
        transcript(&cleared)
    );
    ok(
        &kc,
        &[
            "plan",
            "status",
            "--instance",
            name,
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    let status = status_showing(&kc, name, "Ready: True (ResourcesReady)");
    assert!(status.contains("[COMPLETE]"), "{status}");
    let applied = instance(&sandbox, name)
        .await
        .status
        .unwrap()
        .applied_parameters;
    assert_eq!(
        applied.unwrap().get("REPLICAS").map(String::as_str),
        Some("4")
    );
    let nothing = ok(&kc, &["suppress", "clear", "--instance", name]);
    assert_eq!(
        stdout(&nothing),
        "instance default/first-operator is not suppressed; nothing to clear\n"
    );
    manager.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_canary_hints_plan_status_prints_run_as_printed_to_the_end() {
    let (_sandbox, manager, kc) = dev_server().await;
    ok(
        &kc,
        &["install", &operator("canary-web"), "--instance", "site"],
    );
    for approval in 1..=2 {
        let status = status_showing(
            &kc,
            "site",
            &format!("waits for canary approval {approval} of 2"),
        );
        let approve = hint(&status, "kubectl kudo plan continue");
        assert_eq!(
            approve.join(" "),
            "plan continue --instance site --plan deploy --phase rollout -n default"
        );
        run_hint(&kc, &approve);
    }
    ok(
        &kc,
        &[
            "plan",
            "status",
            "--instance",
            "site",
            "--wait",
            "--wait-timeout",
            "60s",
        ],
    );
    manager.stop().await;
}
