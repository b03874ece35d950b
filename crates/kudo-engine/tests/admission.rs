//! admission::review: KUDO's TestValidateUpdate cases, ported and changed
//! where kudo-rs changes the rule, plus kudo-rs's own rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use kudo_api::names::CLEANUP_FINALIZER;
use kudo_api::{
    ActivePlan, AppliedConfig, AutoSuppression, ExecutionStatus as S, Instance, InstanceStatus,
    MaintenanceWindow, OperatorVersion, ParameterType, PlanAction, PlanExecution, Suppression,
};
use kudo_engine::admission::{Verdict, review, review_at};
use support::*;

fn fixture_ov(name: &str) -> OperatorVersion {
    ov(
        name,
        vec![
            (
                "deploy",
                plan(Some("serial"), &[phase("nodes", Some("serial"), 3)]),
            ),
            ("update", simple_plan(1)),
            ("cleanup", simple_plan(1)),
            (
                "canary",
                plan(None, &[phase("rollout", Some("serial-canary"), 3)]),
            ),
        ],
        vec![
            param("foo", Some("deploy")),
            param("other-foo", Some("deploy")),
            param("bar", Some("update")),
        ],
    )
}

/// Deployed: everything consumed, deploy COMPLETE.
fn idle() -> Instance {
    let mut i = instance("foo-operator");
    i.spec.parameters = Some(BTreeMap::from([("foo".into(), "foo".into())]));
    let ov = fixture_ov("foo-operator");
    let mut st = InstanceStatus {
        applied_operator_version: Some("foo-operator".into()),
        applied_parameters: i.spec.parameters.clone(),
        active_plan: Some(ActivePlan {
            name: "deploy".into(),
            uid: Some("u0".into()),
            status: S::Complete,
            ..Default::default()
        }),
        ..Default::default()
    };
    for (name, p) in &ov.spec.plans {
        st.plan_status
            .insert(name.clone(), kudo_engine::tree::sync_plan(name, p, None));
    }
    st.plan_status.get_mut("deploy").unwrap().status = Some(S::Complete);
    i.status = Some(st);
    i
}

/// deploy running, at phase "nodes", step "s1".
fn running() -> Instance {
    let mut i = idle();
    let st = i.status.as_mut().unwrap();
    st.active_plan.as_mut().unwrap().status = S::InProgress;
    let ps = st.plan_status.get_mut("deploy").unwrap();
    ps.status = Some(S::InProgress);
    ps.phases[0].status = Some(S::InProgress);
    ps.phases[0].steps[0].status = Some(S::Complete);
    ps.phases[0].steps[1].status = Some(S::InProgress);
    i
}

fn with(i: &Instance, f: impl FnOnce(&mut Instance)) -> Instance {
    let mut i = i.clone();
    f(&mut i);
    i
}

fn manual(plan: &str, uid: &str) -> impl FnOnce(&mut Instance) {
    let (plan, uid) = (plan.to_string(), uid.to_string());
    move |i| {
        i.spec.plan_execution = Some(PlanExecution {
            plan_name: Some(plan),
            uid: Some(uid),
            ..Default::default()
        })
    }
}

fn params(kv: &[(&str, &str)]) -> impl FnOnce(&mut Instance) {
    let map: BTreeMap<String, String> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |i| i.spec.parameters = Some(map)
}

fn upgraded(i: &mut Instance) {
    i.spec.operator_version.name = Some("foo-operator-2.0".into());
}

fn deleting(i: &mut Instance) {
    i.metadata.deletion_timestamp = Some(time(ts("2019-10-17T01:01:01Z")));
    i.metadata.finalizers = Some(vec![CLEANUP_FINALIZER.into()]);
}

fn update(old: &Instance, new: &Instance) -> Verdict {
    let ov = fixture_ov(&kudo_engine::select::spec_ov_name(new));
    let old_ov = fixture_ov(&kudo_engine::select::spec_ov_name(old));
    review(Some(old), new, Some(&old_ov), Some(&ov))
}

fn denied(v: &Verdict) -> &str {
    match v {
        Verdict::Denied { message } => message,
        Verdict::Allowed { warnings } => panic!("expected a denial, got allowed with {warnings:?}"),
    }
}

