//! `plan status` text: the plan tree of an Instance in KUDO's layout, with
//! kudo-rs's step timestamps, task messages and blockers. Pure.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use kube::ResourceExt;
use kudo_api::{
    ExecutionStatus, Instance, InstanceMaintenance, InstanceStatus, MaintenanceResponse,
    OperatorVersionSpec, PhaseStatus, PlanStatus, StepStatus, Time,
};
use termtree::Tree;

use crate::style::{status_tag, warn};

/// `YYYY-MM-DD HH:MM:SS` in UTC, as KUDO printed timestamps.
pub fn format_time(time: &Time) -> String {
    time.0.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

/// The plan to show live statuses for: the running one, else the one the
/// manager reports as active, else the most recently updated.
pub fn active_plan_name(status: &InstanceStatus) -> Option<String> {
    if let Some((name, _)) = status
        .plan_status
        .iter()
        .find(|(_, p)| p.status().is_running())
    {
        return Some(name.clone());
    }
    if let Some(active) = &status.active_plan {
        return Some(active.name.clone());
    }
    status
        .plan_status
        .iter()
        .filter(|(_, p)| p.last_updated_timestamp.is_some())
        .max_by_key(|(_, p)| p.last_updated_timestamp.as_ref().map(|t| t.0))
        .map(|(name, _)| name.clone())
}

fn message_suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(" ({message})")
    }
}

fn strategy_text(raw: Option<&str>) -> &str {
    raw.unwrap_or("")
}

fn step_line(step: &StepStatus, colour: bool) -> String {
    let mut line = format!(
        "Step {} {}{}",
        step.name,
        status_tag(Some(step.status()), colour),
        message_suffix(&step.message)
    );
    if step.forced == Some(true) {
        line.push_str(", forced");
    }
    if let Some(started) = &step.started_at {
        let _ = write!(line, ", started {}", format_time(started));
    }
    if let Some(finished) = &step.finished_at {
        let _ = write!(line, ", finished {}", format_time(finished));
    }
    if let Some(attempts) = step.attempts.filter(|a| *a > 0) {
        let _ = write!(line, ", failed attempts {attempts}");
    }
    if let Some(retry) = &step.next_retry_at
        && step.status() == ExecutionStatus::Error
    {
        let _ = write!(line, ", next retry {}", format_time(retry));
    }
    line
}

fn step_tree(step: &StepStatus, colour: bool) -> Tree<String> {
    let mut tree = Tree::new(step_line(step, colour));
    if step.status() != ExecutionStatus::Complete {
        // A task whose message the step already shows adds nothing.
        for task in step
            .tasks
            .iter()
            .filter(|t| !t.message.is_empty() && t.message != step.message)
        {
            tree.push(Tree::new(format!(
                "Task {} {}{}",
                task.name,
                status_tag(Some(task.status.unwrap_or_default()), colour),
                message_suffix(&task.message)
            )));
        }
    }
    tree
}

fn phase_tree(phase: &PhaseStatus, strategy: Option<&str>, colour: bool) -> Tree<String> {
    let mut line = format!(
        "Phase {} ({} strategy) {}{}",
        phase.name,
        strategy_text(strategy),
        status_tag(Some(phase.status()), colour),
        message_suffix(&phase.message)
    );
    if phase.paused == Some(true) {
        line.push_str(", paused");
    }
    if let Some(approvals) = phase.canary_approvals.filter(|a| *a > 0) {
        let _ = write!(line, ", canary approvals {approvals}");
    }
    Tree::new(line).with_leaves(phase.steps.iter().map(|s| step_tree(s, colour)))
}

