//! Node maintenance: the schedule's validation (one test per Mesos rule),
//! the modes and what they change on a Node, draining, and how an Instance
//! is told and answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use kudo_api::k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, NodeStatus, Pod};
use kudo_api::maintenance::{CORDONED_ANNOTATION, MAINTENANCE_TAINT, WINDOW_ANNOTATION};
use kudo_api::{
    BlockerKind, ExecutionStatus as S, Machine, MachineMode, MaintenanceResponse,
    MaintenanceScheduleSpec, NodeWindow, Suppression, Unavailability,
};
use kudo_engine::TaskOutcome;
use kudo_engine::maintenance::drain::{Disposition, blocking_budget, disposition};
use kudo_engine::maintenance::nodes::{node_change, targets};
use kudo_engine::maintenance::{Notice, validate, validate_name, validate_transition};
use support::*;

fn named(name: &str) -> Machine {
    Machine {
        name: Some(name.into()),
        ..Default::default()
    }
}

fn window(nodes: Vec<Machine>, start: &str, duration: &str) -> NodeWindow {
    NodeWindow {
        nodes,
        unavailability: Some(Unavailability {
            start: time(ts(start)),
            duration: duration.into(),
        }),
    }
}

fn schedule(windows: Vec<NodeWindow>, down: Vec<Machine>) -> MaintenanceScheduleSpec {
    MaintenanceScheduleSpec { windows, down }
}

fn refused(spec: &MaintenanceScheduleSpec) -> String {
    validate(spec).expect_err("the schedule should be refused")
}

// ----- validation, one test per Mesos rule -----

#[test]
fn a_window_needs_at_least_one_node() {
    let spec = schedule(vec![window(vec![], "2026-11-28T02:00:00Z", "1h")], vec![]);
    assert!(refused(&spec).contains("spec.windows[0] has no nodes"));
}

#[test]
fn a_window_needs_an_unavailability_with_a_positive_duration() {
    let mut w = window(vec![named("n1")], "2026-11-28T02:00:00Z", "1h");
    w.unavailability = None;
    assert!(refused(&schedule(vec![w], vec![])).contains("spec.windows[0] has no unavailability"));
    for bad in ["soon", "0s", "-1h", ""] {
        let w = window(vec![named("n1")], "2026-11-28T02:00:00Z", bad);
        let message = refused(&schedule(vec![w], vec![]));
        assert!(
            message.contains("spec.windows[0].unavailability"),
            "{bad}: {message}"
        );
    }
    for good in ["1h", "90m", "1h30m", "45s"] {
        let w = window(vec![named("n1")], "2026-11-28T02:00:00Z", good);
        validate(&schedule(vec![w], vec![])).unwrap();
    }
}

#[test]
fn a_node_appears_once_in_the_whole_schedule_hostnames_compared_without_case() {
    let host = |h: &str| Machine {
        hostname: Some(h.into()),
        ..Default::default()
    };
    let spec = schedule(
        vec![
            window(
                vec![named("n1"), host("Worker-2")],
                "2026-11-28T02:00:00Z",
                "1h",
            ),
            window(vec![host("worker-2")], "2026-11-29T02:00:00Z", "1h"),
        ],
        vec![],
    );
    let message = refused(&spec);
    assert!(
        message.contains("spec.windows[1].nodes[0]") && message.contains("spec.windows[0]"),
        "{message}"
    );
    let twice = schedule(
        vec![window(
            vec![named("n1"), named("n1")],
            "2026-11-28T02:00:00Z",
            "1h",
        )],
        vec![],
    );
    assert!(refused(&twice).contains("node n1 is already scheduled"));
}

#[test]
fn a_node_has_a_name_or_a_hostname_or_a_well_formed_ip() {
    let nothing = schedule(
        vec![window(
            vec![Machine::default()],
            "2026-11-28T02:00:00Z",
            "1h",
        )],
        vec![],
    );
    assert!(refused(&nothing).contains("spec.windows[0].nodes[0]: a node needs a name"));
    let bad_ip = Machine {
        ip: Some("10.0.0.300".into()),
        ..Default::default()
    };
    let message = refused(&schedule(
        vec![window(vec![bad_ip], "2026-11-28T02:00:00Z", "1h")],
        vec![],
    ));
    assert!(message.contains("not a well-formed IP"), "{message}");
    let ip_only = Machine {
        ip: Some("fd00::1".into()),
        ..Default::default()
    };
    validate(&schedule(
        vec![window(vec![ip_only], "2026-11-28T02:00:00Z", "1h")],
        vec![],
    ))
    .unwrap();
}