fn warnings(v: &Verdict) -> &[String] {
    match v {
        Verdict::Allowed { warnings } => warnings,
        Verdict::Denied { message } => panic!("expected allowed, got denied: {message}"),
    }
}

// ----- KUDO TestValidateUpdate, ported -----

#[test]
fn no_change_is_a_noop() {
    assert!(warnings(&update(&idle(), &idle())).is_empty());
}

#[test]
fn change_in_labels_does_not_trigger_a_plan() {
    let new = with(&running(), |i| {
        i.metadata.labels = Some(BTreeMap::from([("label".into(), "label2".into())]))
    });
    assert!(warnings(&update(&running(), &new)).is_empty());
}

#[test]
fn triggering_a_plan_directly_is_allowed_when_no_plan_runs() {
    let new = with(&idle(), manual("update", "u1"));
    assert!(update(&idle(), &new).is_allowed());
}

#[test]
fn triggering_the_same_plan_directly_is_allowed_and_restarts_it() {
    let new = with(&running(), manual("deploy", "u1"));
    let v = update(&running(), &new);
    assert!(warnings(&v)[0].contains("restarts it"), "{v:?}");
}

#[test]
fn overriding_a_running_plan_directly_is_not_allowed_and_names_phase_and_step() {
    let new = with(&running(), manual("update", "u1"));
    let v = update(&running(), &new);
    assert_eq!(
        denied(&v),
        "plan \"deploy\" is IN_PROGRESS (phase \"nodes\", step \"s1\"); a manual run of plan \"update\" \
         cannot start until it is COMPLETE or FATAL_ERROR. Wait, or pause/cancel it with: kubectl kudo plan cancel --instance zk"
    );
}

#[test]
fn deletion_is_allowed_while_a_plan_runs_and_cleanup_takes_over() {
    let new = with(&running(), deleting);
    assert!(review(None, &new, None, Some(&fixture_ov("foo-operator"))).is_allowed());
    assert!(
        review(
            Some(&running()),
            &new,
            None,
            Some(&fixture_ov("foo-operator"))
        )
        .is_allowed()
    );
}

#[test]
fn no_other_plan_can_be_triggered_while_the_instance_is_being_deleted() {
    let old = with(&running(), deleting);
    let new = with(&old, manual("deploy", "u1"));
    assert!(denied(&update(&old, &new)).contains("only the cleanup plan runs"));
}

#[test]
fn clearing_plan_execution_while_deleting_changes_nothing_and_is_allowed() {
    // KUDO refused this ("cleanup cannot be cancelled"); in kudo-rs clearing
    // spec.planExecution has no effect on a running plan, so it is harmless.
    let old = with(&with(&running(), manual("deploy", "u1")), deleting);
    let new = with(&old, |i| i.spec.plan_execution = None);
    assert!(update(&old, &new).is_allowed());
}

#[test]
fn a_terminal_plan_no_longer_blocks_a_new_plan() {
    // KUDO: "plan execution IS reset when the plan is terminal" (the webhook
    // cleared spec); kudo-rs never writes spec, a terminal plan simply
    // stops being in the way.
    let mut done = running();
    done.status
        .as_mut()
        .unwrap()
        .plan_status
        .get_mut("deploy")
        .unwrap()
        .status = Some(S::FatalError);
    let new = with(&done, manual("update", "u2"));
    assert!(update(&done, &new).is_allowed());
}

#[test]
fn cleanup_cannot_be_triggered_directly_by_the_user() {
    let new = with(&idle(), manual("cleanup", "u1"));
    assert!(denied(&update(&idle(), &new)).contains("cleanup plan cannot be triggered by hand"));
}

#[test]
fn parameter_updates_are_not_allowed_while_the_instance_is_being_deleted() {
    let old = with(&idle(), deleting);
    let new = with(&old, params(&[("foo", "newFoo")]));
    assert!(denied(&update(&old, &new)).contains("being deleted"));
}

#[test]
fn upgrades_are_not_allowed_while_the_instance_is_being_deleted() {
    let old = with(&idle(), deleting);
    let new = with(&old, upgraded);
    assert!(denied(&update(&old, &new)).contains("being deleted"));
}

