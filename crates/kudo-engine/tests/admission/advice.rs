//! The way out a refusal or a warning names is one that works: a paused
//! plan is still in the way, a pending request is explained by plan
//! status, and each command names the Instance and its namespace.

use super::*;

fn paused(i: &mut Instance) {
    let st = i.status.as_mut().unwrap();
    let ps = st.plan_status.get_mut("deploy").unwrap();
    ps.paused = Some(true);
    ps.status = Some(S::Waiting);
    st.active_plan.as_mut().unwrap().status = S::Waiting;
}

#[test]
fn a_plan_refused_behind_a_running_plan_is_told_to_cancel_it_not_to_pause_it() {
    let new = with(&running(), manual("update", "u1"));
    let message = denied(&update(&running(), &new)).to_string();
    assert!(
        message.ends_with(
            "Wait for it, or stop it with kubectl kudo plan cancel --instance zk -n default \
             (pausing it does not let another plan in)"
        ),
        "{message}"
    );
}

#[test]
fn a_plan_refused_behind_a_paused_plan_is_told_to_resume_or_cancel_it() {
    let old = with(&running(), paused);
    let new = with(&old, manual("update", "u1"));
    let message = denied(&update(&old, &new)).to_string();
    assert!(
        message.starts_with("plan \"deploy\" is WAITING, paused, (phase"),
        "{message}"
    );
    assert!(
        message.contains(
            "Resume it with kubectl kudo plan resume --instance zk --plan deploy -n default and wait, \
             or stop it with kubectl kudo plan cancel --instance zk -n default"
        ),
        "{message}"
    );
}

#[test]
fn a_plan_refused_behind_a_pending_request_is_pointed_at_plan_status() {
    // `bar` triggers update; the controller has not started it yet.
    let pending = with(&idle(), params(&[("foo", "foo"), ("bar", "1")]));
    let new = with(&pending, manual("canary", "u1"));
    let message = denied(&update(&pending, &new)).to_string();
    assert!(
        message.starts_with("plan \"update\" is requested (parameter bar) and not started yet"),
        "{message}"
    );
    assert!(
        message
            .ends_with("See what holds it with kubectl kudo plan status --instance zk -n default"),
        "{message}"
    );
}

#[test]
fn a_change_for_a_paused_plan_is_allowed_with_a_warning_that_it_waits_paused() {
    let old = with(&idle(), |i| {
        let st = i.status.as_mut().unwrap();
        st.plan_status.get_mut("update").unwrap().paused = Some(true);
    });
    let new = with(&old, params(&[("foo", "foo"), ("bar", "2")]));
    let v = update(&old, &new);
    assert_eq!(
        warnings(&v),
        [
            "plan \"update\" is paused: it starts, but runs no step until resumed with \
          kubectl kudo plan resume --instance zk --plan update -n default"
        ]
    );
}

#[test]
fn a_change_outside_the_window_is_told_how_to_run_it_now() {
    let now = ts("2026-11-24T12:00:00Z");
    let windowed = with(&idle(), |i| {
        i.spec.maintenance_windows.push(MaintenanceWindow {
            days: "*".into(),
            start: "22:00".into(),
            end: "04:00".into(),
            time_zone: Some("UTC".into()),
            kind: None,
        })
    });
    let new = with(&windowed, params(&[("foo", "foo"), ("bar", "2")]));
    let o = fixture_ov("foo-operator");
    let v = review_at(Some(&windowed), &new, Some(&o), Some(&o), Some(now));
    assert_eq!(
        warnings(&v),
        [
            "plan \"update\" will wait for the maintenance window opening at 2026-11-24T22:00:00Z; \
          to run it now: kubectl kudo plan trigger --instance zk --name update --break-glass -n default"
        ]
    );
}

#[test]
fn only_a_window_of_the_kind_the_plan_waits_for_is_warned_of() {
    let now = ts("2026-11-24T12:00:00Z");
    // Always open for plans that keep the service up; downtime only at night.
    let windowed = with(&idle(), |i| {
        i.spec.maintenance_windows.push(MaintenanceWindow {
            days: "*".into(),
            start: "22:00".into(),
            end: "04:00".into(),
            time_zone: Some("UTC".into()),
            kind: Some(WindowKind::Downtime),
        })
    });
    let new = with(&windowed, params(&[("foo", "foo"), ("bar", "2")]));
    let o = fixture_ov("foo-operator");
    let v = review_at(Some(&windowed), &new, Some(&o), Some(&o), Some(now));
    assert!(warnings(&v).is_empty(), "{:?}", warnings(&v));
    let mut needs_downtime = o.clone();
    needs_downtime
        .spec
        .plans
        .get_mut("update")
        .unwrap()
        .downtime = Some(true);
    let v = review_at(
        Some(&windowed),
        &new,
        Some(&needs_downtime),
        Some(&needs_downtime),
        Some(now),
    );
    assert_eq!(
        warnings(&v),
        [
            "plan \"update\" will wait for the downtime maintenance window opening at 2026-11-24T22:00:00Z; \
          to run it now: kubectl kudo plan trigger --instance zk --name update --break-glass -n default"
        ]
    );
}

#[test]
fn a_break_glass_run_of_the_plan_a_pending_change_needs_is_allowed() {
    let pending = with(&idle(), params(&[("foo", "foo"), ("bar", "1")]));
    let new = with(&pending, |i| {
        manual("update", "glass")(i);
        i.spec.plan_execution.as_mut().unwrap().break_glass = Some(true);
    });
    assert_eq!(
        warnings(&update(&pending, &new)),
        [
            "plan \"update\" is requested (parameter bar) and not started yet; \
          a manual run of plan \"update\" runs it, taking that change with it"
        ]
    );
}
