//! Rules KUDO does not have: required and immutable values, plan
//! operations, maintenance windows, suppressions and rollback.

use super::*;

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
fn a_manual_plan_the_operator_version_does_not_have_is_denied_on_create_and_update() {
    let o = fixture_ov("foo-operator");
    let new = with(&instance("foo-operator"), manual("nope", "u1"));
    let msg = denied(&review(None, &new, None, Some(&o))).to_string();
    assert!(
        msg.contains("planName \"nope\" is not a plan of OperatorVersion foo-operator"),
        "{msg}"
    );
    let triggered = with(&idle(), manual("nope", "u2"));
    let msg = denied(&update(&idle(), &triggered)).to_string();
    assert!(msg.contains("\"nope\" is not a plan"), "{msg}");
    assert!(
        msg.contains("its plans are canary, cleanup, deploy, update"),
        "{msg}"
    );
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

/// 60,000 names no OperatorVersion defines: the values of an Instance
/// whose refusal must still be one short line.
fn sixty_thousand_unknown() -> Vec<(String, String)> {
    (0..60_000)
        .map(|i| (format!("UNKNOWN_{i:05}"), "x".to_string()))
        .collect()
}

fn with_values(i: &Instance, values: &[(String, String)]) -> Instance {
    let pairs: Vec<(&str, &str)> = values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    with(i, params(&pairs))
}

#[test]
fn a_create_with_sixty_thousand_unknown_parameters_is_refused_in_a_short_message() {
    let o = fixture_ov("foo-operator");
    let new = with_values(&instance("foo-operator"), &sixty_thousand_unknown());
    let msg = denied(&review(None, &new, None, Some(&o))).to_string();
    assert!(msg.len() < 1_000, "{} bytes", msg.len());
    assert!(msg.contains("UNKNOWN_00000, UNKNOWN_00001"), "{msg}");
    assert!(msg.contains("UNKNOWN_00019 and 59,980 more"), "{msg}");
}

#[test]
fn an_update_adding_sixty_thousand_unknown_parameters_is_refused_in_a_short_message() {
    let new = with_values(&idle(), &sixty_thousand_unknown());
    let msg = denied(&update(&idle(), &new)).to_string();
    assert!(msg.len() < 1_000, "{} bytes", msg.len());
    assert!(msg.contains("and 59,980 more not defined"), "{msg}");
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
            kind: None,
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
            kind: None,
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

fn pod_op(action: PlanAction, pod: Option<&str>, uid: Option<&str>) -> PlanOperation {
    PlanOperation {
        pod: pod.map(str::to_string),
        pod_uid: uid.map(str::to_string),
        ..op("pod-op", action, None, None)
    }
}

#[test]
fn pod_operations_need_pod_and_uid() {
    let ok = with(&idle(), |i| {
        i.spec
            .plan_operations
            .push(pod_op(PlanAction::ReplacePod, Some("zk-0"), Some("u1")))
    });
    assert!(update(&idle(), &ok).is_allowed());
    let cases = [
        (
            pod_op(PlanAction::RestartPod, None, Some("u1")),
            "name the pod",
        ),
        (
            pod_op(PlanAction::RestartPod, Some("zk-0"), None),
            "give the uid of pod \"zk-0\"",
        ),
        (
            PlanOperation {
                phase: Some("nodes".into()),
                ..pod_op(PlanAction::RestartPod, Some("zk-0"), Some("u1"))
            },
            "acts on a pod: give no plan, phase or step",
        ),
    ];
    for (o, want) in cases {
        let new = with(&idle(), |i| i.spec.plan_operations.push(o.clone()));
        let msg = denied(&update(&idle(), &new)).to_string();
        assert!(msg.contains(want), "{o:?}: {msg}");
    }
}

/// The fixture with Apply tasks: deploy's steps apply objects.
fn applying_ov() -> kudo_api::OperatorVersion {
    let mut ov = fixture_ov("foo-operator");
    for t in &mut ov.spec.tasks {
        t.kind = "Apply".into();
    }
    ov
}

/// deploy running at step s1, whose task applied StatefulSet zk.
fn running_on_zk() -> Instance {
    with(&running(), |i| {
        let ps = i
            .status
            .as_mut()
            .unwrap()
            .plan_status
            .get_mut("deploy")
            .unwrap();
        for s in &mut ps.phases[0].steps {
            for t in &mut s.tasks {
                t.objects = vec![kudo_api::AppliedObject {
                    api_version: "apps/v1".into(),
                    kind: "StatefulSet".into(),
                    namespace: Some("default".into()),
                    name: "zk".into(),
                }];
            }
        }
    })
}

#[test]
fn a_pod_operation_waits_only_for_a_running_plan_that_works_on_its_workload() {
    let ov = applying_ov();
    let old = running_on_zk();
    let restart = |pod: &str| {
        with(&old, |i| {
            i.spec
                .plan_operations
                .push(pod_op(PlanAction::RestartPod, Some(pod), Some("u1")))
        })
    };
    let msg = denied(&review(Some(&old), &restart("zk-0"), Some(&ov), Some(&ov))).to_string();
    assert!(
        msg.contains("plan \"deploy\" is working on the workload of pod \"zk-0\" (phase \"nodes\", step \"s1\")"),
        "{msg}"
    );
    let other = review(Some(&old), &restart("web-7f9c-abcde"), Some(&ov), Some(&ov));
    assert!(other.is_allowed(), "{other:?}");
    // A running plan whose remaining steps never recorded objects may
    // touch anything.
    let unknown = running();
    let new = with(&unknown, |i| {
        i.spec
            .plan_operations
            .push(pod_op(PlanAction::RestartPod, Some("web-0"), Some("u1")))
    });
    let msg = denied(&review(Some(&unknown), &new, Some(&ov), Some(&ov))).to_string();
    assert!(msg.contains("not known before it runs"), "{msg}");
}

#[test]
fn a_running_recovery_plan_does_not_block_a_parameter_change() {
    let mut recovering = idle();
    let st = recovering.status.as_mut().unwrap();
    st.active_plan = Some(kudo_api::ActivePlan {
        name: "recovery".into(),
        uid: Some("r".into()),
        status: S::InProgress,
        ..Default::default()
    });
    st.plan_status.insert(
        "recovery".into(),
        kudo_api::PlanStatus {
            name: "recovery".into(),
            status: Some(S::InProgress),
            ..Default::default()
        },
    );
    let new = with(&recovering, params(&[("foo", "changed")]));
    assert!(update(&recovering, &new).is_allowed());
}