#[test]
fn cancelling_a_running_plan_is_allowed_with_a_cancel_operation() {
    // KUDO refused cancellation; kudo-rs supports it as a plan operation.
    let new = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("c1", PlanAction::Cancel, None, None))
    });
    assert!(update(&running(), &new).is_allowed());
}

#[test]
fn upgrade_on_an_idle_instance_is_allowed() {
    let new = with(&idle(), upgraded);
    assert!(update(&idle(), &new).is_allowed());
}

#[test]
fn upgrade_while_a_plan_runs_is_not_allowed() {
    let new = with(&running(), upgraded);
    let msg = denied(&update(&running(), &new)).to_string();
    assert!(
        msg.contains("an upgrade to foo-operator-2.0 (plan \"update\")"),
        "{msg}"
    );
    assert!(msg.contains("plan \"deploy\" is IN_PROGRESS"), "{msg}");
}

#[test]
fn upgrade_together_with_a_manual_plan_is_not_allowed() {
    let new = with(&with(&idle(), upgraded), manual("deploy", "u1"));
    assert!(
        denied(&update(&idle(), &new)).contains("upgrade to foo-operator-2.0 and a manual plan")
    );
}

#[test]
fn parameter_update_on_an_idle_instance_is_allowed() {
    let new = with(&idle(), params(&[("foo", "newFoo")]));
    assert!(update(&idle(), &new).is_allowed());
}

#[test]
fn updating_several_parameters_triggering_the_same_plan_is_allowed() {
    let new = with(&idle(), params(&[("foo", "newFoo"), ("other-foo", "x")]));
    assert!(update(&idle(), &new).is_allowed());
}

#[test]
fn parameter_update_triggering_the_running_plan_is_allowed_and_restarts_it() {
    let new = with(&running(), params(&[("foo", "newFoo")]));
    assert!(warnings(&update(&running(), &new))[0].contains("restarts it"));
}

#[test]
fn parameter_update_triggering_another_plan_than_the_running_one_is_not_allowed() {
    let new = with(&running(), params(&[("foo", "foo"), ("bar", "newBar")]));
    let msg = denied(&update(&running(), &new)).to_string();
    assert!(
        msg.starts_with(
            "plan \"deploy\" is IN_PROGRESS (phase \"nodes\", step \"s1\"); a parameter update that triggers \"update\" cannot start"
        ),
        "{msg}"
    );
}

#[test]
fn parameter_update_triggering_several_plans_is_not_allowed() {
    let new = with(&idle(), params(&[("foo", "newFoo"), ("bar", "newBar")]));
    let msg = denied(&update(&idle(), &new)).to_string();
    assert!(msg.contains("deploy, update"), "{msg}");
}

#[test]
fn parameter_not_defined_by_the_operator_version_is_refused() {
    // KUDO let it through without running a plan; kudo-rs refuses it.
    let new = with(&idle(), params(&[("foo", "foo"), ("bazz", "newBazz")]));
    let msg = denied(&update(&idle(), &new)).to_string();
    assert!(msg.contains("bazz") && msg.contains("not defined"), "{msg}");
}

#[test]
fn parameter_update_together_with_an_upgrade_is_normally_not_allowed() {
    let new = with(&with(&idle(), upgraded), params(&[("foo", "newFoo")]));
    assert!(denied(&update(&idle(), &new)).contains("upgrade first, then change the parameters"));
}

#[test]
fn upgrade_may_remove_a_parameter_the_new_version_no_longer_has() {
    let new = with(&with(&idle(), upgraded), params(&[]));
    let mut new_ov = fixture_ov("foo-operator-2.0");
    new_ov.spec.parameters.remove(0);
    let v = review(
        Some(&idle()),
        &new,
        Some(&fixture_ov("foo-operator")),
        Some(&new_ov),
    );
    assert!(v.is_allowed(), "{v:?}");
}

#[test]
fn parameter_update_together_with_a_manual_plan_is_not_allowed() {
    let new = with(
        &with(&idle(), manual("deploy", "u1")),
        params(&[("foo", "newFoo")]),
    );
    assert!(denied(&update(&idle(), &new)).contains("make one change at a time"));
}