fn live_plan_tree(
    name: &str,
    plan: &PlanStatus,
    ov: Option<&OperatorVersionSpec>,
    colour: bool,
) -> Tree<String> {
    let ov_plan = ov.and_then(|o| o.plan(name));
    let mut line = format!(
        "Plan {name} ({} strategy) {}{}",
        strategy_text(ov_plan.and_then(|p| p.strategy.as_deref())),
        status_tag(Some(plan.status()), colour),
        message_suffix(&plan.message)
    );
    if plan.paused == Some(true) {
        line.push_str(", paused");
    }
    if let Some(updated) = &plan.last_updated_timestamp {
        let _ = write!(line, ", last updated {}", format_time(updated));
    }
    let phase_strategy = |phase: &str| {
        ov_plan
            .and_then(|p| p.phases.iter().find(|ph| ph.name == phase))
            .and_then(|ph| ph.strategy.as_deref())
    };
    Tree::new(line).with_leaves(
        plan.phases
            .iter()
            .map(|ph| phase_tree(ph, phase_strategy(&ph.name), colour)),
    )
}

fn inactive_plan_tree(name: &str, ov: &OperatorVersionSpec, colour: bool) -> Tree<String> {
    let tag = status_tag(None, colour);
    let Some(plan) = ov.plan(name) else {
        return Tree::new(format!("Plan {name} ( strategy) {tag}"));
    };
    let phases = plan.phases.iter().map(|phase| {
        Tree::new(format!(
            "Phase {} ({} strategy) {tag}",
            phase.name,
            strategy_text(phase.strategy.as_deref())
        ))
        .with_leaves(
            phase
                .steps
                .iter()
                .map(|step| Tree::new(format!("Step {} {tag}", step.name))),
        )
    });
    Tree::new(format!(
        "Plan {name} ({} strategy) {tag}",
        strategy_text(plan.strategy.as_deref())
    ))
    .with_leaves(phases)
}

/// The whole `plan status` text for an Instance and (when found) its
/// OperatorVersion spec.
pub fn render(instance: &Instance, ov: Option<&OperatorVersionSpec>, colour: bool) -> String {
    let name = instance.name_any();
    let namespace = instance.namespace().unwrap_or_default();
    let status = instance.status.clone().unwrap_or_default();
    let Some(active) = active_plan_name(&status) else {
        return format!(
            "No plan ever run for instance - nothing to show for instance {name}\n{}",
            maintenance_text(&status, colour)
        );
    };

    let mut plan_names: BTreeSet<String> = status.plan_status.keys().cloned().collect();
    if let Some(ov) = ov {
        plan_names.extend(ov.plans.keys().cloned());
    }
    let ov_name = instance
        .spec
        .operator_version
        .name
        .clone()
        .unwrap_or_default();
    let mut instance_tree = Tree::new(format!(
        "{name} (Operator-Version: \"{ov_name}\" Active-Plan: \"{active}\")"
    ));
    for plan in &plan_names {
        let live = status.plan_status.get(plan).filter(|_| *plan == active);
        let tree = match (live, ov) {
            (Some(live), _) => live_plan_tree(plan, live, ov, colour),
            (None, Some(ov)) if ov.plans.contains_key(plan) => inactive_plan_tree(plan, ov, colour),
            (None, _) => Tree::new(format!(
                "Plan {plan} ( strategy) {}",
                status_tag(None, colour)
            )),
        };
        instance_tree.push(tree);
    }
    let root = Tree::new(".".to_string()).with_leaves([instance_tree]);

    let mut out = format!("Plan(s) for \"{name}\" in namespace \"{namespace}\":\n{root}");
    out.push_str(&blockers_text(&name, &status, colour));
    out.push_str(&maintenance_text(&status, colour));
    out
}

/// `node n1 scheduled for maintenance START–END, answered Accepted` (with
/// the answer's message, e.g. why it Declined).
pub fn maintenance_line(maintenance: &InstanceMaintenance) -> String {
    let mut line = kudo_engine::maintenance::describe(
        &maintenance.nodes,
        maintenance.start.0,
        maintenance.end.0,
    );
    line.push_str(match maintenance.response {
        MaintenanceResponse::Accepted => ", answered Accepted",
        MaintenanceResponse::Declined => ", answered Declined",
        MaintenanceResponse::Pending => ", answer Pending (its maintenance plan has not finished)",
        MaintenanceResponse::NoResponse => ", NoResponse",
    });
    if !maintenance.message.is_empty() {
        let _ = write!(line, ": {}", maintenance.message);
    }
    line
}

