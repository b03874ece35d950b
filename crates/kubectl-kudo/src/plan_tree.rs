//! `plan status` text: the plan tree of an Instance in KUDO's layout, with
//! kudo-rs's step timestamps, task messages and blockers. Pure.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use kube::ResourceExt;
use kudo_api::hint::KudoCommand;
use kudo_api::{
    ExecutionStatus, Instance, InstanceMaintenance, InstanceStatus, MaintenanceResponse,
    OperatorVersionSpec, PhaseStatus, Plan, PlanStatus, StepStatus, Time,
};
use termtree::Tree;

use crate::style::{status_tag, warn};

/// `YYYY-MM-DD HH:MM:SS` in UTC, as KUDO printed timestamps.
pub fn format_time(time: &Time) -> String {
    time.0.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

/// The plan to show live statuses for: the active one while it runs (a
/// recovery may run beside it), else a running one, else the one the
/// manager reports as active, else the most recently updated.
pub fn active_plan_name(status: &InstanceStatus) -> Option<String> {
    if let Some(active) = &status.active_plan
        && status
            .plan_status
            .get(&active.name)
            .is_some_and(|p| p.status().is_running())
    {
        return Some(active.name.clone());
    }
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

/// The message of a plan or phase, unless `, paused` says it already.
fn unless_paused(message: &str, paused: Option<bool>) -> String {
    if paused == Some(true) && message == "paused" {
        String::new()
    } else {
        message_suffix(message)
    }
}

/// `(serial strategy)`; a plan or phase without one runs in parallel, as
/// in KUDO.
fn strategy_text(raw: Option<&str>) -> &str {
    raw.unwrap_or("parallel")
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
        unless_paused(&phase.message, phase.paused)
    );
    if phase.paused == Some(true) {
        line.push_str(", paused");
    }
    if let Some(approvals) = phase.canary_approvals.filter(|a| *a > 0) {
        let _ = write!(line, ", canary approvals {approvals}");
    }
    Tree::new(line).with_leaves(phase.steps.iter().map(|s| step_tree(s, colour)))
}

/// The definition of a plan: the OperatorVersion's, or for `recovery`,
/// which no package has, the one the engine runs from its status.
fn plan_definition<'a>(
    name: &str,
    plan: &PlanStatus,
    ov: Option<&'a OperatorVersionSpec>,
) -> Option<std::borrow::Cow<'a, Plan>> {
    if let Some(def) = ov.and_then(|o| o.plan(name)) {
        return Some(std::borrow::Cow::Borrowed(def));
    }
    (name == kudo_api::names::RECOVERY_PLAN)
        .then(|| std::borrow::Cow::Owned(kudo_engine::recovery::plan_definition(plan)))
}

/// The values given to one execution as `K=V, K2=V2`: plain when at most
/// 100 characters without control characters (history already keeps a
/// long value as its preview), else quoted and cut as messages show values,
/// so a table cell stays one line. Shown as plainly as `spec.parameters`,
/// which anyone who can read the Instance reads already.
pub fn execution_values_text(values: &std::collections::BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (i, (name, value)) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let plain = value.chars().nth(100).is_none() && !value.chars().any(char::is_control);
        if plain && !value.is_empty() {
            let _ = write!(out, "{name}={value}");
        } else {
            let _ = write!(out, "{name}={}", kudo_api::preview(value));
        }
    }
    out
}

fn live_plan_tree(
    name: &str,
    plan: &PlanStatus,
    ov: Option<&OperatorVersionSpec>,
    colour: bool,
) -> Tree<String> {
    let definition = plan_definition(name, plan, ov);
    let ov_plan = definition.as_deref();
    let mut line = format!(
        "Plan {name} ({} strategy) {}{}",
        strategy_text(ov_plan.and_then(|p| p.strategy.as_deref())),
        status_tag(Some(plan.status()), colour),
        unless_paused(&plan.message, plan.paused)
    );
    if plan.paused == Some(true) {
        line.push_str(", paused");
    }
    if !plan.parameters.is_empty() {
        let _ = write!(
            line,
            ", run with {}",
            execution_values_text(&plan.parameters)
        );
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
        return Tree::new(format!("Plan {name} {tag}"));
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
        // The active plan, and any plan that ran before: its last run.
        let live = status
            .plan_status
            .get(plan)
            .filter(|p| *plan == active || p.uid.is_some());
        let tree = match (live, ov) {
            (Some(live), _) => live_plan_tree(plan, live, ov, colour),
            (None, Some(ov)) if ov.plans.contains_key(plan) => inactive_plan_tree(plan, ov, colour),
            (None, _) => Tree::new(format!("Plan {plan} {}", status_tag(None, colour))),
        };
        instance_tree.push(tree);
    }
    let root = Tree::new(".".to_string()).with_leaves([instance_tree]);

    let mut out = format!("Plan(s) for \"{name}\" in namespace \"{namespace}\":\n{root}");
    out.push_str(&ready_text(&status, colour));
    out.push_str(&crate::history::why_text(&status, &active));
    out.push_str(&blockers_text(&name, &namespace, &status, colour));
    out.push_str(&maintenance_text(&status, colour));
    out
}

/// The `Ready` condition, if the manager wrote one.
pub fn ready_condition(status: &InstanceStatus) -> Option<&kudo_api::Condition> {
    status.conditions.iter().find(|c| c.type_ == "Ready")
}

/// `Ready: False (ResourceNotReady: Deployment ns/web: 1 of 2 ...)`: a
/// COMPLETE plan says what was applied, Ready whether it is healthy now.
fn ready_text(status: &InstanceStatus, colour: bool) -> String {
    let Some(ready) = ready_condition(status) else {
        return String::new();
    };
    let mut line = format!("\nReady: {} ({}", ready.status, ready.reason);
    if !ready.message.is_empty() {
        let _ = write!(line, ": {}", ready.message);
    }
    line.push(')');
    if ready.status == "False" {
        line = warn(&line, colour);
    }
    line.push('\n');
    line
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
pub fn blockers_text(
    instance: &str,
    namespace: &str,
    status: &InstanceStatus,
    colour: bool,
) -> String {
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
            "\nAutomatic plans are suppressed since {} ({until}): {}\n  clear with `{}` or go back with `{}`",
            format_time(&auto.since),
            auto.reason,
            KudoCommand::new("suppress clear", instance).namespace(namespace),
            KudoCommand::new("rollback", instance).namespace(namespace),
        );
    }
    out
}

#[cfg(test)]
#[path = "plan_tree_tests.rs"]
mod tests;
