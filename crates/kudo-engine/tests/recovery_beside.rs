//! Recovery and pod operations beside a running plan (DC/OS' dirtied
//! assets): what the running plan's current and remaining steps touch waits
//! for it, the rest goes ahead at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use kudo_api::{AppliedObject, ExecutionStatus as S, PlanAction};
use kudo_engine::recovery::{Drift, DriftCause};
use kudo_engine::{TaskKey, TaskOutcome, TaskResult};
use support::*;

fn object(kind: &str, name: &str) -> AppliedObject {
    AppliedObject {
        api_version: "apps/v1".into(),
        kind: kind.into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn deleted(object: AppliedObject) -> Drift {
    Drift {
        object,
        cause: DriftCause::Deleted,
    }
}

/// deploy and update: phase `main`, steps s0 (task `web`: Deployment web)
/// and s1 (task `db`: StatefulSet db), both Apply tasks; deploy completed.
fn deployed() -> Sim {
    let two = plan(
        Some("serial"),
        &[PhaseDef {
            name: "main",
            strategy: Some("serial"),
            steps: 1,
            tasks: &["web"],
        }],
    );
    let mut p = two.clone();
    p.phases[0].steps.push(kudo_api::Step {
        name: "s1".into(),
        tasks: vec!["db".into()],
    });
    let mut ov = ov(
        "a",
        vec![("deploy", p.clone()), ("update", p)],
        vec![param("X", None)],
    );
    for t in &mut ov.spec.tasks {
        t.kind = "Apply".into();
    }
    let mut sim = Sim::new(instance("a"), ov);
    sim.reconcile_with(applied(|_| TaskOutcome::Done));
    assert_eq!(sim.plan_status("deploy"), S::Complete);
    sim
}

/// Each task reports the object it applies.
fn applied(outcome: impl Fn(&TaskKey) -> TaskOutcome) -> impl Fn(&TaskKey) -> TaskResult {
    move |k| TaskResult {
        outcome: outcome(k),
        objects: match k.task() {
            "web" => vec![object("Deployment", "web")],
            "db" => vec![object("StatefulSet", "db")],
            _ => Vec::new(),
        },
        notes: Vec::new(),
    }
}

/// update runs: s0 done, s1 (db) rolling.
fn updating(sim: &mut Sim) {
    sim.set_params(&[("X", "2")]);
    sim.reconcile_with(applied(|k| match k.task() {
        "db" => TaskOutcome::InProgress {
            message: "rolling".into(),
        },
        _ => TaskOutcome::Done,
    }));
    assert_eq!(sim.step_status("update", "main", "s0"), S::Complete);
    assert_eq!(sim.step_status("update", "main", "s1"), S::InProgress);
}

fn rolling(k: &TaskKey) -> TaskOutcome {
    match k.task() {
        "db" => TaskOutcome::InProgress {
            message: "rolling".into(),
        },
        _ => TaskOutcome::Done,
    }
}

#[test]
fn an_object_the_running_plan_is_done_with_is_recovered_beside_it() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.drift = vec![deleted(object("Deployment", "web"))];
    sim.reconcile_with(applied(rolling));
    let st = sim.status();
    assert_eq!(
        st.active_plan.as_ref().unwrap().name,
        "update",
        "the user's plan stays active"
    );
    assert_eq!(sim.plan_status("update"), S::InProgress);
    assert_eq!(sim.plan_status("recovery"), S::Complete);
    assert!(sim.has_event("DriftDetected", "Deployment default/web deleted"));
    assert!(sim.has_event(
        "PlanFinished",
        "plan recovery finished with status COMPLETE"
    ));
    let run = st
        .history
        .iter()
        .rev()
        .find(|r| r.plan == "recovery")
        .unwrap();
    assert_eq!(run.result, Some(S::Complete));
    assert!(st.auto_suppression.is_none());
}

#[test]
fn both_plans_show_in_progress_while_the_recovery_runs() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.drift = vec![deleted(object("Deployment", "web"))];
    sim.reconcile_with(applied(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    }));
    assert_eq!(sim.plan_status("update"), S::InProgress);
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    let active = sim.status().active_plan.clone().unwrap();
    assert_eq!(
        (active.name.as_str(), active.status),
        ("update", S::InProgress)
    );
    // The update ends first; the recovery goes on and then ends.
    sim.drift.clear();
    sim.reconcile_with(applied(|k| match k.plan() {
        "recovery" => TaskOutcome::InProgress {
            message: "rolling".into(),
        },
        _ => TaskOutcome::Done,
    }));
    assert_eq!(sim.plan_status("update"), S::Complete);
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    sim.reconcile_with(applied(|_| TaskOutcome::Done));
    assert_eq!(sim.plan_status("recovery"), S::Complete);
    assert_eq!(sim.status().active_plan.as_ref().unwrap().name, "update");
}

