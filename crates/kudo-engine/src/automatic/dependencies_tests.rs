use super::*;

fn req(operator: &str, versions: &str) -> Requirement {
    Requirement {
        operator: operator.into(),
        versions: Some(versions.into()),
    }
}

const NONE: &BTreeMap<String, String> = &BTreeMap::new();

fn judge(mv: &Move<'_>, peers: &[Peer<'_>]) -> Gate {
    check(mv, peers, &kudo_repo::requirements::satisfies)
}

fn held(gate: Gate) -> String {
    match gate {
        Gate::Hold { why, .. } => why,
        Gate::Go => panic!("expected a hold"),
    }
}

fn zk<'a>(name: &'a str, version: &'a str) -> Peer<'a> {
    Peer {
        instance: name,
        operator: Some("zookeeper"),
        version: Some(version),
        moving_to: None,
        requires: &[],
        names: NONE,
    }
}

fn kafka_to<'a>(to: &'a str, requires: &'a [Requirement]) -> Move<'a> {
    Move {
        instance: "kafka",
        operator: "kafka",
        to,
        requires,
        names: NONE,
    }
}

/// kafka, running 1.3.0 and needing `requires`.
fn kafka_on_1_3(requires: &[Requirement]) -> Peer<'_> {
    Peer {
        instance: "kafka",
        operator: Some("kafka"),
        version: Some("1.3.0"),
        moving_to: None,
        requires,
        names: NONE,
    }
}

/// zk moving to `to`, needing nothing.
fn zk_to(to: &str) -> Move<'_> {
    Move {
        instance: "zk",
        operator: "zookeeper",
        to,
        requires: &[],
        names: NONE,
    }
}

#[test]
fn a_dependent_moves_when_its_dependency_runs_a_version_in_range() {
    let needs = [req("zookeeper", ">=3.5 <4")];
    assert_eq!(
        judge(&kafka_to("2.0.0", &needs), &[zk("zk", "3.5.1")]),
        Gate::Go
    );
}

#[test]
fn a_dependent_needing_a_newer_dependency_is_held_naming_both_and_the_range() {
    let needs = [req("zookeeper", ">=3.6 <4")];
    assert_eq!(
        held(judge(&kafka_to("2.0.0", &needs), &[zk("zk", "3.5.1")])),
        "kafka 2.0.0 needs zookeeper >=3.6 <4; Instance zk runs 3.5.1"
    );
}

#[test]
fn a_dependency_with_no_instance_or_several_unnamed_holds_the_move() {
    let needs = [req("zookeeper", ">=3.5")];
    assert_eq!(
        held(judge(&kafka_to("2.0.0", &needs), &[])),
        "kafka 2.0.0 needs zookeeper >=3.5; no Instance of zookeeper runs in this namespace"
    );
    let two = [zk("zk-a", "3.5.1"), zk("zk-b", "3.6.0")];
    let why = held(judge(&kafka_to("2.0.0", &needs), &two));
    assert!(
        why.contains("several Instances of zookeeper run in this namespace (zk-a, zk-b)")
            && why.contains("spec.upgrades.dependencies.zookeeper"),
        "{why}"
    );
}

#[test]
fn the_instance_named_in_spec_is_the_one_judged() {
    let needs = [req("zookeeper", ">=3.6")];
    let names = BTreeMap::from([("zookeeper".to_string(), "zk-b".to_string())]);
    let mv = Move {
        names: &names,
        ..kafka_to("2.0.0", &needs)
    };
    let two = [zk("zk-a", "3.5.1"), zk("zk-b", "3.6.0")];
    assert_eq!(judge(&mv, &two), Gate::Go);
    let gone = BTreeMap::from([("zookeeper".to_string(), "zk-c".to_string())]);
    let why = held(judge(&Move { names: &gone, ..mv }, &two));
    assert!(why.contains("Instance zk-c named for it"), "{why}");
}

#[test]
fn a_dependency_move_that_leaves_a_dependents_range_is_held() {
    let kafka_needs = [req("zookeeper", ">=3.5 <4")];
    let kafka = kafka_on_1_3(&kafka_needs);
    assert_eq!(
        held(judge(&zk_to("4.0.0"), &[kafka])),
        "zookeeper 4.0.0 would break Instance kafka, which needs zookeeper >=3.5 <4"
    );
    assert_eq!(judge(&zk_to("3.9.0"), &[kafka]), Gate::Go);
}

#[test]
fn a_dependent_that_relies_on_another_instance_does_not_hold_the_move() {
    let kafka_needs = [req("zookeeper", "<4")];
    let names = BTreeMap::from([("zookeeper".to_string(), "zk-other".to_string())]);
    let kafka = Peer {
        names: &names,
        ..kafka_on_1_3(&kafka_needs)
    };
    let mv = zk_to("4.0.0");
    assert_eq!(judge(&mv, &[kafka, zk("zk-other", "3.5.0")]), Gate::Go);
    // Unnamed, with two Instances of zookeeper: kafka's requirement
    // resolves to neither, so neither is held for it.
    let unnamed = Peer {
        names: NONE,
        ..kafka
    };
    assert_eq!(judge(&mv, &[unnamed, zk("zk-other", "3.5.0")]), Gate::Go);
}

