use super::*;
use kudo_api::{ActivePlan, ExecutionStatus, InstanceStatus, MaintenanceWindow, Suppression};

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn instance(policy: serde_json::Value) -> Instance {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
        "metadata": {"name": "kafka", "namespace": "team-a"},
        "spec": {"operatorVersion": {"name": "kafka-1.3.0"}, "upgrades": policy},
    }))
    .unwrap()
}

fn automatic() -> Instance {
    instance(serde_json::json!({"repository": "community"}))
}

const NOW: &str = "2026-11-28T10:00:00Z"; // a Saturday

fn offer(recall: bool) -> Offer<'static> {
    Offer {
        version: "1.4.0",
        recall,
    }
}

fn decide(inst: &Instance, recall: bool) -> Gate {
    gate(inst, &offer(recall), at(NOW), &EngineConfig::default())
}

#[test]
fn automatic_goes_when_nothing_holds() {
    assert_eq!(decide(&automatic(), false), Gate::Go);
}

#[test]
fn manual_waits_for_the_approval_of_that_version() {
    let manual = instance(serde_json::json!({"repository": "community", "approval": "Manual"}));
    assert_eq!(
        decide(&manual, false),
        Gate::held(
            "waiting for approval (kubectl kudo upgrade approve --instance kafka 1.4.0)",
            Lifts::Change
        )
    );
    let older = instance(
        serde_json::json!({"repository": "community", "approval": "Manual", "approved": "1.3.5"}),
    );
    assert!(
        matches!(decide(&older, false), Gate::Hold { .. }),
        "another version's approval"
    );
    let approved = instance(
        serde_json::json!({"repository": "community", "approval": "Manual", "approved": "1.4.0"}),
    );
    assert_eq!(decide(&approved, false), Gate::Go);
}

#[test]
fn a_running_plan_holds_the_move() {
    let mut inst = automatic();
    inst.status = Some(InstanceStatus {
        active_plan: Some(ActivePlan {
            name: "deploy".into(),
            status: ExecutionStatus::InProgress,
            ..serde_json::from_value(serde_json::json!({"name": "deploy", "status": "IN_PROGRESS"}))
                .unwrap()
        }),
        ..InstanceStatus::default()
    });
    assert_eq!(
        decide(&inst, true),
        Gate::held("waiting for plan deploy to finish", Lifts::PlanEnd)
    );
}

#[test]
fn a_manual_suppression_holds_even_a_recall() {
    let mut inst = automatic();
    inst.spec.suppressions = vec![Suppression {
        reason: "change freeze".into(),
        by: Some("ops".into()),
        ..serde_json::from_value(serde_json::json!({"reason": "x"})).unwrap()
    }];
    let Gate::Hold { why, .. } = decide(&inst, true) else {
        panic!("held")
    };
    assert!(why.contains("change freeze"), "{why}");
}

#[test]
fn the_automatic_suppression_holds_upgrades_but_not_a_recall() {
    let mut inst = automatic();
    inst.status = Some(
        serde_json::from_value(serde_json::json!({"autoSuppression": {
            "since": "2026-11-28T09:00:00Z", "reason": "plan \"upgrade\" failed"}}))
        .unwrap(),
    );
    let Gate::Hold { why, .. } = decide(&inst, false) else {
        panic!("held")
    };
    assert!(why.contains("plan \"upgrade\" failed"), "{why}");
    assert_eq!(decide(&inst, true), Gate::Go, "a recall goes ahead of it");
}

#[test]
fn a_hold_by_a_suppression_that_expires_is_lifted_by_time_and_an_approval_by_a_change() {
    let mut inst = automatic();
    let until = "2099-01-01T00:00:00Z";
    inst.status = Some(
        serde_json::from_value(serde_json::json!({"autoSuppression": {
            "since": "2026-11-28T09:00:00Z", "until": until, "reason": "failed"}}))
        .unwrap(),
    );
    let Gate::Hold { lifts, .. } = decide(&inst, false) else {
        panic!("held")
    };
    assert_eq!(lifts, Lifts::At(at(until)));
    // Approval is given in spec: no time lifts that hold.
    inst.status = None;
    inst.spec.upgrades.as_mut().unwrap().approval = Approval::Manual;
    let Gate::Hold { lifts, .. } = decide(&inst, false) else {
        panic!("held for approval")
    };
    assert_eq!(lifts, Lifts::Change);
}

#[test]
fn a_closed_maintenance_window_holds_until_it_opens() {
    let mut inst = automatic();
    inst.spec.maintenance_windows = vec![
        serde_json::from_value::<MaintenanceWindow>(
            serde_json::json!({"days": "Sun", "start": "02:00", "end": "04:00"}),
        )
        .unwrap(),
    ];
    assert_eq!(
        decide(&inst, false),
        Gate::held(
            "waiting for the maintenance window at 2026-11-29T02:00:00Z",
            Lifts::At(at("2026-11-29T02:00:00Z"))
        ),
        "looked at again when the window opens"
    );
    let inside = gate(
        &inst,
        &offer(false),
        at("2026-11-29T02:30:00Z"),
        &EngineConfig::default(),
    );
    assert_eq!(inside, Gate::Go);
}
