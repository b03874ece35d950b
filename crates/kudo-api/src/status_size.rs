//! Making an Instance status small enough for the API server to store.
//!
//! Every message is bounded on its own ([`crate::message`]), but a status
//! holds many: a phase of hundreds of parallel steps, each with a task,
//! step and blocker message, twenty history entries with their values.
//! When the API server refuses a status as too large (its objects stay
//! under about 1.5 MiB), the writer calls [`shrink`] and tries again: what
//! the status is for (plan progress, what was applied, the values the
//! renders read) stays; explanations get shorter and old records go.

use crate::InstanceStatus;
use crate::message::bounded_to;

/// Bytes a message keeps once the status is shrunk.
pub const SHRUNK_MESSAGE_BYTES: usize = 512;

/// History entries kept once the status is shrunk (newest).
pub const SHRUNK_HISTORY: usize = 5;

/// Operation records kept once the status is shrunk (newest); the
/// operations mark still keeps older operations from running again.
pub const SHRUNK_OPERATIONS: usize = 32;

/// Whether an API server's answer to a write says the object is too large
/// to store (413, or etcd's "request is too large" in any code).
pub fn is_too_large(code: u16, message: &str) -> bool {
    code == 413 || message.contains("request is too large")
}

/// Cuts messages to [`SHRUNK_MESSAGE_BYTES`], keeps the newest
/// [`SHRUNK_HISTORY`] history entries (their values left out) and the newest
/// [`SHRUNK_OPERATIONS`] operation records. Returns whether anything changed.
pub fn shrink(status: &mut InstanceStatus) -> bool {
    let mut changed = false;
    let mut cut = |text: &mut String| {
        if text.len() > SHRUNK_MESSAGE_BYTES {
            *text = bounded_to(text, SHRUNK_MESSAGE_BYTES).into_owned();
            changed = true;
        }
    };
    for plan in status.plan_status.values_mut() {
        cut(&mut plan.message);
        for phase in &mut plan.phases {
            cut(&mut phase.message);
            for step in &mut phase.steps {
                cut(&mut step.message);
                for task in &mut step.tasks {
                    cut(&mut task.message);
                }
            }
        }
    }
    for blocker in &mut status.blockers {
        cut(&mut blocker.message);
    }
    if let Some(suppression) = &mut status.auto_suppression {
        cut(&mut suppression.reason);
    }
    for run in &mut status.history {
        cut(&mut run.message);
    }
    let excess = status.history.len().saturating_sub(SHRUNK_HISTORY);
    let had_values = status.history.iter().any(|run| !run.parameters.is_empty());
    status.history.drain(..excess);
    for run in &mut status.history {
        run.parameters.clear();
    }
    let extra_operations = status.operations.len().saturating_sub(SHRUNK_OPERATIONS);
    status.operations.drain(..extra_operations);
    changed || excess > 0 || had_values || extra_operations > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Blocker, PhaseStatus, PlanRun, PlanStatus, StepStatus, TaskStatus, Time};

    fn run(uid: &str) -> PlanRun {
        PlanRun {
            plan: "deploy".into(),
            uid: uid.into(),
            trigger: "spec".into(),
            started: serde_json::from_value::<Time>(serde_json::json!("2026-01-01T00:00:00Z"))
                .unwrap(),
            finished: None,
            result: None,
            message: String::new(),
            parameters: Default::default(),
            reason: None,
        }
    }

    fn big_status() -> InstanceStatus {
        let long = "x".repeat(8192);
        let steps = (0..200)
            .map(|i| StepStatus {
                name: format!("s{i}"),
                message: long.clone(),
                tasks: vec![TaskStatus {
                    name: "t".into(),
                    message: long.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect();
        let mut status = InstanceStatus::default();
        status.plan_status.insert(
            "deploy".into(),
            PlanStatus {
                name: "deploy".into(),
                message: long.clone(),
                phases: vec![PhaseStatus {
                    name: "p".into(),
                    steps,
                    ..Default::default()
                }],
                ..Default::default()
            },
        );
        status.blockers = vec![Blocker {
            message: long.clone(),
            ..Default::default()
        }];
        status.history = (0..20)
            .map(|i| PlanRun {
                message: long.clone(),
                parameters: [("A".to_string(), "v".repeat(64))].into(),
                ..run(&format!("u{i}"))
            })
            .collect();
        status
    }

    #[test]
    fn a_status_of_many_long_messages_shrinks_below_what_the_api_server_stores() {
        let mut status = big_status();
        let before = serde_json::to_vec(&status).unwrap().len();
        assert!(before > 3 << 20, "{before}");
        assert!(shrink(&mut status));
        let after = serde_json::to_vec(&status).unwrap().len();
        assert!(after < 400 << 10, "{after}");
        // Progress and names stay; the newest history entries stay.
        let steps = &status.plan_status["deploy"].phases[0].steps;
        assert_eq!(steps.len(), 200);
        assert!(steps[0].message.len() <= SHRUNK_MESSAGE_BYTES);
        let uids: Vec<_> = status.history.iter().map(|r| r.uid.as_str()).collect();
        assert_eq!(uids, ["u15", "u16", "u17", "u18", "u19"]);
        assert!(status.history.iter().all(|r| r.parameters.is_empty()));
    }

    #[test]
    fn a_small_status_is_left_as_it_is() {
        let mut status = InstanceStatus::default();
        status.history.push(run("u1"));
        let kept = status.clone();
        assert!(!shrink(&mut status));
        assert_eq!(status, kept);
    }

    #[test]
    fn too_large_is_read_from_the_code_or_etcds_message() {
        assert!(is_too_large(
            413,
            "Request entity too large: limit is 3145728"
        ));
        assert!(is_too_large(500, "etcdserver: request is too large"));
        assert!(!is_too_large(500, "etcdserver: leader changed"));
    }
}