#[test]
fn a_down_node_stays_in_the_schedule() {
    let spec = schedule(
        vec![window(vec![named("n1")], "2026-11-28T02:00:00Z", "1h")],
        vec![named("n2")],
    );
    let message = refused(&spec);
    assert!(
        message.contains("spec.down[0]") && message.contains("stays in the schedule"),
        "{message}"
    );
    let fine = schedule(
        vec![window(vec![named("n1")], "2026-11-28T02:00:00Z", "1h")],
        vec![named("n1")],
    );
    validate(&fine).unwrap();
}

#[test]
fn an_unregistered_node_may_be_scheduled_and_an_empty_schedule_is_valid() {
    validate(&schedule(
        vec![window(
            vec![named("not-yet-there")],
            "2026-11-28T02:00:00Z",
            "1h",
        )],
        vec![],
    ))
    .unwrap();
    validate(&MaintenanceScheduleSpec::default()).unwrap();
}

#[test]
fn only_the_default_schedule_is_accepted() {
    validate_name("default").unwrap();
    assert!(
        validate_name("weekend")
            .unwrap_err()
            .contains("one schedule per cluster")
    );
}

#[test]
fn down_and_up_take_a_non_empty_list_of_scheduled_nodes_each_once() {
    let spec = schedule(
        vec![window(
            vec![named("n1"), named("n2")],
            "2026-11-28T02:00:00Z",
            "1h",
        )],
        vec![],
    );
    assert!(
        validate_transition(&spec, &[], "down")
            .unwrap_err()
            .contains("at least one")
    );
    assert!(
        validate_transition(&spec, &[named("n1"), named("n1")], "down")
            .unwrap_err()
            .contains("twice")
    );
    assert!(
        validate_transition(&spec, &[named("n3")], "down")
            .unwrap_err()
            .contains("not in the maintenance schedule")
    );
    validate_transition(&spec, &[named("n1"), named("n2")], "down").unwrap();
}

// ----- modes and what they change on a Node -----

fn node(name: &str, host: &str, ip: &str) -> Node {
    Node {
        metadata: kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress {
                    type_: "Hostname".into(),
                    address: host.into(),
                },
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: ip.into(),
                },
            ]),
            ..Default::default()
        }),
    }
}

/// `node` after `change` is applied as the manager applies it.
fn applied(mut n: Node, s: &MaintenanceScheduleSpec) -> Node {
    let nodes = vec![n.clone()];
    let target = targets(s, &nodes)
        .into_iter()
        .find(|t| t.node.as_deref() == n.metadata.name.as_deref());
    if let Some(change) = node_change(&n, target.as_ref()) {
        let annotations = n.metadata.annotations.get_or_insert_with(BTreeMap::new);
        for (k, v) in change.annotations {
            match v {
                Some(v) => annotations.insert(k, v),
                None => annotations.remove(&k),
            };
        }
        let spec = n.spec.get_or_insert_with(Default::default);
        spec.taints = Some(change.taints);
        if let Some(u) = change.unschedulable {
            spec.unschedulable = Some(u);
        }
    }
    n
}

fn our_taint(n: &Node) -> Option<(String, String)> {
    n.spec.as_ref()?.taints.as_ref()?.iter().find_map(|t| {
        (t.key == MAINTENANCE_TAINT)
            .then(|| (t.value.clone().unwrap_or_default(), t.effect.clone()))
    })
}

#[test]
fn nodes_resolve_by_name_or_by_hostname_and_ip_together() {
    let nodes = vec![
        node("n1", "host-1", "10.0.0.1"),
        node("n2", "host-2", "10.0.0.2"),
    ];
    let by = |m: Machine| {
        let s = schedule(vec![window(vec![m], "2026-11-28T02:00:00Z", "1h")], vec![]);
        targets(&s, &nodes)[0].node.clone()
    };
    assert_eq!(by(named("n2")), Some("n2".into()));
    let host = Machine {
        hostname: Some("HOST-1".into()),
        ..Default::default()
    };
    assert_eq!(by(host), Some("n1".into()));
    let both = Machine {
        hostname: Some("host-1".into()),
        ip: Some("10.0.0.2".into()),
        ..Default::default()
    };
    assert_eq!(by(both), None, "hostname and IP of different nodes");
    assert_eq!(by(named("gone")), None);
}

