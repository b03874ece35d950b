//! Why an upgrade ran, in `status.history`: the channel move the manager
//! recorded, or the OperatorVersions left and reached.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::upgrades::{UpgradePolicy, UpgradeStatus};
use support::*;

fn zk(version: &str) -> kudo_api::OperatorVersion {
    ov(
        version,
        vec![("deploy", simple_plan(1)), ("upgrade", simple_plan(1))],
        vec![],
    )
}

#[test]
fn an_upgrade_by_hand_records_the_operator_versions_it_moves_between() {
    let mut sim = Sim::new(instance("zk-1.0"), zk("zk-1.0"));
    sim.all_done();
    sim.ov = zk("zk-1.1");
    sim.edit(|s| s.operator_version.name = Some("zk-1.1".into()));
    sim.all_done();
    let run = sim.status().history.last().unwrap();
    assert_eq!(run.trigger, "upgrade");
    assert_eq!(
        run.reason.as_deref(),
        Some("operatorVersion zk-1.0 → zk-1.1")
    );
    assert_eq!(sim.status().history[0].reason, None, "deploy has none");
}

#[test]
fn a_channel_move_records_the_move_the_manager_started() {
    let mut sim = Sim::new(instance("zk-1.0"), zk("zk-1.0"));
    sim.edit(|s| {
        s.upgrades = Some(UpgradePolicy {
            repository: "community".into(),
            ..Default::default()
        })
    });
    sim.all_done();
    // What the manager does for a channel move: the Instance it decides
    // for names the new OperatorVersion, and status.upgrades the move.
    sim.ov = zk("zk-1.1");
    sim.inst.spec.operator_version.name = Some("zk-1.1".into());
    let mut st = sim.inst.status.clone().unwrap();
    st.upgrades = Some(UpgradeStatus {
        operator_version: Some("zk-1.1".into()),
        last_change: Some("channel stable: 1.0 → 1.1".into()),
        ..Default::default()
    });
    sim.inst.status = Some(st);
    sim.all_done();
    let run = sim.status().history.last().unwrap();
    assert_eq!(run.trigger, "upgrade");
    assert_eq!(run.reason.as_deref(), Some("channel stable: 1.0 → 1.1"));
}
