//! Whatever a task reports (an API error, a template's `fail` text, a pipe
//! pod's stderr, a health annotation's message), the status the engine
//! writes stays far below what an API server stores.

mod support;

use kudo_api::ExecutionStatus as S;
use kudo_engine::TaskOutcome;
use support::*;

fn sim() -> Sim {
    Sim::new(
        instance("op-1"),
        ov("op-1", vec![("deploy", simple_plan(3))], vec![]),
    )
}

fn status_bytes(sim: &Sim) -> usize {
    serde_json::to_vec(sim.status()).map_or(0, |v| v.len())
}

#[test]
fn a_sixteen_megabyte_task_message_leaves_a_small_status() {
    let huge = "x".repeat(16 << 20);
    let outcomes: [fn(String) -> TaskOutcome; 3] = [
        |message| TaskOutcome::Fatal { message },
        |message| TaskOutcome::Transient { message },
        |message| TaskOutcome::InProgress { message },
    ];
    for outcome in outcomes {
        let mut sim = sim();
        sim.reconcile(|_| outcome(huge.clone()));
        assert_ne!(sim.plan_status("deploy"), S::Complete);
        let size = status_bytes(&sim);
        assert!(size < 64 * 1024, "status of {size} bytes");
        let step = &sim.status().plan_status["deploy"].phases[0].steps[0];
        assert!(
            step.message.ends_with("… (16,777,216 bytes in all)"),
            "{}",
            &step.message[step.message.len() - 40..]
        );
    }
}
