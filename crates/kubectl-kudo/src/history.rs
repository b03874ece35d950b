//! `plan history` text: `status.history` as a table, or, for Instances a
//! KUDO manager wrote (no history), what `status.planStatus` still tells.
//! Pure.

use std::fmt::Write as _;

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
                reason: None,
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

/// For `plan status`: why the active plan's run moved the Instance (its
/// history's reason), and what `status.upgrades` says of a tracked channel.
pub fn why_text(status: &InstanceStatus, active: &str) -> String {
    let mut out = String::new();
    let uid = status
        .plan_status
        .get(active)
        .and_then(|p| p.uid.as_deref());
    if let Some(reason) = status
        .history
        .iter()
        .rev()
        .find(|r| r.plan == active && Some(r.uid.as_str()) == uid)
        .and_then(|r| r.reason.as_deref())
    {
        let _ = writeln!(out, "\nWhy plan {active} ran: {reason}");
    }
    if let Some(u) = &status.upgrades {
        let _ = writeln!(
            out,
            "\nUpgrades: installed {}, available {}",
            u.installed.as_deref().unwrap_or("-"),
            u.available.as_deref().unwrap_or("-")
        );
        if let Some(last) = &u.last_change {
            let _ = writeln!(out, "  last move: {last}");
        }
        if let Some(reason) = &u.reason {
            let _ = writeln!(out, "  no move now: {reason}");
        }
        if let Some(skipped) = &u.skipped {
            let _ = writeln!(
                out,
                "  skipped: {skipped} (left by hand; not installed again by itself)"
            );
        }
    }
    out
}

/// The trigger column: the trigger, why it moved the Instance, and the
/// values given for that run.
fn trigger_text(run: &PlanRun) -> String {
    let mut text = if run.trigger.is_empty() {
        "-".to_string()
    } else {
        run.trigger.clone()
    };
    if let Some(reason) = &run.reason {
        let _ = write!(text, " ({reason})");
    }
    if !run.parameters.is_empty() {
        let _ = write!(
            text,
            " ({})",
            crate::plan_tree::execution_values_text(&run.parameters)
        );
    }
    text
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
                trigger_text(run),
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
                    reason: None,
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
                    reason: None,
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
                reason: None,
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
            reason: None,
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

    fn upgrade_run() -> InstanceStatus {
        InstanceStatus {
            plan_status: BTreeMap::from([(
                "upgrade".to_string(),
                PlanStatus {
                    uid: Some("u9".into()),
                    ..Default::default()
                },
            )]),
            history: vec![PlanRun {
                plan: "upgrade".into(),
                uid: "u9".into(),
                trigger: "upgrade".into(),
                started: time("2026-11-21T12:00:00Z"),
                finished: None,
                result: None,
                message: String::new(),
                parameters: BTreeMap::new(),
                reason: Some("channel stable: 1.3.0 → 1.4.0".into()),
            }],
            upgrades: Some(kudo_api::upgrades::UpgradeStatus {
                installed: Some("1.4.0".into()),
                available: Some("1.5.0".into()),
                reason: Some("channel stable: 1.4.0 → 1.5.0: waiting for approval".into()),
                skipped: Some("1.3.1".into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn history_shows_why_an_upgrade_ran_beside_its_trigger() {
        let text = render("app", "default", &upgrade_run());
        assert!(
            text.contains("upgrade (channel stable: 1.3.0 → 1.4.0)"),
            "{text}"
        );
    }

    #[test]
    fn plan_status_says_why_the_active_plan_ran_and_what_the_channel_offers() {
        let text = why_text(&upgrade_run(), "upgrade");
        assert!(
            text.contains("Why plan upgrade ran: channel stable: 1.3.0 → 1.4.0"),
            "{text}"
        );
        assert!(text.contains("installed 1.4.0, available 1.5.0"), "{text}");
        assert!(
            text.contains("no move now: channel stable: 1.4.0 → 1.5.0: waiting for approval"),
            "{text}"
        );
        assert!(text.contains("skipped: 1.3.1"), "{text}");
        assert_eq!(why_text(&InstanceStatus::default(), "deploy"), "");
    }
}
