use super::*;
use kudo_api::{MachineMode, NodeMaintenance};
use pretty_assertions::assert_eq;

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn now() -> Timestamp {
    ts("2026-11-27T12:00:00.250Z")
}

fn name(n: &str) -> Machine {
    Machine {
        name: Some(n.into()),
        ..Machine::default()
    }
}

fn host(h: &str) -> Machine {
    Machine {
        hostname: Some(h.into()),
        ..Machine::default()
    }
}

fn ip(a: &str) -> Machine {
    Machine {
        ip: Some(a.into()),
        ..Machine::default()
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn window(nodes: Vec<Machine>, start: &str, length: &str) -> NodeWindow {
    NodeWindow {
        nodes,
        unavailability: Some(Unavailability {
            start: Time(ts(start)),
            duration: length.into(),
        }),
    }
}

/// n1 and n2 in one window, host-a (10.0.0.7) in another; n2 is Down.
fn scheduled() -> Spec {
    Spec {
        windows: vec![
            window(vec![name("n1"), name("n2")], "2026-11-28T02:00:00Z", "1h"),
            window(
                vec![Machine {
                    hostname: Some("Host-A".into()),
                    ip: Some("10.0.0.7".into()),
                    ..Machine::default()
                }],
                "2026-11-29T02:00:00Z",
                "2h",
            ),
        ],
        down: vec![name("n2")],
    }
}

#[test]
fn node_arguments_that_look_like_ips_are_ips_and_others_names() {
    assert_eq!(parse_node("10.0.0.5"), ip("10.0.0.5"));
    assert_eq!(parse_node("fe80::1"), ip("fe80::1"));
    assert_eq!(
        parse_node("10.0.0.300"),
        ip("10.0.0.300"),
        "malformed, still an IP"
    );
    assert_eq!(parse_node(" node-1 "), name("node-1"));
    assert_eq!(parse_node("n1.example.com"), name("n1.example.com"));
    assert_eq!(
        machines(&args(&["n1", "10.0.0.5"]), &args(&["Host-B"])),
        vec![name("n1"), ip("10.0.0.5"), host("Host-B")]
    );
}

#[test]
fn start_is_a_time_now_or_a_duration_from_now_in_whole_seconds() {
    assert_eq!(
        parse_start("2026-11-28T02:00:00Z", now()).unwrap(),
        ts("2026-11-28T02:00:00Z")
    );
    assert_eq!(
        parse_start("now", now()).unwrap(),
        ts("2026-11-27T12:00:00Z")
    );
    assert_eq!(
        parse_start("2h", now()).unwrap(),
        ts("2026-11-27T14:00:00Z")
    );
    let err = parse_start("tomorrow", now()).unwrap_err();
    assert!(err.contains("neither an RFC 3339 time"), "{err}");
}

#[test]
fn a_window_is_added_to_an_empty_or_existing_schedule() {
    let start = ts("2026-11-28T02:00:00Z");
    let first = add_window(&Spec::default(), vec![name("n1")], start, "1h", now()).unwrap();
    assert_eq!(
        first.windows,
        vec![window(vec![name("n1")], "2026-11-28T02:00:00Z", "1h")]
    );
    let second = add_window(&first, vec![ip("10.0.0.5")], start, " 90m ", now()).unwrap();
    assert_eq!(second.windows.len(), 2);
    assert_eq!(
        second.windows[1],
        window(vec![ip("10.0.0.5")], "2026-11-28T02:00:00Z", "90m")
    );
}

#[test]
fn an_invalid_window_is_refused_with_the_webhooks_message() {
    let start = ts("2026-11-28T02:00:00Z");
    let twice = add_window(
        &Spec::default(),
        machines(&args(&["n1", "n1"]), &[]),
        start,
        "1h",
        now(),
    )
    .unwrap_err();
    assert_eq!(
        twice,
        validate(&Spec {
            windows: vec![window(
                vec![name("n1"), name("n1")],
                "2026-11-28T02:00:00Z",
                "1h"
            )],
            down: vec![],
        })
        .unwrap_err()
    );
    assert!(
        twice.contains("spec.windows[0].nodes[1]") && twice.contains("n1"),
        "{twice}"
    );

    let bad_ip = add_window(
        &scheduled(),
        vec![parse_node("10.0.0.300")],
        start,
        "1h",
        now(),
    )
    .unwrap_err();
    assert!(
        bad_ip.contains("spec.windows[2].nodes[0]") && bad_ip.contains("10.0.0.300"),
        "{bad_ip}"
    );
    let again = add_window(&scheduled(), vec![name("n2")], start, "1h", now()).unwrap_err();
    assert!(
        again.contains("already scheduled in spec.windows[0]"),
        "{again}"
    );
    let length = add_window(&Spec::default(), vec![name("n1")], start, "soon", now()).unwrap_err();
    assert!(
        length.contains("spec.windows[0].unavailability"),
        "{length}"
    );
}

#[test]
fn a_window_that_has_ended_is_refused() {
    let err = add_window(
        &Spec::default(),
        vec![name("n1")],
        ts("2026-11-27T10:00:00Z"),
        "1h",
        now(),
    )
    .unwrap_err();
    assert!(err.contains("has ended already"), "{err}");
    // One that has started but not ended is fine.
    add_window(
        &Spec::default(),
        vec![name("n1")],
        ts("2026-11-27T11:30:00Z"),
        "1h",
        now(),
    )
    .unwrap();
}

#[test]
fn nodes_are_found_as_scheduled_by_resolved_node_name_or_by_hostname() {
    let spec = scheduled();
    let host_a = spec.windows[1].nodes[0].clone();
    assert_eq!(resolve("n1", &spec, None).unwrap(), name("n1"));
    assert_eq!(resolve("host-a", &spec, None).unwrap(), host_a);
    assert_eq!(resolve("10.0.0.7", &spec, None).unwrap(), host_a);
    let status = Status {
        nodes: vec![NodeMaintenance {
            machine: host_a.clone(),
            node: Some("worker-7".into()),
            mode: MachineMode::Draining,
            ..NodeMaintenance::default()
        }],
        ..Status::default()
    };
    assert_eq!(resolve("worker-7", &spec, Some(&status)).unwrap(), host_a);
    assert_eq!(
        resolve("n9", &spec, None).unwrap(),
        name("n9"),
        "left for the check"
    );
}

#[test]
fn a_node_matching_several_entries_is_refused() {
    let spec = Spec {
        windows: vec![window(
            vec![name("n1"), ip("10.0.0.1")],
            "2026-11-28T02:00:00Z",
            "1h",
        )],
        down: vec![],
    };
    let mut ambiguous = spec.clone();
    ambiguous.windows[0].nodes = vec![
        host("x"),
        Machine {
            hostname: Some("X".into()),
            ip: Some("10.0.0.1".into()),
            ..Machine::default()
        },
    ];
    assert!(resolve("n1", &spec, None).is_ok());
    let err = resolve("X", &ambiguous, None).unwrap_err();
    assert!(err.contains("several scheduled entries"), "{err}");
}

#[test]
fn down_adds_scheduled_nodes_and_refuses_others() {
    let edit = down(&scheduled(), None, &args(&["n1", "HOST-A", "n2"])).unwrap();
    assert_eq!(
        edit.spec.down,
        vec![
            name("n2"),
            name("n1"),
            scheduled().windows[1].nodes[0].clone()
        ]
    );
    assert_eq!(edit.already, vec![name("n2")]);
    assert_eq!(edit.spec.windows, scheduled().windows, "windows unchanged");

    let err = down(&scheduled(), None, &args(&["n9"])).unwrap_err();
    assert!(
        err.contains("down n9: the node is not in the maintenance schedule"),
        "{err}"
    );
    let err = down(&scheduled(), None, &args(&["host-a", "10.0.0.7"])).unwrap_err();
    assert!(err.contains("named twice"), "{err}");
    assert!(down(&scheduled(), None, &[]).is_err());
}

#[test]
fn up_takes_down_nodes_out_of_the_schedule_and_drops_emptied_windows() {
    let (spec, nodes) = up(&scheduled(), None, &args(&["n2"])).unwrap();
    assert_eq!(nodes, vec![name("n2")]);
    assert!(spec.down.is_empty());
    assert_eq!(spec.windows[0].nodes, vec![name("n1")]);

    let mut both = down(&scheduled(), None, &args(&["host-a"])).unwrap().spec;
    both = up(&both, None, &args(&["10.0.0.7"])).unwrap().0;
    assert_eq!(both.windows.len(), 1, "the emptied window is gone");
    assert_eq!(both.down, vec![name("n2")]);

    let err = up(&scheduled(), None, &args(&["n1"])).unwrap_err();
    assert!(err.contains("up n1: the node is not Down"), "{err}");
    let err = up(&scheduled(), None, &args(&["n9"])).unwrap_err();
    assert!(err.contains("not in the maintenance schedule"), "{err}");
}

#[test]
fn cancel_unschedules_every_node_that_is_not_down() {
    let edit = cancel(&scheduled(), None, &[]).unwrap();
    assert_eq!(
        edit.removed,
        vec![name("n1"), scheduled().windows[1].nodes[0].clone()]
    );
    assert_eq!(edit.kept_down, vec![name("n2")]);
    assert_eq!(
        edit.spec,
        Spec {
            windows: vec![window(vec![name("n2")], "2026-11-28T02:00:00Z", "1h")],
            down: vec![name("n2")],
        }
    );
    let empty = cancel(&edit.spec, None, &[]).unwrap();
    assert!(empty.removed.is_empty());
    assert_eq!(empty.spec, edit.spec);
}

#[test]
fn cancel_of_named_nodes_refuses_down_ones() {
    let edit = cancel(&scheduled(), None, &args(&["host-a"])).unwrap();
    assert_eq!(edit.spec.windows.len(), 1);
    assert!(edit.kept_down.is_empty());
    let err = cancel(&scheduled(), None, &args(&["n2"])).unwrap_err();
    assert!(err.contains("cancel n2: the node is Down"), "{err}");
}
