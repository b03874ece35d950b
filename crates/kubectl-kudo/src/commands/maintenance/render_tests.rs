use super::*;
use kudo_api::{
    AffectedInstance, BlockedEviction, MaintenanceResponse, PodPlacement, Unavailability,
};
use pretty_assertions::assert_eq;

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn name(n: &str) -> Machine {
    Machine {
        name: Some(n.into()),
        ..Machine::default()
    }
}

fn schedule() -> MaintenanceSchedule {
    let host = Machine {
        hostname: Some("host-a".into()),
        ..Machine::default()
    };
    let mut schedule = MaintenanceSchedule::new(
        "default",
        Spec {
            windows: vec![
                NodeWindow {
                    nodes: vec![name("n1"), name("n2")],
                    unavailability: Some(Unavailability {
                        start: Time(ts("2026-11-28T02:00:00Z")),
                        duration: "1h".into(),
                    }),
                },
                NodeWindow {
                    nodes: vec![host.clone()],
                    unavailability: Some(Unavailability {
                        start: Time(ts("2026-11-28T23:00:00Z")),
                        duration: "2h".into(),
                    }),
                },
            ],
            down: vec![name("n1")],
        },
    );
    schedule.metadata.generation = Some(3);
    schedule.status = Some(Status {
        nodes: vec![
            NodeMaintenance {
                machine: name("n1"),
                node: Some("n1".into()),
                mode: MachineMode::Down,
                since: Some(Time(ts("2026-11-28T02:05:00Z"))),
                pods_left: Some(1),
                blocked: vec![BlockedEviction {
                    pod: "default/zk-zookeeper-0".into(),
                    budget: Some("default/zk-pdb".into()),
                    message: "Cannot evict pod as it would violate the pod's disruption budget."
                        .into(),
                }],
                message: "1 pod left".into(),
                ..NodeMaintenance::default()
            },
            NodeMaintenance {
                machine: host,
                node: Some("worker-7".into()),
                mode: MachineMode::Draining,
                since: Some(Time(ts("2026-11-27T12:00:00Z"))),
                ..NodeMaintenance::default()
            },
        ],
        instances: vec![AffectedInstance {
            namespace: "default".into(),
            name: "zk".into(),
            pods: vec![PodPlacement {
                pod: "zk-zookeeper-0".into(),
                node: "n1".into(),
            }],
            response: MaintenanceResponse::Declined,
            message: "quorum would be lost".into(),
        }],
        next_window: Some("2026-11-28T02:00:00Z".into()),
        draining: 1,
        down: 1,
        message: String::new(),
        observed_generation: Some(2),
    });
    schedule
}

#[test]
fn status_lists_nodes_blocked_evictions_instances_and_the_summary() {
    let expected = "\
NODE                MODE        SINCE                 WINDOW (UTC)                              PODS LEFT   BLOCKED   MESSAGE
n1                  Down        2026-11-28 02:05:00   2026-11-28 02:00:00–03:00:00              1           1         1 pod left
n2                  Scheduled   -                     2026-11-28 02:00:00–03:00:00              -           0
host-a → worker-7   Draining    2026-11-27 12:00:00   2026-11-28 23:00:00–2026-11-29 01:00:00   -           0

Blocked evictions (retried):
  - n1: pod default/zk-zookeeper-0 blocked by PodDisruptionBudget default/zk-pdb: Cannot evict pod as it would violate the pod's disruption budget.

Affected instances:
INSTANCE     ANSWER     PODS                   MESSAGE
default/zk   Declined   zk-zookeeper-0 on n1   quorum would be lost

Next window: 2026-11-28T02:00:00Z
Draining: 1, Down: 1
The manager has not acted on the latest change yet (generation 3, seen 2).
";
    assert_eq!(render(&schedule()), expected);
}

#[test]
fn status_of_an_empty_schedule_says_nothing_is_scheduled() {
    let empty = MaintenanceSchedule::new("default", Spec::default());
    assert_eq!(render(&empty), "No node is scheduled for maintenance.\n");
    let mut leaving = schedule();
    leaving.spec = Spec::default();
    let text = render(&leaving);
    assert!(text.contains("n1                  Down → Up"), "{text}");
    assert!(text.contains("leaving the schedule"), "{text}");
}

#[test]
fn drain_progress_is_done_when_each_node_is_down_with_no_pods_left() {
    let mut schedule = schedule();
    let (done, text) = drain_progress(&schedule, &[name("n1")], Some(2));
    assert!(!done);
    assert_eq!(
        text,
        "n1: Down, 1 pods left, blocked: default/zk-zookeeper-0 by default/zk-pdb"
    );
    let (done, text) = drain_progress(&schedule, &[name("n1")], Some(3));
    assert!(!done);
    assert!(text.starts_with("the manager has not acted"), "{text}");

    if let Some(status) = schedule.status.as_mut() {
        status.nodes[0].pods_left = Some(0);
        status.nodes[0].blocked.clear();
    }
    assert_eq!(
        drain_progress(&schedule, &[name("n1")], Some(2)),
        (true, "n1: Down, drained".to_string())
    );
    let (done, text) = drain_progress(&schedule, &[name("n1"), name("n2")], Some(2));
    assert!(!done);
    assert!(
        text.ends_with("n2: not yet reported by the manager"),
        "{text}"
    );
}
