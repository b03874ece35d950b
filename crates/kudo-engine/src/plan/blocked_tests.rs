use super::*;

const FOUR_HOURS: Duration = Duration::from_secs(4 * 3600);

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn window(plan: Option<&str>, message: &str) -> Blocker {
    Blocker {
        kind: BlockerKind::MaintenanceWindow,
        message: message.into(),
        plan: plan.map(str::to_string),
        ..Blocker::default()
    }
}

#[test]
fn a_plan_held_by_a_window_keeps_the_time_it_was_first_held() {
    let mut first = vec![window(Some("update"), "closed until 22:00")];
    stamp_since(&[], &mut first, None, ts("2026-11-24T10:00:00Z"));
    let mut later = vec![Blocker {
        kind: BlockerKind::Suppressed,
        message: "suppressed by ops".into(),
        plan: Some("update".into()),
        ..Blocker::default()
    }];
    stamp_since(&first, &mut later, None, ts("2026-11-24T12:00:00Z"));
    assert_eq!(
        later[0].since.as_ref().unwrap().0,
        ts("2026-11-24T10:00:00Z")
    );
}

#[test]
fn blockers_that_are_not_windows_or_suppressions_get_no_time() {
    let mut b = vec![Blocker {
        kind: BlockerKind::WaitingForResource,
        message: "Deployment ns/web: 0 of 1".into(),
        ..Blocker::default()
    }];
    stamp_since(&[], &mut b, Some("deploy"), ts("2026-11-24T10:00:00Z"));
    assert_eq!(b[0].since, None);
}

#[test]
fn a_blocker_naming_no_plan_counts_for_the_running_plan() {
    let mut first = vec![window(None, "closed")];
    stamp_since(&[], &mut first, Some("deploy"), ts("2026-11-24T10:00:00Z"));
    let mut again = vec![window(Some("deploy"), "closed")];
    stamp_since(
        &first,
        &mut again,
        Some("deploy"),
        ts("2026-11-24T11:00:00Z"),
    );
    assert_eq!(
        again[0].since.as_ref().unwrap().0,
        ts("2026-11-24T10:00:00Z")
    );
}

#[test]
fn another_plan_held_starts_its_own_time() {
    let mut first = vec![window(Some("deploy"), "closed")];
    stamp_since(&[], &mut first, None, ts("2026-11-24T10:00:00Z"));
    let mut other = vec![window(Some("update"), "closed")];
    stamp_since(&first, &mut other, None, ts("2026-11-24T11:00:00Z"));
    assert_eq!(
        other[0].since.as_ref().unwrap().0,
        ts("2026-11-24T11:00:00Z")
    );
}

fn held_since(since: &str, message: &str) -> Vec<Blocker> {
    vec![Blocker {
        since: Some(crate::model::time(ts(since))),
        ..window(Some("update"), message)
    }]
}

#[test]
fn under_the_threshold_nothing_is_said_and_the_engine_wakes_at_it() {
    let b = held_since("2026-11-24T10:00:00Z", "closed");
    let v = judge(&[], &b, None, FOUR_HOURS, ts("2026-11-24T13:00:00Z"));
    assert_eq!(v.conditions, None);
    assert_eq!(v.warning, None);
    assert_eq!(v.wake_at, Some(ts("2026-11-24T14:00:00Z")));
}

#[test]
fn over_the_threshold_the_condition_and_warning_name_what_holds_it_once() {
    let b = held_since(
        "2026-11-24T10:00:00Z",
        "maintenance window closed until 22:00",
    );
    let v = judge(&[], &b, None, FOUR_HOURS, ts("2026-11-24T14:00:00Z"));
    let warning = v.warning.unwrap();
    assert!(warning.contains("plan \"update\""), "{warning}");
    assert!(warning.contains("window closed until 22:00"), "{warning}");
    let conds = v.conditions.unwrap();
    assert_eq!(conds[0].type_, CONDITION);
    assert_eq!(conds[0].status, "True");
    let again = judge(&conds, &b, None, FOUR_HOURS, ts("2026-11-24T15:00:00Z"));
    assert_eq!(again, Verdict::default());
}

#[test]
fn a_new_reason_warns_again_and_the_end_of_the_hold_clears_the_condition() {
    let b = held_since("2026-11-24T10:00:00Z", "window closed");
    let conds = judge(&[], &b, None, FOUR_HOURS, ts("2026-11-24T14:00:00Z"))
        .conditions
        .unwrap();
    let changed = held_since("2026-11-24T10:00:00Z", "suppressed by ops");
    let v = judge(
        &conds,
        &changed,
        None,
        FOUR_HOURS,
        ts("2026-11-24T15:00:00Z"),
    );
    assert!(v.warning.unwrap().contains("suppressed by ops"));
    let cleared = judge(&conds, &[], None, FOUR_HOURS, ts("2026-11-24T16:00:00Z"));
    assert_eq!(cleared.warning, None);
    let c = cleared.conditions.unwrap();
    assert_eq!(
        (c[0].status.as_str(), c[0].reason.as_str()),
        ("False", "NotBlocked")
    );
}

#[test]
fn other_conditions_are_kept() {
    let ready = Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "ResourcesReady".into(),
        message: String::new(),
        last_transition_time: crate::model::time(ts("2026-11-24T09:00:00Z")),
        observed_generation: None,
    };
    let b = held_since("2026-11-24T10:00:00Z", "closed");
    let v = judge(
        std::slice::from_ref(&ready),
        &b,
        None,
        FOUR_HOURS,
        ts("2026-11-24T14:00:00Z"),
    );
    let conds = v.conditions.unwrap();
    assert_eq!(conds[0], ready);
    assert_eq!(conds[1].type_, CONDITION);
}