// ----- kudo-rs rules -----

#[test]
fn missing_operator_version_is_denied_naming_it() {
    let v = review(None, &idle(), None, None);
    assert!(denied(&v).contains("OperatorVersion \"foo-operator\" not found"));
}

#[test]
fn create_needs_a_deploy_plan() {
    let no_deploy = ov("x", vec![("update", simple_plan(1))], vec![]);
    let v = review(None, &instance("x"), None, Some(&no_deploy));
    assert!(denied(&v).contains("has no deploy plan"));
}

#[test]
fn create_with_an_invalid_value_is_denied_naming_the_parameter() {
    let mut o = fixture_ov("foo-operator");
    o.spec.parameters[0].value_type = Some(ParameterType::Integer);
    let new = with(&instance("foo-operator"), params(&[("foo", "three")]));
    let msg = denied(&review(None, &new, None, Some(&o))).to_string();
    assert!(
        msg.contains("parameter foo") && msg.contains("\"three\""),
        "{msg}"
    );
}

#[test]
fn create_with_a_missing_required_value_is_denied() {
    let mut o = fixture_ov("foo-operator");
    o.spec.parameters[2].required = Some(true);
    let msg = denied(&review(None, &instance("foo-operator"), None, Some(&o))).to_string();
    assert!(msg.contains("parameter bar is required"), "{msg}");
}

#[test]
fn rejects_immutable_param_change() {
    let mut o = fixture_ov("foo-operator");
    o.spec.parameters[0].immutable = Some(true);
    let new = with(&idle(), params(&[("foo", "other")]));
    let msg = denied(&review(Some(&idle()), &new, Some(&o), Some(&o))).to_string();
    assert!(msg.contains("parameter foo is immutable"), "{msg}");
}

#[test]
fn upgrade_adding_an_immutable_parameter_needs_a_value() {
    let mut new_ov = fixture_ov("foo-operator-2.0");
    let mut p = param("size", None);
    p.immutable = Some(true);
    new_ov.spec.parameters.push(p);
    let new = with(&idle(), upgraded);
    let msg = denied(&review(
        Some(&idle()),
        &new,
        Some(&fixture_ov("foo-operator")),
        Some(&new_ov),
    ))
    .to_string();
    assert!(msg.contains("size is new and immutable"), "{msg}");
}

#[test]
fn plan_operations_are_allowed_while_a_plan_runs() {
    let new = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("p1", PlanAction::Pause, Some("nodes"), None));
        i.spec.plan_operations.push(op(
            "f1",
            PlanAction::ForceComplete,
            Some("nodes"),
            Some("s1"),
        ));
    });
    assert!(update(&running(), &new).is_allowed());
}

#[test]
fn operations_naming_unknown_plan_phase_or_step_are_denied() {
    let cases = [
        (
            PlanOperation {
                plan: Some("nope".into()),
                ..op("o", PlanAction::Pause, None, None)
            },
            "plan \"nope\" does not exist",
        ),
        (
            op("o", PlanAction::Pause, Some("nope"), None),
            "has no phase \"nope\"",
        ),
        (
            op("o", PlanAction::Restart, Some("nodes"), Some("s9")),
            "has no step \"s9\"",
        ),
        (
            op("o", PlanAction::Restart, None, Some("s1")),
            "needs its phase",
        ),
    ];
    for (o, want) in cases {
        let new = with(&running(), |i| i.spec.plan_operations.push(o.clone()));
        let msg = denied(&update(&running(), &new)).to_string();
        assert!(msg.contains(want), "{o:?}: {msg}");
    }
}

use kudo_api::PlanOperation;

#[test]
fn continue_needs_a_canary_phase() {
    let no_phase = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("c", PlanAction::Continue, None, None))
    });
    assert!(denied(&update(&running(), &no_phase)).contains("continue needs a phase"));
    let not_canary = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("c", PlanAction::Continue, Some("nodes"), None))
    });
    assert!(denied(&update(&running(), &not_canary)).contains("not a canary phase"));
    let canary = with(&running(), |i| {
        i.spec.plan_operations.push(PlanOperation {
            plan: Some("canary".into()),
            ..op("c", PlanAction::Continue, Some("rollout"), None)
        })
    });
    assert!(update(&running(), &canary).is_allowed());
}

