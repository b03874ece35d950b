//! Plan parameters: the values of one manual run are recorded for that run
//! (its renders read them from status), shown in history, and never become
//! the Instance's; the next run of any plan has none.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;

use kudo_api::{ExecutionStatus as S, PlanAction, PlanExecution, PlanOperation};
use kudo_engine::{Action, Decision, TaskKey, TaskOutcome};
use support::*;

/// deploy, `backup` (run by hand) and `reconfigure`, triggered by `TICK`.
fn backup_sim() -> Sim {
    Sim::new(
        instance("a"),
        ov(
            "a",
            vec![
                ("deploy", simple_plan(1)),
                ("backup", simple_plan(2)),
                ("reconfigure", simple_plan(1)),
            ],
            vec![param("BUCKET", None), param("TICK", Some("reconfigure"))],
        ),
    )
}

fn values(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn trigger_with(sim: &mut Sim, plan: &str, uid: &str, kv: &[(&str, &str)]) {
    sim.edit(|s| {
        s.plan_execution = Some(PlanExecution {
            plan_name: Some(plan.into()),
            uid: Some(uid.into()),
            parameters: (!kv.is_empty()).then(|| values(kv)),
            ..Default::default()
        })
    });
}

fn slow(_: &TaskKey) -> TaskOutcome {
    TaskOutcome::InProgress {
        message: "copying".into(),
    }
}

/// The first RunTask key of a decision.
fn first_task(d: &Decision) -> TaskKey {
    d.actions
        .iter()
        .find_map(|a| match a {
            Action::RunTask { key, .. } => Some(key.clone()),
            _ => None,
        })
        .expect("a task to run")
}

fn deployed() -> Sim {
    let mut sim = backup_sim();
    sim.set_params(&[("BUCKET", "main")]);
    sim.all_done();
    sim
}

#[test]
fn a_manual_run_records_its_values_for_its_tasks_and_in_history() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    let d = sim.reconcile(slow);
    let key = first_task(&d);
    assert_eq!(key.plan(), "backup");
    assert_eq!(
        key.execution_parameters(sim.status()),
        Some(&values(&[("BUCKET", "x")]))
    );
    assert_eq!(
        sim.status().plan_status["backup"].parameters,
        values(&[("BUCKET", "x")])
    );
    let run = sim.status().history.last().unwrap();
    assert_eq!(
        (run.plan.as_str(), run.trigger.as_str()),
        ("backup", "manual")
    );
    assert_eq!(run.parameters, values(&[("BUCKET", "x")]));
}

#[test]
fn a_run_with_values_leaves_the_instances_parameters_and_rollback_target_alone() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.all_done();
    assert_eq!(sim.plan_status("backup"), S::Complete);
    let st = sim.status();
    assert_eq!(st.applied_parameters, Some(values(&[("BUCKET", "main")])));
    assert_eq!(
        st.last_successful.as_ref().unwrap().parameters,
        values(&[("BUCKET", "main")])
    );
    assert_eq!(
        sim.inst.spec.parameters,
        Some(values(&[("BUCKET", "main")]))
    );
}

#[test]
fn the_next_plan_runs_without_the_values_of_the_manual_run() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.all_done();
    sim.set_params(&[("BUCKET", "main"), ("TICK", "1")]);
    let d = sim.reconcile(slow);
    let key = first_task(&d);
    assert_eq!(key.plan(), "reconfigure");
    assert_eq!(key.execution_parameters(sim.status()), None);
    assert!(sim.status().history.last().unwrap().parameters.is_empty());
}

#[test]
fn a_run_of_the_same_plan_without_values_has_none_of_the_last_runs() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.all_done();
    trigger_with(&mut sim, "backup", "b2", &[]);
    let d = sim.reconcile(slow);
    assert_eq!(first_task(&d).uid(), "b2");
    assert_eq!(first_task(&d).execution_parameters(sim.status()), None);
    assert!(sim.status().plan_status["backup"].parameters.is_empty());
}

#[test]
fn values_changed_in_spec_without_a_new_uid_do_not_reach_the_running_execution() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.reconcile(slow);
    // Written past the webhook (which refuses this): the run keeps its values.
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "y")]);
    let d = sim.reconcile(slow);
    let key = first_task(&d);
    assert_eq!(key.uid(), "b1");
    assert_eq!(
        key.execution_parameters(sim.status()),
        Some(&values(&[("BUCKET", "x")]))
    );
}

#[test]
fn a_new_uid_restarts_the_running_plan_with_the_new_values() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.reconcile(slow);
    trigger_with(&mut sim, "backup", "b2", &[("BUCKET", "y")]);
    let d = sim.reconcile(slow);
    let key = first_task(&d);
    assert_eq!(key.uid(), "b2");
    assert_eq!(
        key.execution_parameters(sim.status()),
        Some(&values(&[("BUCKET", "y")]))
    );
    let superseded = sim.status().history.iter().find(|r| r.uid == "b1").unwrap();
    assert_eq!(superseded.parameters, values(&[("BUCKET", "x")]));
}

#[test]
fn a_task_key_of_an_older_execution_gets_no_values() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.reconcile(slow);
    let stale = TaskKey::new("backup", "b0", "main", "s0", "t");
    assert_eq!(stale.execution_parameters(sim.status()), None);
}

#[test]
fn restarting_the_plan_by_operation_keeps_the_values_of_its_execution() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("BUCKET", "x")]);
    sim.all_done();
    sim.operate(PlanOperation {
        plan: Some("backup".into()),
        ..op("r1", PlanAction::Restart, None, None)
    });
    let d = sim.reconcile(slow);
    let key = first_task(&d);
    assert_eq!(key.uid(), "b1");
    assert_eq!(
        key.execution_parameters(sim.status()),
        Some(&values(&[("BUCKET", "x")]))
    );
    assert_eq!(
        sim.status().history.last().unwrap().parameters,
        values(&[("BUCKET", "x")])
    );
}

#[test]
fn a_value_for_a_parameter_with_a_trigger_plan_starts_only_the_manual_run() {
    let mut sim = deployed();
    trigger_with(&mut sim, "backup", "b1", &[("TICK", "9")]);
    sim.all_done();
    let plans: Vec<&str> = sim
        .status()
        .history
        .iter()
        .map(|r| r.plan.as_str())
        .collect();
    assert_eq!(plans, vec!["deploy", "backup"]);
    assert_eq!(sim.plan_status("reconfigure"), S::NeverRun);
}
