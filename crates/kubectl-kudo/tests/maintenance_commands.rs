//! `maintenance schedule|status|down|up|cancel` and the maintenance line of
//! `plan status` through the binary against kudo-sandbox, without a
//! manager: the test reads the spec the CLI writes and writes the status a
//! manager would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{fails_text as fails, ok_text as ok, run_with, stdout, transcript};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kudo_api::{Instance, InstanceSpec, Machine, MaintenanceSchedule};
use kudo_sandbox::Sandbox;
use serde_json::json;

const START: &str = "2030-11-28T02:00:00Z";

fn name(n: &str) -> Machine {
    Machine {
        name: Some(n.into()),
        ..Machine::default()
    }
}

fn ip(a: &str) -> Machine {
    Machine {
        ip: Some(a.into()),
        ..Machine::default()
    }
}

fn schedule_args<'a>(nodes: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["maintenance", "schedule"];
    args.extend_from_slice(nodes);
    args.extend(["--start", START, "--duration", "1h"]);
    args
}

async fn read(api: &Api<MaintenanceSchedule>) -> MaintenanceSchedule {
    api.get("default").await.unwrap()
}

/// Writes `status` as the manager would.
async fn write_status(api: &Api<MaintenanceSchedule>, status: serde_json::Value) {
    api.patch_status(
        "default",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_down_up_cancel_edit_the_spec_and_status_renders_it() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc: PathBuf = sandbox.kubeconfig_path().to_path_buf();
    let kc = kc.as_path();
    ok(kc, &["init", "--crd-only"]);
    let api: Api<MaintenanceSchedule> = Api::all(sandbox.client().unwrap());

    insta::assert_snapshot!("status-none", ok(kc, &["maintenance", "status"]));
    fails(kc, &["maintenance", "status", "-o", "yaml"], 1);
    // Nothing to cancel creates nothing.
    ok(kc, &["maintenance", "cancel"]);
    assert!(api.get_opt("default").await.unwrap().is_none());

    // schedule: one window, created with the schedule.
    insta::assert_snapshot!("schedule", ok(kc, &schedule_args(&["n1", "10.0.0.5"])));
    let first = read(&api).await;
    assert_eq!(first.spec.windows.len(), 1);
    assert_eq!(
        first.spec.windows[0].nodes,
        vec![name("n1"), ip("10.0.0.5")]
    );
    let unavailability = first.spec.windows[0].unavailability.clone().unwrap();
    assert_eq!(unavailability.start.0.to_string(), START);
    assert_eq!(unavailability.duration, "1h");

    // Invalid schedules are refused with the webhook's message; nothing is written.
    let rv = first.metadata.resource_version.clone();
    let twice = fails(kc, &schedule_args(&["n2", "n2"]), 2);
    assert!(
        twice.contains("spec.windows[1].nodes[1]: node n2 is already scheduled in spec.windows[1]"),
        "{twice}"
    );
    let bad_ip = fails(kc, &schedule_args(&["10.0.0.300"]), 2);
    assert!(
        bad_ip.contains("spec.windows[1].nodes[0]: \"10.0.0.300\" is not a well-formed IP"),
        "{bad_ip}"
    );
    let again = fails(kc, &schedule_args(&["n1"]), 2);
    assert!(
        again.contains("already scheduled in spec.windows[0]"),
        "{again}"
    );
    insta::assert_snapshot!("schedule-node-twice", twice);
    assert_eq!(read(&api).await.metadata.resource_version, rv);

    // down: scheduled nodes only.
    let unscheduled = fails(kc, &["maintenance", "down", "n9"], 2);
    assert!(
        unscheduled.contains("down n9: the node is not in the maintenance schedule"),
        "{unscheduled}"
    );
    assert_eq!(read(&api).await.metadata.resource_version, rv);
    insta::assert_snapshot!("down", ok(kc, &["maintenance", "down", "n1"]));
    assert_eq!(read(&api).await.spec.down, vec![name("n1")]);
    let not_down = fails(kc, &["maintenance", "up", "10.0.0.5"], 2);
    assert!(
        not_down.contains("up 10.0.0.5: the node is not Down"),
        "{not_down}"
    );

    // cancel: every node that is not Down leaves; n1 stays.
    ok(
        kc,
        &[
            "maintenance",
            "schedule",
            "n3",
            "--hostname",
            "Host-C",
            "--start",
            START,
            "--duration",
            "2h",
        ],
    );
    insta::assert_snapshot!("cancel", ok(kc, &["maintenance", "cancel"]));
    let cancelled = read(&api).await;
    assert_eq!(cancelled.spec.windows.len(), 1);
    assert_eq!(cancelled.spec.windows[0].nodes, vec![name("n1")]);
    assert_eq!(cancelled.spec.down, vec![name("n1")]);

    // status renders what the manager reports.
    ok(kc, &schedule_args(&["n2"]));
    write_status(
        &api,
        json!({
            "nodes": [
                {"machine": {"name": "n1"}, "node": "n1", "mode": "Down", "since": "2030-11-28T01:00:00Z",
                 "start": START, "end": "2030-11-28T03:00:00Z", "podsLeft": 1,
                 "blocked": [{"pod": "default/zk-zookeeper-0", "budget": "default/zk-pdb",
                              "message": "Cannot evict pod as it would violate the pod's disruption budget."}],
                 "message": "1 pod left"},
                {"machine": {"name": "n2"}, "node": "n2", "mode": "Draining", "since": "2030-11-27T12:00:00Z",
                 "start": START, "end": "2030-11-28T03:00:00Z"}
            ],
            "instances": [
                {"namespace": "default", "name": "zk", "response": "Declined", "message": "quorum would be lost",
                 "pods": [{"pod": "zk-zookeeper-0", "node": "n1"}, {"pod": "zk-zookeeper-1", "node": "n2"}]},
                {"namespace": "default", "name": "web", "response": "NoResponse",
                 "message": "the operator has no maintenance plan",
                 "pods": [{"pod": "web-1", "node": "n2"}]}
            ],
            "nextWindow": START, "draining": 1, "down": 1,
            "message": "node n1: 1 pod left to evict"
        }),
    )
    .await;
    insta::assert_snapshot!("status", ok(kc, &["maintenance", "status"]));
    let json_out = stdout(&run_with(kc, &["maintenance", "status", "-o", "json"]));
    let value: serde_json::Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(value["metadata"]["name"], "default");
    assert_eq!(value["status"]["instances"][0]["response"], "Declined");

    // up: out of down and out of its window.
    insta::assert_snapshot!("up", ok(kc, &["maintenance", "up", "n1"]));
    let after = read(&api).await;
    assert!(after.spec.down.is_empty());
    assert_eq!(after.spec.windows.len(), 1);
    assert_eq!(after.spec.windows[0].nodes, vec![name("n2")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_wait_follows_the_drain_until_the_node_is_down_and_empty() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc: PathBuf = sandbox.kubeconfig_path().to_path_buf();
    ok(&kc, &["init", "--crd-only"]);
    let api: Api<MaintenanceSchedule> = Api::all(sandbox.client().unwrap());
    ok(&kc, &schedule_args(&["n1", "n2"]));

    let waiting = {
        let kc = kc.clone();
        tokio::task::spawn_blocking(move || {
            run_with(
                &kc,
                &[
                    "maintenance",
                    "down",
                    "n1",
                    "--wait",
                    "--wait-timeout",
                    "60s",
                ],
            )
        })
    };
    // The manager's part: Down with pods left and a blocking budget, then drained.
    let mut generation = None;
    for _ in 0..200 {
        let schedule = read(&api).await;
        if schedule.spec.down == vec![name("n1")] {
            generation = schedule.metadata.generation;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let generation = generation.expect("down wrote spec.down");
    let node = |left: u32, blocked: serde_json::Value| {
        json!({"observedGeneration": generation, "down": 1, "nodes": [
            {"machine": {"name": "n1"}, "node": "n1", "mode": "Down", "podsLeft": left, "blocked": blocked}
        ]})
    };
    write_status(
        &api,
        node(2, json!([{"pod": "default/a", "budget": "default/pdb"}])),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    write_status(&api, node(0, json!([]))).await;
    let output = waiting.await.unwrap();
    let text = transcript(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("n1: Down, 2 pods left, blocked: default/a by default/pdb"),
        "{text}"
    );
    assert!(text.contains("n1: Down, drained after"), "{text}");

    // A drain that does not finish in time says where it stands.
    let timed_out = fails(
        &kc,
        &[
            "maintenance",
            "down",
            "n2",
            "--wait",
            "--wait-timeout",
            "1s",
        ],
        1,
    );
    assert!(
        timed_out.contains("timed out after [n]s waiting for node n2 to drain"),
        "{timed_out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_status_shows_the_maintenance_an_instance_was_told_of() {
    let sandbox = Sandbox::start().await.unwrap();
    let kc: PathBuf = sandbox.kubeconfig_path().to_path_buf();
    ok(&kc, &["init", "--crd-only"]);
    let instances: Api<Instance> = Api::namespaced(sandbox.client().unwrap(), "default");
    let mut spec = InstanceSpec::default();
    spec.operator_version.name = Some("zk-1.0".into());
    instances
        .create(&PostParams::default(), &Instance::new("zk", spec))
        .await
        .unwrap();
    instances
        .patch_status(
            "zk",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "planStatus": {"deploy": {"name": "deploy", "status": "COMPLETE", "uid": "u1",
                                          "lastUpdatedTimestamp": "2030-11-27T10:00:00Z"}},
                "maintenance": {"nodes": ["n1"], "start": START, "end": "2030-11-28T03:00:00Z",
                                "response": "Declined", "message": "quorum would be lost"}
            }})),
        )
        .await
        .unwrap();
    let text = ok(&kc, &["plan", "status", "--instance", "zk"]);
    assert!(
        text.contains(
            "  - node n1 scheduled for maintenance 2030-11-28T02:00:00Z–2030-11-28T03:00:00Z, \
             answered Declined: quorum would be lost"
        ),
        "{text}"
    );
}
