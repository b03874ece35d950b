//! `maintenance status` text and `down --wait` progress, pure.

use std::fmt::Write as _;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kudo_api::{
    Machine, MachineMode, MaintenanceSchedule, MaintenanceScheduleSpec as Spec,
    MaintenanceScheduleStatus as Status, NodeMaintenance, NodeWindow,
};
use kudo_engine::maintenance::{duration, same_machine};

use crate::output::table;
use crate::plan_tree::format_time;

/// What `status` says when there is no schedule object.
pub const NO_SCHEDULE: &str = "No maintenance schedule: no node is scheduled for maintenance.\n\
Schedule nodes with `kubectl kudo maintenance schedule NODE... --start <time|now> --duration 1h`.\n";

/// The window of a schedule entry, from spec.
fn window_span(window: &NodeWindow) -> Option<(Timestamp, Timestamp)> {
    let unavailability = window.unavailability.as_ref()?;
    let start = unavailability.start.0;
    let end = start.checked_add(duration(unavailability).ok()?).ok()?;
    Some((start, end))
}

/// `2026-11-28 02:00:00–03:00:00` (the end's date only when it differs).
fn span_text(start: Timestamp, end: Timestamp) -> String {
    let (from, to) = (format_time(&Time(start)), format_time(&Time(end)));
    match (from.split_once(' '), to.split_once(' ')) {
        (Some((day, _)), Some((end_day, end_time))) if day == end_day => {
            format!("{from}–{end_time}")
        }
        _ => format!("{from}–{to}"),
    }
}

fn status_entry<'s>(status: Option<&'s Status>, machine: &Machine) -> Option<&'s NodeMaintenance> {
    status?
        .nodes
        .iter()
        .find(|n| same_machine(&n.machine, machine))
}

/// `host-a → worker-7` when the entry resolved to a Node of another name,
/// `10.0.0.9 (no Node)` when it resolved to none.
fn node_text(machine: &Machine, entry: Option<&NodeMaintenance>) -> String {
    let shown = machine.to_string();
    match entry.map(|e| e.node.as_deref()) {
        Some(Some(node)) if node != shown => format!("{shown} → {node}"),
        Some(None) => format!("{shown} (no Node)"),
        _ => shown,
    }
}

fn mode_text(spec: &Spec, machine: &Machine, entry: Option<&NodeMaintenance>) -> String {
    let down_asked = spec.down.iter().any(|d| same_machine(d, machine));
    match entry.map(|e| e.mode) {
        Some(MachineMode::Down) => "Down".to_string(),
        Some(MachineMode::Draining) if down_asked => "Draining → Down".to_string(),
        Some(MachineMode::Draining) => "Draining".to_string(),
        None if down_asked => "Scheduled → Down".to_string(),
        None => "Scheduled".to_string(),
    }
}

fn node_rows(schedule: &MaintenanceSchedule) -> Vec<Vec<String>> {
    let spec = &schedule.spec;
    let status = schedule.status.as_ref();
    let dash = || "-".to_string();
    let mut rows = Vec::new();
    for window in &spec.windows {
        let span = window_span(window).map_or_else(dash, |(s, e)| span_text(s, e));
        for machine in &window.nodes {
            let entry = status_entry(status, machine);
            rows.push(vec![
                node_text(machine, entry),
                mode_text(spec, machine, entry),
                entry
                    .and_then(|e| e.since.as_ref())
                    .map_or_else(dash, format_time),
                span.clone(),
                entry
                    .and_then(|e| e.pods_left)
                    .map_or_else(dash, |n| n.to_string()),
                entry.map_or(0, |e| e.blocked.len()).to_string(),
                entry.map(|e| e.message.clone()).unwrap_or_default(),
            ]);
        }
    }
    // Nodes the manager still reports but the schedule no longer lists.
    let scheduled = |m: &Machine| {
        spec.windows
            .iter()
            .flat_map(|w| &w.nodes)
            .any(|s| same_machine(s, m))
    };
    for entry in status.map(|s| s.nodes.as_slice()).unwrap_or_default() {
        if !scheduled(&entry.machine) {
            rows.push(vec![
                node_text(&entry.machine, Some(entry)),
                format!("{} → Up", entry.mode.as_str()),
                entry.since.as_ref().map_or_else(dash, format_time),
                dash(),
                entry.pods_left.map_or_else(dash, |n| n.to_string()),
                entry.blocked.len().to_string(),
                "leaving the schedule".to_string(),
            ]);
        }
    }
    rows
}