#[test]
fn a_scheduled_node_drains_then_goes_down_then_up_and_out() {
    let start = "2026-11-28T02:00:00Z";
    let draining = schedule(vec![window(vec![named("n1")], start, "1h")], vec![]);
    let down = schedule(
        vec![window(vec![named("n1")], start, "1h")],
        vec![named("n1")],
    );
    let up = MaintenanceScheduleSpec::default();

    let n = applied(node("n1", "h", "10.0.0.1"), &draining);
    assert_eq!(
        targets(&draining, std::slice::from_ref(&n))[0].mode,
        MachineMode::Draining
    );
    assert_eq!(
        our_taint(&n),
        Some(("draining".into(), "PreferNoSchedule".into()))
    );
    let annotations = n.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations[WINDOW_ANNOTATION],
        "2026-11-28T02:00:00Z/2026-11-28T03:00:00Z"
    );
    assert_ne!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    assert_eq!(
        node_change(&n, targets(&draining, std::slice::from_ref(&n)).first()),
        None
    );

    let n = applied(n, &down);
    assert_eq!(
        targets(&down, std::slice::from_ref(&n))[0].mode,
        MachineMode::Down
    );
    assert_eq!(our_taint(&n), Some(("down".into(), "NoSchedule".into())));
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    assert!(
        n.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(CORDONED_ANNOTATION)
    );

    let n = applied(n, &up);
    assert_eq!(our_taint(&n), None);
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(false));
    assert!(n.metadata.annotations.as_ref().unwrap().is_empty());
    assert_eq!(node_change(&n, None), None, "nothing left to undo");
}

#[test]
fn a_node_someone_else_cordoned_stays_cordoned_after_up_and_other_taints_stay() {
    let mut n = node("n1", "h", "10.0.0.1");
    let spec = n.spec.as_mut().unwrap();
    spec.unschedulable = Some(true);
    spec.taints = Some(vec![kudo_api::k8s_openapi::api::core::v1::Taint {
        key: "dedicated".into(),
        value: Some("db".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    }]);
    let down = schedule(
        vec![window(vec![named("n1")], "2026-11-28T02:00:00Z", "1h")],
        vec![named("n1")],
    );
    let n = applied(n, &down);
    assert!(
        !n.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(CORDONED_ANNOTATION)
    );
    let n = applied(n, &MaintenanceScheduleSpec::default());
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    let taints = n.spec.as_ref().unwrap().taints.clone().unwrap();
    assert_eq!(taints.len(), 1);
    assert_eq!(taints[0].key, "dedicated");
}

// ----- draining -----

fn pod(json: serde_json::Value) -> Pod {
    serde_json::from_value(json).unwrap()
}

#[test]
fn draining_evicts_all_but_daemonset_and_mirror_pods_and_waits_for_terminating_ones() {
    let plain = pod(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}}));
    let daemon = pod(
        serde_json::json!({"metadata": {"name": "b", "namespace": "ns",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
            "uid": "u", "controller": true}]}}),
    );
    let mirror = pod(
        serde_json::json!({"metadata": {"name": "c", "namespace": "kube-system",
        "annotations": {"kubernetes.io/config.mirror": "x"}}}),
    );
    let leaving = pod(
        serde_json::json!({"metadata": {"name": "d", "namespace": "ns",
        "deletionTimestamp": "2026-11-28T02:00:00Z"}}),
    );
    assert_eq!(disposition(&plain), Disposition::Evict);
    assert_eq!(disposition(&daemon), Disposition::Stays);
    assert_eq!(disposition(&mirror), Disposition::Stays);
    assert_eq!(disposition(&leaving), Disposition::Terminating);
    assert_eq!(
        kudo_engine::maintenance::drain::claimed_daemon_set(&daemon),
        Some(("ds", "u")),
        "the claim is checked before the pod is left"
    );
    assert_eq!(
        kudo_engine::maintenance::drain::claimed_daemon_set(&mirror),
        None
    );
}

