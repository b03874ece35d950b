//! Downtime and no-downtime windows (Apollo), and plans held too long.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use kudo_api::{BlockerKind, ExecutionStatus as S, MaintenanceWindow, WindowKind};
use kudo_engine::windows::{WindowState, Windows};
use support::*;

fn window(start: &str, end: &str, kind: Option<WindowKind>) -> MaintenanceWindow {
    MaintenanceWindow {
        days: "*".into(),
        start: start.into(),
        end: end.into(),
        time_zone: Some("UTC".into()),
        kind,
    }
}

#[test]
fn without_downtime_windows_every_plan_waits_for_the_same_windows() {
    let w = Windows::at(
        &[window("20:00", "23:00", None)],
        &[],
        ts("2026-11-24T21:00:00Z"),
    );
    assert_eq!(w.downtime, None);
    assert!(w.for_plan(true).1.as_ref().unwrap().is_open());
    assert_eq!(w.for_plan(true).0, WindowKind::NoDowntime);
}

#[test]
fn a_downtime_plan_needs_a_downtime_window_inside_a_no_downtime_one() {
    let list = [
        window("20:00", "23:00", None),
        window("22:00", "02:00", Some(WindowKind::Downtime)),
    ];
    let at_21 = Windows::at(&list, &[], ts("2026-11-24T21:00:00Z"));
    assert!(at_21.for_plan(false).1.as_ref().unwrap().is_open());
    let (kind, down) = at_21.for_plan(true);
    assert_eq!(kind, WindowKind::Downtime);
    assert_eq!(
        *down.as_ref().unwrap(),
        WindowState::Closed {
            opens_at: Some(ts("2026-11-24T22:00:00Z"))
        }
    );
    let at_2230 = Windows::at(&list, &[], ts("2026-11-24T22:30:00Z"));
    assert_eq!(
        *at_2230.for_plan(true).1.as_ref().unwrap(),
        WindowState::Open {
            closes_at: Some(ts("2026-11-24T23:00:00Z"))
        },
        "the no-downtime window closes first"
    );
}

#[test]
fn only_downtime_windows_leave_other_plans_free() {
    let list = [window("02:00", "03:00", Some(WindowKind::Downtime))];
    let w = Windows::at(&list, &[], ts("2026-11-24T12:00:00Z"));
    assert!(w.for_plan(false).1.as_ref().unwrap().is_open());
    assert!(!w.for_plan(true).1.as_ref().unwrap().is_open());
}

#[test]
fn an_invalid_window_holds_both_kinds_naming_it() {
    let list = [
        window("20:00", "23:00", None),
        window("22:00", "99:00", Some(WindowKind::Downtime)),
    ];
    let w = Windows::at(&list, &[], ts("2026-11-24T12:00:00Z"));
    let e = w.for_plan(true).1.as_ref().unwrap_err().to_string();
    assert!(e.contains("99:00"), "{e}");
    assert!(w.for_plan(false).1.is_err());
}

/// deploy (no downtime) and upgrade-like `restart` (downtime: true).
fn with_downtime_plan() -> Sim {
    let mut restart = simple_plan(1);
    restart.downtime = Some(true);
    let mut sim = Sim::new(
        instance("a"),
        ov(
            "a",
            vec![("deploy", simple_plan(1)), ("restart", restart)],
            vec![],
        ),
    );
    sim.all_done();
    sim.inst.spec.maintenance_windows = vec![window("02:00", "03:00", Some(WindowKind::Downtime))];
    sim
}

fn trigger(sim: &mut Sim, plan: &str, uid: &str) {
    sim.edit(|s| {
        s.plan_execution = Some(kudo_api::PlanExecution {
            plan_name: Some(plan.into()),
            uid: Some(uid.into()),
            ..Default::default()
        })
    });
}

#[test]
fn a_downtime_plan_waits_for_its_window_and_the_blocker_names_it() {
    let mut sim = with_downtime_plan();
    trigger(&mut sim, "restart", "r1");
    let d = sim.all_done();
    assert_eq!(sim.plan_status("restart"), S::NeverRun);
    let b = &sim.status().blockers[0];
    assert_eq!(b.kind, BlockerKind::MaintenanceWindow);
    assert!(
        b.message
            .contains("downtime maintenance window closed until 2026-11-25T02:00:00Z"),
        "{}",
        b.message
    );
    assert!(!b.message.contains("no-downtime"), "{}", b.message);
    assert_eq!(d.requeue_after, Some(Duration::from_secs(14 * 3600)));
    sim.advance(Duration::from_secs(14 * 3600));
    sim.all_done();
    assert_eq!(sim.plan_status("restart"), S::Complete);
}

#[test]
fn a_plan_without_downtime_runs_outside_the_downtime_window() {
    let mut sim = with_downtime_plan();
    trigger(&mut sim, "deploy", "d2");
    sim.all_done();
    assert_eq!(
        sim.status().plan_status["deploy"].uid.as_deref(),
        Some("d2")
    );
    assert_eq!(sim.plan_status("deploy"), S::Complete);
}

#[test]
fn a_plan_held_longer_than_the_threshold_warns_once_naming_the_window() {
    let mut sim = with_downtime_plan();
    sim.config.blocked_warning_after = Some(Duration::from_secs(4 * 3600));
    trigger(&mut sim, "restart", "r1");
    let d = sim.all_done();
    assert_eq!(
        d.requeue_after,
        Some(Duration::from_secs(4 * 3600)),
        "wakes at the threshold"
    );
    assert!(!sim.events.iter().any(|(r, _)| r == "PlanBlockedTooLong"));
    sim.advance(Duration::from_secs(4 * 3600));
    sim.all_done();
    assert!(sim.has_event(
        "PlanBlockedTooLong",
        "downtime maintenance window closed until"
    ));
    let c = sim
        .status()
        .conditions
        .iter()
        .find(|c| c.type_ == "Blocked")
        .unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "HeldTooLong")
    );
    assert!(
        c.message
            .contains("plan \"restart\" has been held since 2026-11-24T12:00:00Z"),
        "{}",
        c.message
    );
    sim.advance(Duration::from_secs(3600));
    sim.all_done();
    let warnings = sim
        .events
        .iter()
        .filter(|(r, _)| r == "PlanBlockedTooLong")
        .count();
    assert_eq!(warnings, 1, "once while the reason stays");
    // The window opens: the plan runs and the condition clears.
    sim.advance(Duration::from_secs(9 * 3600));
    sim.all_done();
    assert_eq!(sim.plan_status("restart"), S::Complete);
    let c = sim
        .status()
        .conditions
        .iter()
        .find(|c| c.type_ == "Blocked")
        .unwrap();
    assert_eq!(c.status, "False");
    assert!(
        sim.status().conditions.iter().any(|c| c.type_ == "Ready"),
        "Ready is kept beside it"
    );
}
