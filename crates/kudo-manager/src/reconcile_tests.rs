//! Tests of the reconciler's pure helpers.

use super::*;

fn run_task_action(step: &str) -> Action {
    Action::RunTask {
        key: TaskKey::new("deploy", "u", "main", step, "t"),
    }
}

#[test]
fn tasks_already_run_in_this_reconcile_are_not_run_again() {
    let actions = vec![
        run_task_action("a"),
        Action::AddFinalizer,
        run_task_action("b"),
    ];
    let mut ran = HashSet::new();
    let todo = tasks_to_run(&actions, &ran);
    let steps: Vec<&str> = todo.iter().map(TaskKey::step).collect();
    assert_eq!(steps, ["a", "b"]);
    ran.insert(todo[0].clone());
    let later = tasks_to_run(&actions, &ran);
    let steps: Vec<&str> = later.iter().map(TaskKey::step).collect();
    assert_eq!(steps, ["b"]);
}

fn event(reason: &str) -> Action {
    Action::Event {
        event_type: EventType::Normal,
        reason: reason.into(),
        message: format!("{reason} happened"),
    }
}

#[test]
fn events_accumulate_over_passes_once_each_and_other_actions_are_the_last_pass() {
    let mut work = Working::from_stored(&Instance::new("i", Default::default()));
    work.absorb(kudo_engine::Effects {
        actions: vec![event("PlanStarted"), run_task_action("a")],
        requeue_after: Some(Duration::from_secs(5)),
        changed: true,
    });
    work.absorb(kudo_engine::Effects {
        actions: vec![event("PlanStarted"), event("PlanFinished")],
        requeue_after: None,
        changed: false,
    });
    assert_eq!(
        work.events,
        vec![event("PlanStarted"), event("PlanFinished")]
    );
    assert!(work.actions.is_empty(), "the last pass asked for no task");
    assert_eq!(work.requeue_after, None);
    assert!(work.changed, "an earlier pass changed the status");
}