/// The whole `maintenance status` text.
pub fn render(schedule: &MaintenanceSchedule) -> String {
    let status = schedule.status.as_ref();
    let mut out = String::new();
    let rows = node_rows(schedule);
    if rows.is_empty() {
        out.push_str("No node is scheduled for maintenance.\n");
    } else {
        out.push_str(&table(
            &[
                "node",
                "mode",
                "since",
                "window (UTC)",
                "pods left",
                "blocked",
                "message",
            ],
            rows,
        ));
    }
    let nodes = status.map(|s| s.nodes.as_slice()).unwrap_or_default();
    if nodes.iter().any(|n| !n.blocked.is_empty()) {
        out.push_str("\nBlocked evictions (retried):\n");
        for node in nodes {
            let name = node
                .node
                .clone()
                .unwrap_or_else(|| node.machine.to_string());
            for blocked in &node.blocked {
                let budget = blocked.budget.as_deref().map_or_else(
                    || "a PodDisruptionBudget".to_string(),
                    |b| format!("PodDisruptionBudget {b}"),
                );
                let _ = write!(out, "  - {name}: pod {} blocked by {budget}", blocked.pod);
                if !blocked.message.is_empty() {
                    let _ = write!(out, ": {}", blocked.message);
                }
                out.push('\n');
            }
        }
    }
    let instances = status.map(|s| s.instances.as_slice()).unwrap_or_default();
    if !instances.is_empty() {
        out.push_str("\nAffected instances:\n");
        let rows = instances
            .iter()
            .map(|i| {
                let pods = i
                    .pods
                    .iter()
                    .map(|p| format!("{} on {}", p.pod, p.node))
                    .collect::<Vec<_>>()
                    .join(", ");
                vec![
                    format!("{}/{}", i.namespace, i.name),
                    i.response.as_str().to_string(),
                    pods,
                    i.message.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&["instance", "answer", "pods", "message"], rows));
    }
    out.push_str(&summary(schedule));
    out
}

/// Next window, counts, the schedule's message and whether the manager has
/// caught up with the spec.
fn summary(schedule: &MaintenanceSchedule) -> String {
    let mut out = String::new();
    let Some(status) = &schedule.status else {
        if !schedule.spec.windows.is_empty() {
            out.push_str("\nThe manager has not reported on this schedule yet.\n");
        }
        return out;
    };
    out.push('\n');
    if let Some(next) = &status.next_window {
        let _ = writeln!(out, "Next window: {next}");
    }
    let _ = writeln!(out, "Draining: {}, Down: {}", status.draining, status.down);
    if let (Some(seen), Some(generation)) =
        (status.observed_generation, schedule.metadata.generation)
        && seen < generation
    {
        let _ = writeln!(
            out,
            "The manager has not acted on the latest change yet (generation {generation}, seen {seen})."
        );
    }
    if !status.message.is_empty() {
        let _ = writeln!(out, "Message: {}", status.message);
    }
    out
}

/// Where `down --wait` stands for `nodes`: done when each is Down with no
/// pods left, in a status at least as new as `generation`; the text says
/// what each node waits for.
pub fn drain_progress(
    schedule: &MaintenanceSchedule,
    nodes: &[Machine],
    generation: Option<i64>,
) -> (bool, String) {
    let status = schedule.status.as_ref();
    let current = match (status.and_then(|s| s.observed_generation), generation) {
        (Some(seen), Some(written)) => seen >= written,
        _ => true,
    };
    let mut done = current;
    let mut parts = Vec::new();
    for machine in nodes {
        let entry = status_entry(status, machine);
        let name = entry
            .and_then(|e| e.node.clone())
            .unwrap_or_else(|| machine.to_string());
        let text = match entry {
            Some(e) if e.mode == MachineMode::Down && e.pods_left == Some(0) => {
                format!("{name}: Down, drained")
            }
            Some(e) => {
                done = false;
                let mut text = format!("{name}: {}", e.mode.as_str());
                if let Some(left) = e.pods_left {
                    let _ = write!(text, ", {left} pods left");
                }
                let budgets: Vec<String> = e
                    .blocked
                    .iter()
                    .map(|b| match &b.budget {
                        Some(budget) => format!("{} by {budget}", b.pod),
                        None => b.pod.clone(),
                    })
                    .collect();
                if !budgets.is_empty() {
                    let _ = write!(text, ", blocked: {}", budgets.join(", "));
                } else if !e.message.is_empty() {
                    let _ = write!(text, " ({})", e.message);
                }
                text
            }
            None => {
                done = false;
                format!("{name}: not yet reported by the manager")
            }
        };
        parts.push(text);
    }
    if !current {
        parts.insert(0, "the manager has not acted on the change yet".to_string());
    }
    (done, parts.join("; "))
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