#[test]
fn operation_ids_are_single_use() {
    let first = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("x", PlanAction::Pause, None, None))
    });
    let changed = with(&first, |i| {
        i.spec.plan_operations[0].action = PlanAction::Resume
    });
    assert!(denied(&update(&first, &changed)).contains("single-use"));
    let twice = with(&running(), |i| {
        i.spec
            .plan_operations
            .push(op("x", PlanAction::Pause, None, None));
        i.spec
            .plan_operations
            .push(op("x", PlanAction::Resume, None, None));
    });
    assert!(denied(&update(&running(), &twice)).contains("used twice"));
}

#[test]
fn invalid_maintenance_window_and_suppression_without_reason_are_denied() {
    let bad_window = with(&idle(), |i| {
        i.spec.maintenance_windows.push(MaintenanceWindow {
            days: "Mon-Fri".into(),
            start: "22:00".into(),
            end: "4".into(),
            time_zone: None,
        })
    });
    assert!(denied(&update(&idle(), &bad_window)).contains("spec.maintenanceWindows"));
    let no_reason = with(&idle(), |i| {
        i.spec.suppressions.push(Suppression::default())
    });
    assert!(denied(&update(&idle(), &no_reason)).contains("needs a reason"));
}

#[test]
fn webhook_says_when_a_parameter_change_waits_for_a_suppression() {
    let now = ts("2026-11-24T12:00:00Z");
    let suppressed = with(&idle(), |i| {
        i.spec.suppressions.push(Suppression {
            reason: "freeze".into(),
            by: Some("bob".into()),
            ..Default::default()
        })
    });
    let new = with(&suppressed, params(&[("foo", "x")]));
    let o = fixture_ov("foo-operator");
    let v = review_at(Some(&suppressed), &new, Some(&o), Some(&o), Some(now));
    assert!(
        warnings(&v)
            .iter()
            .any(|w| w.contains("will wait") && w.contains("bob: freeze")),
        "{v:?}"
    );
}

#[test]
fn webhook_says_a_rollback_runs_despite_the_automatic_suppression() {
    let now = ts("2026-11-24T12:00:00Z");
    let failed = with(&idle(), |i| {
        i.spec.parameters = Some(BTreeMap::from([("foo".into(), "bad".into())]));
        let st = i.status.as_mut().unwrap();
        st.applied_parameters = i.spec.parameters.clone();
        st.last_successful = Some(AppliedConfig {
            operator_version: "foo-operator".into(),
            parameters: BTreeMap::from([("foo".into(), "foo".into())]),
            ..Default::default()
        });
        st.auto_suppression = Some(AutoSuppression {
            since: time(now),
            until: None,
            reason: "deploy failed".into(),
            plan: None,
            uid: None,
        });
    });
    let back = with(&failed, params(&[("foo", "foo")]));
    let o = fixture_ov("foo-operator");
    let v = review_at(Some(&failed), &back, Some(&o), Some(&o), Some(now));
    assert!(warnings(&v).iter().any(|w| w.contains("rollback")), "{v:?}");
    let other = with(&failed, params(&[("foo", "other")]));
    let v = review_at(Some(&failed), &other, Some(&o), Some(&o), Some(now));
    assert!(
        warnings(&v)
            .iter()
            .any(|w| w.contains("automatically suppressed")),
        "{v:?}"
    );
}

#[test]
fn webhook_says_when_the_plan_waits_for_a_window() {
    let now = ts("2026-11-24T12:00:00Z");
    let windowed = with(&idle(), |i| {
        i.spec.maintenance_windows.push(MaintenanceWindow {
            days: "*".into(),
            start: "22:00".into(),
            end: "04:00".into(),
            time_zone: Some("UTC".into()),
        })
    });
    let new = with(&windowed, params(&[("foo", "x")]));
    let o = fixture_ov("foo-operator");
    let v = review_at(Some(&windowed), &new, Some(&o), Some(&o), Some(now));
    assert!(
        warnings(&v)
            .iter()
            .any(|w| w.contains("2026-11-24T22:00:00Z")),
        "{v:?}"
    );
}