#[test]
fn an_object_in_the_running_plans_path_waits_for_it_with_a_blocker_naming_the_step() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.drift = vec![deleted(object("StatefulSet", "db"))];
    sim.reconcile_with(applied(rolling));
    assert!(!sim.status().plan_status.contains_key("recovery"));
    let b = sim
        .status()
        .blockers
        .iter()
        .find(|b| b.plan.as_deref() == Some("recovery"))
        .unwrap();
    assert!(
        b.message.contains(
            "recovery waits for plan \"update\", which works on it (phase \"main\", step \"s1\")"
        ),
        "{}",
        b.message
    );
}

#[test]
fn an_untouched_object_goes_ahead_while_a_touched_one_waits() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.drift = vec![
        deleted(object("StatefulSet", "db")),
        deleted(object("Deployment", "web")),
    ];
    sim.reconcile_with(applied(rolling));
    let ps = &sim.status().plan_status["recovery"];
    let phases: Vec<_> = ps.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(phases, ["Deployment default/web"]);
}

#[test]
fn a_step_whose_objects_are_not_known_holds_every_recovery() {
    let mut sim = deployed();
    // The update's steps never ran and deploy's tasks recorded nothing.
    for ps in sim.inst.status.as_mut().unwrap().plan_status.values_mut() {
        for t in ps
            .phases
            .iter_mut()
            .flat_map(|p| &mut p.steps)
            .flat_map(|s| &mut s.tasks)
        {
            t.objects.clear();
        }
    }
    sim.set_params(&[("X", "2")]);
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    sim.drift = vec![deleted(object("ConfigMap", "elsewhere"))];
    sim.reconcile(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    });
    assert!(!sim.status().plan_status.contains_key("recovery"));
    assert!(
        sim.status()
            .blockers
            .iter()
            .any(|b| b.message.contains("not known before it runs")),
        "{:?}",
        sim.status().blockers
    );
}

#[test]
fn a_plan_started_stops_a_recovery_running_beside_the_previous_one() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.drift = vec![deleted(object("Deployment", "web"))];
    sim.reconcile_with(applied(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    }));
    assert_eq!(sim.plan_status("recovery"), S::InProgress);
    sim.drift.clear();
    sim.set_params(&[("X", "3")]);
    sim.reconcile_with(applied(|_| TaskOutcome::InProgress {
        message: "rolling".into(),
    }));
    assert_eq!(sim.plan_status("recovery"), S::FatalError);
    assert!(
        sim.status().plan_status["recovery"]
            .message
            .contains("update overrides it")
    );
    assert!(sim.status().auto_suppression.is_none(), "no failure");
    assert!(!sim.has_event(
        "PlanFinished",
        "plan recovery finished with status FATAL_ERROR"
    ));
}

fn pod_op(id: &str, pod: &str) -> kudo_api::PlanOperation {
    kudo_api::PlanOperation {
        pod: Some(pod.into()),
        pod_uid: Some(format!("uid-{pod}")),
        ..op(id, PlanAction::RestartPod, None, None)
    }
}

#[test]
fn a_pod_restart_of_a_workload_the_plan_is_done_with_runs_beside_it() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.operate(pod_op("r1", "web-5d9f8-abcde"));
    sim.reconcile_with(applied(rolling));
    assert_eq!(
        sim.status().operations.last().unwrap().result,
        "restart of pod web-5d9f8-abcde started in plan recovery"
    );
    assert_eq!(sim.plan_status("recovery"), S::Complete);
    assert_eq!(sim.plan_status("update"), S::InProgress);
}

#[test]
fn a_pod_restart_of_a_workload_the_plan_works_on_is_a_no_op_naming_the_step() {
    let mut sim = deployed();
    updating(&mut sim);
    sim.operate(pod_op("r2", "db-0"));
    sim.reconcile_with(applied(rolling));
    let result = &sim.status().operations.last().unwrap().result;
    assert!(
        result.starts_with(
            "no-op: plan \"update\" is working on pod db-0's workload (phase \"main\", step \"s1\")"
        ),
        "{result}"
    );
    assert!(!sim.status().plan_status.contains_key("recovery"));
}
