//! Making an Instance status small enough for the API server to store.
//!
//! Every message is bounded on its own ([`crate::message`]), but a status
//! holds many: a phase of hundreds of parallel steps, each with a task,
//! step and blocker message, twenty history entries with their values.
//! The writer estimates a status's size ([`estimate`], a walk that
//! serialises nothing) and, past [`SOFT_LIMIT`], writes it [`fit`] within
//! that size; should the API server still refuse it as too large
//! ([`is_too_large`]), it fits it within a quarter and tries once more.
//! What the status is for stays (plan progress, what was applied, the
//! values the renders read); explanations get shorter and old history goes.

use std::collections::BTreeMap;

use crate::InstanceStatus;
use crate::message::{bounded_to, head_bytes};

/// Estimated bytes past which a status is fitted before it is written:
/// the API server stores at most about 1.5 MiB per object, and the
/// estimate leaves out the JSON's keys and punctuation.
pub const SOFT_LIMIT: usize = 1 << 20;

/// Whether an API server's answer to a write says the object is too large
/// to store: 413 for a request body over its limit, etcd's "request is too
/// large" (answered as a 500) for an object over etcd's.
pub fn is_too_large(code: u16, message: &str) -> bool {
    code == 413 || message.contains("request is too large")
}

/// Bytes of the text a status holds (messages, names, values), which the
/// JSON exceeds only by its keys and punctuation.
pub fn estimate(status: &InstanceStatus) -> usize {
    let values = |v: &BTreeMap<String, String>| -> usize {
        v.iter().map(|(k, v)| k.len() + v.len() + 6).sum()
    };
    let mut total = 0;
    for plan in status.plan_status.values() {
        total += plan.name.len() + plan.message.len() + values(&plan.parameters);
        for phase in &plan.phases {
            total += phase.name.len() + phase.message.len();
            for step in &phase.steps {
                total += step.name.len() + step.message.len();
                for task in &step.tasks {
                    total += task.name.len() + task.message.len() + 64 * task.objects.len();
                }
            }
        }
    }
    total += status.applied_parameters.as_ref().map_or(0, values);
    total += status
        .last_successful
        .as_ref()
        .map_or(0, |l| values(&l.parameters));
    total += status
        .blockers
        .iter()
        .map(|b| b.message.len() + 32)
        .sum::<usize>();
    total += status
        .conditions
        .iter()
        .map(|c| c.message.len() + c.reason.len() + 64)
        .sum::<usize>();
    total += status
        .history
        .iter()
        .map(|r| {
            r.message.len() + r.reason.as_ref().map_or(0, String::len) + values(&r.parameters) + 96
        })
        .sum::<usize>();
    total += status
        .operations
        .iter()
        .map(|o| o.id.len() + o.result.len() + 64)
        .sum::<usize>();
    total += status
        .recoveries
        .iter()
        .map(|r| r.cause.len() + 32 * r.recovered_at.len() + 128)
        .sum::<usize>();
    total
}

/// Shortens `status` until [`estimate`] is within `limit` bytes, in two
/// stages: messages cut to 512 bytes and the five newest history entries
/// kept without their values; then messages cut to 64 bytes and only the
/// newest history entry kept. Returns whether anything changed; the
/// status may still be over `limit` (names and values are kept whole).
pub fn fit(status: &mut InstanceStatus, limit: usize) -> bool {
    let mut changed = false;
    for (message_bytes, history) in [(512, 5), (64, 1)] {
        if estimate(status) <= limit {
            break;
        }
        changed |= shorten(status, message_bytes, history);
    }
    changed
}

fn shorten(status: &mut InstanceStatus, max: usize, history: usize) -> bool {
    let excess = status.history.len().saturating_sub(history);
    status.history.drain(..excess);
    let mut changed = excess > 0;
    let mut cut = |text: &mut String| {
        if text.len() > max {
            *text = recut(text, max);
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
    for condition in &mut status.conditions {
        cut(&mut condition.message);
    }
    if let Some(suppression) = &mut status.auto_suppression {
        cut(&mut suppression.reason);
    }
    if let Some(reason) = status.upgrades.as_mut().and_then(|u| u.reason.as_mut()) {
        cut(reason);
    }
    for record in &mut status.operations {
        cut(&mut record.result);
    }
    for record in &mut status.recoveries {
        cut(&mut record.cause);
    }
    for run in &mut status.history {
        cut(&mut run.message);
        if let Some(reason) = &mut run.reason {
            cut(reason);
        }
    }
    let had_values = status.history.iter().any(|run| !run.parameters.is_empty());
    for run in &mut status.history {
        run.parameters.clear();
    }
    changed || had_values
}

/// `text` within `max` bytes; a message cut before keeps the length it
/// gave of the whole (`… (N bytes in all)`), not its own.
fn recut(text: &str, max: usize) -> String {
    const MARK: &str = "… (";
    if text.ends_with(" bytes in all)")
        && let Some(at) = text.rfind(MARK)
    {
        let tail = &text[at..];
        if tail.len() < max {
            return format!("{}{tail}", head_bytes(&text[..at], max - tail.len()));
        }
    }
    bounded_to(text, max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::bounded_to;
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
        let long = bounded_to(&"x".repeat(20_000), 8192).into_owned();
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
    fn a_status_of_many_long_messages_fits_below_what_the_api_server_stores() {
        let mut status = big_status();
        let before = serde_json::to_vec(&status).unwrap().len();
        assert!(before > 3 << 20, "{before}");
        assert!(estimate(&status) > SOFT_LIMIT);
        assert!(fit(&mut status, SOFT_LIMIT));
        let after = serde_json::to_vec(&status).unwrap().len();
        assert!(after < 400 << 10, "{after}");
        // Progress and names stay; the newest history entries stay.
        let steps = &status.plan_status["deploy"].phases[0].steps;
        assert_eq!(steps.len(), 200);
        assert!(steps[0].message.len() <= 512);
        assert!(
            steps[0].message.ends_with("(20,000 bytes in all)"),
            "{}",
            steps[0].message
        );
        let uids: Vec<_> = status.history.iter().map(|r| r.uid.as_str()).collect();
        assert_eq!(uids, ["u15", "u16", "u17", "u18", "u19"]);
        assert!(status.history.iter().all(|r| r.parameters.is_empty()));
    }

    #[test]
    fn a_tighter_limit_cuts_further_and_keeps_the_newest_run() {
        let mut status = big_status();
        assert!(fit(&mut status, SOFT_LIMIT / 16));
        let steps = &status.plan_status["deploy"].phases[0].steps;
        assert!(steps.iter().all(|s| s.message.len() <= 64));
        let uids: Vec<_> = status.history.iter().map(|r| r.uid.as_str()).collect();
        assert_eq!(uids, ["u19"]);
    }

    #[test]
    fn a_message_cut_before_keeps_the_length_of_the_whole() {
        let once = bounded_to(&"y".repeat(3 << 20), 8192).into_owned();
        let twice = recut(&once, 512);
        assert!(twice.len() <= 512);
        assert!(twice.ends_with("(3,145,728 bytes in all)"), "{twice}");
    }

    #[test]
    fn a_small_status_is_left_as_it_is() {
        let mut status = InstanceStatus::default();
        status.history.push(run("u1"));
        let kept = status.clone();
        assert!(!fit(&mut status, SOFT_LIMIT));
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
