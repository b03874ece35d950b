//! KUDO's TestValidateUpdate cases, ported; where kudo-rs changes a rule
//! (cancel, restart by re-trigger), the case says so in its name.

use super::*;

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
         cannot start until it is COMPLETE or FATAL_ERROR. Wait for it, or stop it with \
         kubectl kudo plan cancel --instance zk -n default (pausing it does not let another plan in)"
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