/// The node maintenance the Instance was told of, blocker-style (it blocks
/// nothing: the answer is a hint to whoever runs the maintenance).
fn maintenance_text(status: &InstanceStatus, colour: bool) -> String {
    let Some(maintenance) = &status.maintenance else {
        return String::new();
    };
    let line = format!("  - {}", maintenance_line(maintenance));
    format!(
        "\nNode maintenance (see `kubectl kudo maintenance status`):\n{}\n",
        warn(&line, colour)
    )
}

/// The "why is nothing happening" section: blockers and automatic suppression.
pub fn blockers_text(instance: &str, status: &InstanceStatus, colour: bool) -> String {
    let mut out = String::new();
    if !status.blockers.is_empty() {
        out.push_str("\nBlockers:\n");
        for blocker in &status.blockers {
            let mut scope = Vec::new();
            for (label, value) in [
                ("plan", &blocker.plan),
                ("phase", &blocker.phase),
                ("step", &blocker.step),
            ] {
                if let Some(v) = value {
                    scope.push(format!("{label} {v}"));
                }
            }
            let mut line = format!("  - {:?}: {}", blocker.kind, blocker.message);
            if !scope.is_empty() {
                let _ = write!(line, " [{}]", scope.join(", "));
            }
            if let Some(until) = &blocker.until {
                let _ = write!(line, " (until {})", format_time(until));
            }
            out.push_str(&warn(&line, colour));
            out.push('\n');
        }
    }
    if let Some(auto) = &status.auto_suppression {
        let until = auto.until.as_ref().map_or_else(
            || "until cleared".to_string(),
            |u| format!("until {}", format_time(u)),
        );
        let _ = writeln!(
            out,
            "\nAutomatic plans are suppressed since {} ({until}): {}\n  clear with `kubectl kudo suppress clear --instance {instance}` or go back with `kubectl kudo rollback --instance {instance}`",
            format_time(&auto.since),
            auto.reason
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as MetaTime;
    use kudo_api::{Blocker, BlockerKind, InstanceSpec, Phase, Plan, Step};
    use pretty_assertions::assert_eq;

    fn time(text: &str) -> Time {
        MetaTime(text.parse().unwrap())
    }

    fn ov() -> OperatorVersionSpec {
        let plan = |name: &str| Plan {
            strategy: Some("serial".into()),
            phases: vec![Phase {
                name: name.into(),
                strategy: Some("parallel".into()),
                steps: vec![Step {
                    name: name.into(),
                    tasks: vec![],
                }],
            }],
        };
        OperatorVersionSpec {
            plans: BTreeMap::from([
                ("deploy".to_string(), plan("deploy")),
                ("validate".to_string(), plan("validate")),
            ]),
            ..Default::default()
        }
    }

    fn instance(status: Option<InstanceStatus>) -> Instance {
        let mut spec = InstanceSpec::default();
        spec.operator_version.name = Some("test-1.0".into());
        let mut inst = Instance::new("test", spec);
        inst.metadata.namespace = Some("default".into());
        inst.status = status;
        inst
    }

    fn failed_deploy() -> InstanceStatus {
        let step = StepStatus {
            name: "deploy".into(),
            status: Some(ExecutionStatus::FatalError),
            message: "error detail".into(),
            ..Default::default()
        };
        let phase = PhaseStatus {
            name: "deploy".into(),
            status: Some(ExecutionStatus::FatalError),
            steps: vec![step],
            ..Default::default()
        };
        InstanceStatus {
            plan_status: BTreeMap::from([(
                "deploy".to_string(),
                PlanStatus {
                    name: "deploy".into(),
                    status: Some(ExecutionStatus::FatalError),
                    last_updated_timestamp: Some(time("2019-10-17T01:01:01Z")),
                    phases: vec![phase],
                    ..Default::default()
                },
            )]),
            ..Default::default()
        }
    }

    #[test]
    fn failed_plan_prints_in_kudo_layout() {
        let text = render(&instance(Some(failed_deploy())), Some(&ov()), false);
        let expected = "\
Plan(s) for \"test\" in namespace \"default\":
.
└── test (Operator-Version: \"test-1.0\" Active-Plan: \"deploy\")
    ├── Plan deploy (serial strategy) [FATAL_ERROR], last updated 2019-10-17 01:01:01
    │   └── Phase deploy (parallel strategy) [FATAL_ERROR]
    │       └── Step deploy [FATAL_ERROR] (error detail)
    └── Plan validate (serial strategy) [NOT ACTIVE]
        └── Phase validate (parallel strategy) [NOT ACTIVE]
            └── Step validate [NOT ACTIVE]
";
        assert_eq!(text, expected);
    }

    #[test]
    fn task_lines_repeat_nothing_the_step_already_says() {
        let mut step = StepStatus {
            name: "app".into(),
            status: Some(ExecutionStatus::InProgress),
            message: "waiting".into(),
            tasks: vec![kudo_api::TaskStatus {
                name: "deploy".into(),
                message: "waiting".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            step_tree(&step, false).to_string(),
            "Step app [IN_PROGRESS] (waiting)\n"
        );
        step.tasks[0].message = "Deployment web: 1 of 3 ready".into();
        assert!(
            step_tree(&step, false)
                .to_string()
                .contains("Task deploy [NEVER_RUN] (Deployment web")
        );
    }

    #[test]
    fn instance_without_any_plan_run_says_so() {
        let text = render(&instance(None), Some(&ov()), false);
        assert_eq!(
            text,
            "No plan ever run for instance - nothing to show for instance test\n"
        );
    }

    #[test]
    fn running_plan_wins_over_a_more_recently_updated_one() {
        let mut status = failed_deploy();
        status.plan_status.insert(
            "validate".into(),
            PlanStatus {
                status: Some(ExecutionStatus::InProgress),
                last_updated_timestamp: Some(time("2019-10-16T00:00:00Z")),
                ..Default::default()
            },
        );
        assert_eq!(active_plan_name(&status).as_deref(), Some("validate"));
    }

    #[test]
    fn blockers_are_listed_with_scope_and_end() {
        let mut status = failed_deploy();
        status.blockers = vec![Blocker {
            kind: BlockerKind::MaintenanceWindow,
            message: "maintenance window closed".into(),
            until: Some(time("2026-11-23T21:00:00Z")),
            plan: Some("deploy".into()),
            ..Default::default()
        }];
        let text = blockers_text("test", &status, false);
        assert_eq!(
            text,
            "\nBlockers:\n  - MaintenanceWindow: maintenance window closed [plan deploy] (until 2026-11-23 21:00:00)\n"
        );
    }

    fn told(response: MaintenanceResponse, message: &str) -> InstanceMaintenance {
        InstanceMaintenance {
            nodes: vec!["n1".into()],
            start: time("2026-11-28T02:00:00Z"),
            end: time("2026-11-28T03:00:00Z"),
            response,
            message: message.into(),
            uid: None,
        }
    }

    #[test]
    fn node_maintenance_is_shown_with_the_answer_and_its_message() {
        let mut status = failed_deploy();
        status.maintenance = Some(told(MaintenanceResponse::Accepted, ""));
        let text = render(&instance(Some(status.clone())), Some(&ov()), false);
        assert!(
            text.ends_with(
                "\nNode maintenance (see `kubectl kudo maintenance status`):\n  - node n1 \
                 scheduled for maintenance 2026-11-28T02:00:00Z–2026-11-28T03:00:00Z, answered \
                 Accepted\n"
            ),
            "{text}"
        );
        let declined = told(MaintenanceResponse::Declined, "quorum would be lost");
        assert_eq!(
            maintenance_line(&declined),
            "node n1 scheduled for maintenance 2026-11-28T02:00:00Z–2026-11-28T03:00:00Z, \
             answered Declined: quorum would be lost"
        );
        status.maintenance = None;
        let without = render(&instance(Some(status)), Some(&ov()), false);
        assert!(!without.contains("maintenance"), "{without}");
    }
}
