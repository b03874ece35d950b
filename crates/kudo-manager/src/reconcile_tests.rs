//! Tests of the reconciler's pure helpers.

use super::events::{MAX_EVENT_ACTION, MAX_EVENT_NOTE, head_bytes};
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

fn plan(name: &str, uid: &str, status: kudo_api::ExecutionStatus) -> kudo_api::PlanStatus {
    kudo_api::PlanStatus {
        name: name.into(),
        uid: Some(uid.into()),
        status: Some(status),
        ..Default::default()
    }
}

#[tokio::test]
async fn recovery_beside_a_running_plan_counts_as_a_second_active_plan() {
    use kudo_api::ExecutionStatus as S;
    // Nothing listens there: the test never sends a request.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let ctx = Context::for_tests(kube::Client::try_from(config).unwrap());
    let mut inst = Instance::new("zk", Default::default());
    inst.metadata.namespace = Some("team".into());
    let deploying = InstanceStatus {
        plan_status: [("deploy".to_string(), plan("deploy", "d1", S::InProgress))].into(),
        ..Default::default()
    };
    let mut both = deploying.clone();
    both.plan_status
        .insert("recovery".into(), plan("recovery", "r1", S::InProgress));
    count_plans(&ctx, &inst, &InstanceStatus::default(), &deploying);
    count_plans(&ctx, &inst, &deploying, &both);
    let text = ctx.metrics.render();
    assert!(text.contains("kudo_manager_active_plans 2"), "{text}");
    let mut recovered = both.clone();
    recovered
        .plan_status
        .insert("recovery".into(), plan("recovery", "r1", S::Complete));
    count_plans(&ctx, &inst, &both, &recovered);
    let text = ctx.metrics.render();
    assert!(text.contains("kudo_manager_active_plans 1"), "{text}");
    assert!(
        text.contains(r#"plans_started_total{plan="recovery"} 1"#),
        "{text}"
    );
    ctx.forget_instance(&inst);
    assert!(ctx.metrics.render().contains("kudo_manager_active_plans 0"));
}

fn at_version(rv: &str) -> Instance {
    let mut inst = Instance::new("zk", Default::default());
    inst.metadata.namespace = Some("team".into());
    inst.metadata.resource_version = Some(rv.into());
    inst
}

#[tokio::test]
async fn a_cached_version_our_writes_replaced_gives_way_to_our_last_write_and_an_unknown_one_is_read_again()
 {
    // Nothing listens there: the test never sends a request.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let ctx = Context::for_tests(kube::Client::try_from(config).unwrap());
    // Two writes in one reconcile: the finalizer (1 -> 2), then status (2 -> 3).
    remember_write(&ctx, &at_version("1"), &at_version("2"));
    remember_write(&ctx, &at_version("2"), &at_version("3"));
    for replaced in ["1", "2"] {
        let Copy::OurWrite(copy) = current_copy(&ctx, Arc::new(at_version(replaced))) else {
            panic!("version {replaced} was replaced by our write");
        };
        assert_eq!(copy.resource_version().as_deref(), Some("3"));
    }
    assert!(matches!(
        current_copy(&ctx, Arc::new(at_version("5"))),
        Copy::Unsure(_)
    ));
    assert!(
        matches!(
            current_copy(&ctx, Arc::new(at_version("1"))),
            Copy::Cached(_)
        ),
        "placed once, the note of our write is gone"
    );
    remember_write(&ctx, &at_version("5"), &at_version("6"));
    assert!(matches!(
        current_copy(&ctx, Arc::new(at_version("6"))),
        Copy::Cached(_)
    ));
}

#[test]
fn an_event_text_is_cut_to_the_servers_byte_limits_at_a_character() {
    let text = "ü".repeat(700); // 1,400 bytes, 700 characters
    let note = head_bytes(&text, MAX_EVENT_NOTE);
    assert_eq!(note.len(), 1024);
    assert_eq!(head_bytes(&text, MAX_EVENT_ACTION).len(), 128);
    assert_eq!(head_bytes("ab€", 3), "ab", "a character is not split");
    assert_eq!(head_bytes("short", 128), "short");
}