#[test]
fn a_dependency_counts_as_upgraded_only_once_its_upgrade_completed() {
    let needs = [req("zookeeper", ">=3.6 <4")];
    let upgrading = Peer {
        moving_to: Some("3.6.0"),
        ..zk("zk", "3.5.1")
    };
    assert_eq!(
        held(judge(&kafka_to("2.0.0", &needs), &[upgrading])),
        "kafka 2.0.0 needs zookeeper >=3.6 <4; Instance zk runs 3.5.1 \
         (its move to 3.6.0 has not completed)"
    );
    // In range now, but moving out of it.
    let leaving = Peer {
        moving_to: Some("4.0.0"),
        ..zk("zk", "3.6.0")
    };
    assert_eq!(
        held(judge(&kafka_to("2.0.0", &needs), &[leaving])),
        "kafka 2.0.0 needs zookeeper >=3.6 <4; Instance zk is moving to 4.0.0"
    );
    let never_completed = Peer {
        version: None,
        moving_to: Some("3.6.0"),
        ..zk("zk", "")
    };
    assert_eq!(
        held(judge(&kafka_to("2.0.0", &needs), &[never_completed])),
        "kafka 2.0.0 needs zookeeper >=3.6 <4; Instance zk has not completed a plan on a \
         known version (its move to 3.6.0 has not completed)"
    );
    let within = Peer {
        moving_to: Some("3.7.0"),
        ..zk("zk", "3.6.0")
    };
    assert_eq!(judge(&kafka_to("2.0.0", &needs), &[within]), Gate::Go);
}

#[test]
fn a_dependent_moving_between_versions_holds_a_move_that_breaks_either() {
    // kafka completed 1.3 (zookeeper >=3.5 <4) and moves to 2.0 (>=3.6 <4).
    let both = [req("zookeeper", ">=3.5 <4"), req("zookeeper", ">=3.6 <4")];
    let kafka = Peer {
        moving_to: Some("2.0.0"),
        ..kafka_on_1_3(&both)
    };
    assert_eq!(
        held(judge(&zk_to("3.5.9"), &[kafka])),
        "zookeeper 3.5.9 would break Instance kafka, which needs zookeeper >=3.6 <4"
    );
    assert_eq!(judge(&zk_to("3.7.0"), &[kafka]), Gate::Go);
}

#[test]
fn the_versions_counted_are_the_last_completed_and_the_one_started_since() {
    use kudo_api::{AppliedConfig, InstanceStatus};
    let status = |applied: Option<&str>, completed: Option<&str>| InstanceStatus {
        applied_operator_version: applied.map(Into::into),
        last_successful: completed.map(|c| AppliedConfig {
            operator_version: c.into(),
            ..AppliedConfig::default()
        }),
        ..InstanceStatus::default()
    };
    assert_eq!(counted_versions(None), (None, None));
    let settled = status(Some("zk-3.6"), Some("zk-3.6"));
    assert_eq!(counted_versions(Some(&settled)), (Some("zk-3.6"), None));
    let upgrading = status(Some("zk-3.6"), Some("zk-3.5"));
    assert_eq!(
        counted_versions(Some(&upgrading)),
        (Some("zk-3.5"), Some("zk-3.6"))
    );
    let first_deploy = status(Some("zk-3.5"), None);
    assert_eq!(
        counted_versions(Some(&first_deploy)),
        (None, Some("zk-3.5"))
    );
}

#[test]
fn a_malformed_range_holds_with_the_error() {
    let needs = [req("zookeeper", ">=three")];
    let why = held(judge(&kafka_to("2.0.0", &needs), &[zk("zk", "3.5.1")]));
    assert!(
        why.starts_with("kafka 2.0.0 needs zookeeper >=three: "),
        "{why}"
    );
}

#[test]
fn an_operator_version_listing_more_requirements_than_a_package_may_is_not_counted() {
    let spec = |requirements: usize| OperatorVersionSpec {
        version: Some("1.3.0".into()),
        dependencies: (0..requirements)
            .map(|i| req(&format!("op{i}"), ">=1"))
            .collect(),
        ..OperatorVersionSpec::default()
    };
    let (fits, edited) = (spec(MAX_REQUIREMENTS), spec(MAX_REQUIREMENTS + 1));
    let counted = Counted::new(Some(&fits), None);
    assert_eq!(counted.peer("kafka", NONE).version, Some("1.3.0"));
    assert_eq!(counted.peer("kafka", NONE).requires.len(), MAX_REQUIREMENTS);
    // Edited by hand beyond what any package declares: as if not found,
    // so a move that needs it waits, and its list is never walked.
    let counted = Counted::new(Some(&edited), Some(&fits));
    let peer = counted.peer("kafka", NONE);
    assert_eq!((peer.version, peer.moving_to), (None, Some("1.3.0")));
    assert_eq!(peer.requires.len(), MAX_REQUIREMENTS);
}
