//! `plan history` text: `status.history` as a table, or, for Instances a
//! KUDO manager wrote (no history), what `status.planStatus` still tells.
//! Pure.

use kudo_api::{InstanceStatus, PlanRun};

use crate::output::table;
use crate::plan_tree::format_time;

/// History rows, oldest first: from `status.history`, else one row per
/// plan in `status.planStatus` that ever ran.
pub fn runs(status: &InstanceStatus) -> Vec<PlanRun> {
    if !status.history.is_empty() {
        return status.history.clone();
    }
    status
        .plan_status
        .iter()
        .filter(|(_, p)| p.uid.is_some() || p.last_updated_timestamp.is_some())
        .filter_map(|(name, p)| {
            let started = p
                .started_at
                .clone()
                .or_else(|| p.last_updated_timestamp.clone())?;
            let status = p.status();
            Some(PlanRun {
                plan: name.clone(),
                uid: p.uid.clone().unwrap_or_default(),
                trigger: String::new(),
                started,
                finished: p.finished_at.clone().or_else(|| {
                    status
                        .is_terminal()
                        .then(|| p.last_updated_timestamp.clone())
                        .flatten()
                }),
                result: status.is_terminal().then_some(status),
                message: p.message.clone(),
                parameters: p.parameters.clone(),
            })
        })
        .collect()
}

/// A run's RESULT: its final status; `running` while it runs; and
/// `SUPERSEDED` when it ended without one of its own (a new request of
/// the same plan replaced it: older managers recorded the status it had
/// then, such as WAITING).
fn result_text(run: &PlanRun) -> String {
    match (run.result, &run.finished) {
        (Some(result), _) if result.is_terminal() => result.to_string(),
        (_, Some(_)) => "SUPERSEDED".into(),
        (Some(result), None) => result.to_string(),
        (None, None) => "running".into(),
    }
}

/// The history table of an Instance.
pub fn render(instance: &str, namespace: &str, status: &InstanceStatus) -> String {
    let runs = runs(status);
    if runs.is_empty() {
        return format!("No plan ever run for instance {instance} in namespace {namespace}\n");
    }
    let source = if status.history.is_empty() {
        " (from planStatus: this Instance has no status.history)"
    } else {
        ""
    };
    let rows = runs
        .iter()
        .map(|run| {
            vec![
                run.plan.clone(),
                run.uid.clone(),
                match (run.trigger.is_empty(), run.parameters.is_empty()) {
                    (true, true) => "-".into(),
                    (false, true) => run.trigger.clone(),
                    (_, false) => format!(
                        "{} ({})",
                        if run.trigger.is_empty() {
                            "-"
                        } else {
                            &run.trigger
                        },
                        crate::plan_tree::execution_values_text(&run.parameters)
                    ),
                },
                format_time(&run.started),
                run.finished
                    .as_ref()
                    .map_or_else(|| "-".into(), format_time),
                result_text(run),
                run.message.clone(),
            ]
        })
        .collect();
    format!(
        "History of plan executions for instance \"{instance}\" in namespace \"{namespace}\"{source}:\n{}",
        table(
            &[
                "plan", "uid", "trigger", "started", "finished", "result", "message"
            ],
            rows
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kudo_api::{ExecutionStatus, PlanStatus};
    use pretty_assertions::assert_eq;

    fn time(text: &str) -> Time {
        Time(text.parse().unwrap())
    }

    #[test]
    fn history_prints_every_run_with_trigger_and_result() {
        let status = InstanceStatus {
            history: vec![
                PlanRun {
                    plan: "deploy".into(),
                    uid: "u1".into(),
                    trigger: "create".into(),
                    started: time("2026-11-21T10:00:00Z"),
                    finished: Some(time("2026-11-21T10:01:00Z")),
                    result: Some(ExecutionStatus::Complete),
                    message: String::new(),
                    parameters: BTreeMap::new(),
                },
                PlanRun {
                    plan: "update".into(),
                    uid: "u2".into(),
                    trigger: "parameter REPLICAS".into(),
                    started: time("2026-11-21T11:00:00Z"),
                    finished: None,
                    result: None,
                    message: String::new(),
                    parameters: BTreeMap::new(),
                },
            ],
            ..Default::default()
        };
        let text = render("app", "default", &status);
        let expected = "\
History of plan executions for instance \"app\" in namespace \"default\":
PLAN     UID   TRIGGER              STARTED               FINISHED              RESULT     MESSAGE
deploy   u1    create               2026-11-21 10:00:00   2026-11-21 10:01:00   COMPLETE
update   u2    parameter REPLICAS   2026-11-21 11:00:00   -                     running
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_run_given_values_shows_them_beside_its_trigger_on_one_line() {
        let status = InstanceStatus {
            history: vec![PlanRun {
                plan: "backup".into(),
                uid: "u3".into(),
                trigger: "manual".into(),
                started: time("2026-11-21T12:00:00Z"),
                finished: None,
                result: None,
                message: String::new(),
                parameters: BTreeMap::from([
                    ("BUCKET".to_string(), "x".to_string()),
                    ("NOTE".to_string(), "two\nlines".to_string()),
                ]),
            }],
            ..Default::default()
        };
        let text = render("app", "default", &status);
        let row = text.lines().nth(2).unwrap();
        assert!(
            row.contains(r#"manual (BUCKET=x, NOTE="two\nlines")"#),
            "{text}"
        );
    }

    #[test]
    fn kudo_written_instances_fall_back_to_plan_status() {
        let status = InstanceStatus {
            plan_status: BTreeMap::from([
                (
                    "deploy".to_string(),
                    PlanStatus {
                        status: Some(ExecutionStatus::Complete),
                        uid: Some("u1".into()),
                        last_updated_timestamp: Some(time("2026-11-21T10:01:00Z")),
                        ..Default::default()
                    },
                ),
                ("backup".to_string(), PlanStatus::default()),
            ]),
            ..Default::default()
        };
        let runs = runs(&status);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].plan, "deploy");
        assert_eq!(runs[0].result, Some(ExecutionStatus::Complete));
        assert!(render("app", "default", &status).contains("from planStatus"));
    }

    #[test]
    fn a_superseded_run_says_so_whatever_an_older_manager_recorded() {
        let run = |finished: Option<&str>, result: Option<ExecutionStatus>| PlanRun {
            plan: "update".into(),
            uid: "u".into(),
            trigger: "parameter A".into(),
            started: time("2026-11-21T11:00:00Z"),
            finished: finished.map(time),
            result,
            message: "restarted by a new request (parameter A)".into(),
            parameters: BTreeMap::new(),
        };
        let done = Some("2026-11-21T11:01:00Z");
        assert_eq!(result_text(&run(done, None)), "SUPERSEDED");
        assert_eq!(
            result_text(&run(done, Some(ExecutionStatus::Waiting))),
            "SUPERSEDED"
        );
        assert_eq!(
            result_text(&run(done, Some(ExecutionStatus::FatalError))),
            "FATAL_ERROR"
        );
        assert_eq!(result_text(&run(None, None)), "running");
    }
}