#[test]
fn the_budget_in_the_way_is_the_one_whose_selector_matches_the_pod() {
    let p = pod(
        serde_json::json!({"metadata": {"name": "zk-0", "namespace": "ns",
        "labels": {"app": "zk", "tier": "db"}}}),
    );
    let budget = |name: &str, ns: &str, selector: serde_json::Value| {
        serde_json::from_value(
            serde_json::json!({"metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector}}),
        )
        .unwrap()
    };
    let pdbs = vec![
        budget(
            "other-ns",
            "elsewhere",
            serde_json::json!({"matchLabels": {"app": "zk"}}),
        ),
        budget(
            "web",
            "ns",
            serde_json::json!({"matchLabels": {"app": "web"}}),
        ),
        budget(
            "zk",
            "ns",
            serde_json::json!({"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["db"]}]}),
        ),
    ];
    assert_eq!(blocking_budget(&p, &pdbs), Some("ns/zk".into()));
    assert_eq!(blocking_budget(&p, &pdbs[..2]), None);
}

// ----- how an Instance is told and answers -----

fn notice() -> Notice {
    Notice {
        nodes: vec!["n1".into()],
        start: ts("2026-11-28T02:00:00Z"),
        end: ts("2026-11-28T03:00:00Z"),
    }
}

fn deployed(with_maintenance_plan: bool) -> Sim {
    let mut plans = vec![("deploy", simple_plan(1)), ("update", simple_plan(1))];
    if with_maintenance_plan {
        plans.push(("maintenance", simple_plan(1)));
    }
    let mut sim = Sim::new(instance("a"), ov("a", plans, vec![param("X", None)]));
    sim.all_done();
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    sim
}

fn told(sim: &Sim) -> kudo_api::InstanceMaintenance {
    sim.status()
        .maintenance
        .clone()
        .expect("status.maintenance")
}

#[test]
fn a_notice_runs_the_maintenance_plan_and_its_completion_is_accepted() {
    let mut sim = deployed(true);
    sim.maintenance = Some(notice());
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "preparing".into(),
    });
    assert_eq!(sim.plan_status("maintenance"), S::InProgress);
    assert_eq!(told(&sim).response, MaintenanceResponse::Pending);
    let trigger = sim
        .status()
        .active_plan
        .as_ref()
        .unwrap()
        .trigger
        .clone()
        .unwrap();
    assert!(
        trigger.contains("node n1 scheduled for maintenance"),
        "{trigger}"
    );
    sim.all_done();
    assert_eq!(sim.plan_status("maintenance"), S::Complete);
    assert_eq!(told(&sim).response, MaintenanceResponse::Accepted);
    assert_eq!(told(&sim).nodes, ["n1"]);
    // The same notice does not run the plan again.
    let runs = sim.ran.len();
    sim.all_done();
    assert_eq!(sim.ran.len(), runs);
}

#[test]
fn a_failing_maintenance_plan_is_declined_with_its_message_and_suppresses_nothing() {
    let mut sim = deployed(true);
    sim.maintenance = Some(notice());
    sim.reconcile(|_| TaskOutcome::Fatal {
        message: "leader cannot move: only one replica".into(),
    });
    assert_eq!(sim.plan_status("maintenance"), S::FatalError);
    let answer = told(&sim);
    assert_eq!(answer.response, MaintenanceResponse::Declined);
    assert!(
        answer.message.contains("only one replica"),
        "{}",
        answer.message
    );
    assert!(sim.status().auto_suppression.is_none());
}

#[test]
fn an_operator_without_a_maintenance_plan_gives_no_response() {
    let mut sim = deployed(false);
    sim.maintenance = Some(notice());
    sim.all_done();
    assert_eq!(told(&sim).response, MaintenanceResponse::NoResponse);
    assert!(!sim.status().plan_status.contains_key("maintenance"));
}

#[test]
fn the_maintenance_plan_waits_for_a_running_plan_and_for_a_suppression() {
    let mut sim = deployed(true);
    sim.set_params(&[("X", "1")]);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(sim.plan_status("update"), S::InProgress);
    sim.maintenance = Some(notice());
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert_eq!(sim.plan_status("maintenance"), S::NeverRun);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.message.contains("waits until plan \"update\""))
    );
    // The pass that ends update asks for another at once, which starts it.
    let d = sim.all_done();
    assert_eq!(d.requeue_after, Some(std::time::Duration::ZERO));
    sim.all_done();
    assert_eq!(sim.plan_status("maintenance"), S::Complete);

    let mut sim = deployed(true);
    sim.edit(|spec| {
        spec.suppressions.push(Suppression {
            reason: "freeze".into(),
            ..Default::default()
        })
    });
    sim.maintenance = Some(notice());
    sim.all_done();
    assert_eq!(sim.plan_status("maintenance"), S::NeverRun);
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.kind == BlockerKind::Suppressed)
    );
    assert_eq!(told(&sim).response, MaintenanceResponse::Pending);
}

#[test]
fn a_new_window_asks_again_and_no_notice_clears_the_answer() {
    let mut sim = deployed(true);
    sim.maintenance = Some(notice());
    sim.all_done();
    assert_eq!(told(&sim).response, MaintenanceResponse::Accepted);
    let mut later = notice();
    later.start = ts("2026-12-05T02:00:00Z");
    later.end = ts("2026-12-05T04:00:00Z");
    sim.maintenance = Some(later);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "again".into(),
    });
    assert_eq!(told(&sim).response, MaintenanceResponse::Pending);
    sim.all_done();
    assert_eq!(told(&sim).response, MaintenanceResponse::Accepted);
    sim.maintenance = None;
    sim.all_done();
    assert!(sim.status().maintenance.is_none());
}
