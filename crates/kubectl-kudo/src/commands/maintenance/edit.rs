//! The schedule edits of `maintenance schedule|down|up|cancel`, pure: each
//! takes the current spec (and status, to find nodes by the Node name they
//! resolved to) and returns the new spec, validated as the webhook
//! validates it, or the reason it is refused.

use std::net::IpAddr;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kudo_api::{
    Machine, MaintenanceScheduleSpec as Spec, MaintenanceScheduleStatus as Status, NodeWindow,
    Unavailability,
};
use kudo_engine::maintenance::{duration, same_machine, validate, validate_transition};

use crate::cli::parse_duration;

/// A NODE argument: an IP address when it looks like one (so a malformed
/// one is refused as an IP rather than taken for a name), else a Node name.
pub fn parse_node(arg: &str) -> Machine {
    let arg = arg.trim();
    if looks_like_ip(arg) {
        Machine {
            ip: Some(arg.to_string()),
            ..Machine::default()
        }
    } else {
        Machine {
            name: Some(arg.to_string()),
            ..Machine::default()
        }
    }
}

/// Parses as an IP, or is made of digits and dots only (IPv4-like), or has
/// a colon (no Node name has one).
fn looks_like_ip(arg: &str) -> bool {
    arg.parse::<IpAddr>().is_ok()
        || arg.contains(':')
        || (arg.contains('.') && arg.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The machines of `schedule NODE... --hostname H...`, in that order.
pub fn machines(nodes: &[String], hostnames: &[String]) -> Vec<Machine> {
    nodes
        .iter()
        .map(|n| parse_node(n))
        .chain(hostnames.iter().map(|h| Machine {
            hostname: Some(h.trim().to_string()),
            ..Machine::default()
        }))
        .collect()
}

/// `--start`: an RFC 3339 time, `now`, or a duration from now (whole
/// seconds, as the API stores times).
pub fn parse_start(raw: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = raw.trim();
    let now = Timestamp::from_second(now.as_second()).map_err(|e| e.to_string())?;
    if text.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Ok(ts);
    }
    let later = parse_duration(text).map_err(|_| {
        format!(
            "--start {raw:?} is neither an RFC 3339 time (2026-11-28T02:00:00Z), `now`, nor a \
             duration from now (2h, 30m)"
        )
    })?;
    let span = SignedDuration::try_from(later).map_err(|e| format!("--start {raw:?}: {e}"))?;
    now.checked_add(span)
        .map_err(|e| format!("--start {raw:?} is too far in the future: {e}"))
}

/// Adds a window of `nodes` from `start` for `length` (e.g. `1h`). Refused
/// as the webhook refuses it, or when the window has ended already.
pub fn add_window(
    spec: &Spec,
    nodes: Vec<Machine>,
    start: Timestamp,
    length: &str,
    now: Timestamp,
) -> Result<Spec, String> {
    let unavailability = Unavailability {
        start: Time(start),
        duration: length.trim().to_string(),
    };
    let mut next = spec.clone();
    next.windows.push(NodeWindow {
        nodes,
        unavailability: Some(unavailability.clone()),
    });
    validate(&next)?;
    let end = duration(&unavailability)
        .ok()
        .and_then(|d| start.checked_add(d).ok());
    if let Some(end) = end.filter(|end| *end <= now) {
        return Err(format!(
            "the window {start}–{end} has ended already; give a later --start"
        ));
    }
    Ok(next)
}

/// Every scheduled entry, in schedule order.
fn entries(spec: &Spec) -> impl Iterator<Item = &Machine> {
    spec.windows.iter().flat_map(|w| &w.nodes)
}

/// Whether `arg` is one of `entry`'s identifiers (a hostname
/// case-insensitively, an IP in any spelling).
fn names_identifier(arg: &str, entry: &Machine) -> bool {
    let same_ip = |ip: &str| match (ip.trim().parse::<IpAddr>(), arg.parse::<IpAddr>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    entry.name.as_deref().is_some_and(|n| n.trim() == arg)
        || entry
            .hostname
            .as_deref()
            .is_some_and(|h| h.trim().eq_ignore_ascii_case(arg))
        || entry.ip.as_deref().is_some_and(same_ip)
}

/// The schedule entry a NODE argument names: the entry it is (as
/// `same_machine` compares), else the entry the status resolved to Node
/// `arg`, else the entry one of whose identifiers it is. An argument that
/// names none is returned as parsed (the transition check then says it is
/// not scheduled); one that names several is refused.
pub fn resolve(arg: &str, spec: &Spec, status: Option<&Status>) -> Result<Machine, String> {
    let arg = arg.trim();
    let parsed = parse_node(arg);
    if let Some(entry) = entries(spec).find(|e| same_machine(e, &parsed)) {
        return Ok(entry.clone());
    }
    let by_node: Vec<&Machine> = status
        .map(|s| s.nodes.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|n| n.node.as_deref() == Some(arg))
        .filter_map(|n| entries(spec).find(|e| same_machine(e, &n.machine)))
        .collect();
    let candidates = if by_node.is_empty() {
        entries(spec).filter(|e| names_identifier(arg, e)).collect()
    } else {
        by_node
    };
    match candidates.as_slice() {
        [] => Ok(parsed),
        [one] => Ok((*one).clone()),
        several => Err(format!(
            "node {arg} matches several scheduled entries ({}); name one as it is scheduled",
            several
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn resolve_all(
    args: &[String],
    spec: &Spec,
    status: Option<&Status>,
) -> Result<Vec<Machine>, String> {
    args.iter().map(|a| resolve(a, spec, status)).collect()
}

fn is_down(spec: &Spec, machine: &Machine) -> bool {
    spec.down.iter().any(|d| same_machine(d, machine))
}

/// Removes `gone` from every window and drops the windows left empty.
fn unschedule(spec: &mut Spec, gone: &[Machine]) {
    for window in &mut spec.windows {
        window
            .nodes
            .retain(|m| !gone.iter().any(|g| same_machine(g, m)));
    }
    spec.windows.retain(|w| !w.nodes.is_empty());
}

/// What `down` changes.
#[derive(Debug, Clone, PartialEq)]
pub struct DownEdit {
    /// The new spec.
    pub spec: Spec,
    /// The schedule entries named, in argument order.
    pub nodes: Vec<Machine>,
    /// Those that were Down already (left as they are).
    pub already: Vec<Machine>,
}

/// `down NODE...`: adds the scheduled nodes to `spec.down`.
pub fn down(spec: &Spec, status: Option<&Status>, args: &[String]) -> Result<DownEdit, String> {
    let nodes = resolve_all(args, spec, status)?;
    validate_transition(spec, &nodes, "down")?;
    let mut next = spec.clone();
    let mut already = Vec::new();
    for machine in &nodes {
        if is_down(&next, machine) {
            already.push(machine.clone());
        } else {
            next.down.push(machine.clone());
        }
    }
    validate(&next)?;
    Ok(DownEdit {
        spec: next,
        nodes,
        already,
    })
}

/// `up NODE...`: the nodes must be Down; they leave `spec.down` and their
/// windows (a window left without nodes goes too), as Mesos' machine/up.
pub fn up(
    spec: &Spec,
    status: Option<&Status>,
    args: &[String],
) -> Result<(Spec, Vec<Machine>), String> {
    let nodes = resolve_all(args, spec, status)?;
    validate_transition(spec, &nodes, "up")?;
    if let Some(not_down) = nodes.iter().find(|m| !is_down(spec, m)) {
        return Err(format!(
            "up {not_down}: the node is not Down (it is Draining); bring it down first \
             (kubectl kudo maintenance down {not_down}), or take it out of the schedule with \
             `kubectl kudo maintenance cancel {not_down}`"
        ));
    }
    let mut next = spec.clone();
    next.down
        .retain(|d| !nodes.iter().any(|m| same_machine(d, m)));
    unschedule(&mut next, &nodes);
    validate(&next)?;
    Ok((next, nodes))
}

/// What `cancel` changes.
#[derive(Debug, Clone, PartialEq)]
pub struct CancelEdit {
    /// The new spec.
    pub spec: Spec,
    /// Nodes taken out of the schedule.
    pub removed: Vec<Machine>,
    /// Down nodes that stay (they come back with `up`).
    pub kept_down: Vec<Machine>,
}

/// `cancel [NODE...]`: takes the named nodes, or every node that is not
/// Down, out of the schedule; a named node that is Down is refused.
pub fn cancel(spec: &Spec, status: Option<&Status>, args: &[String]) -> Result<CancelEdit, String> {
    let removed: Vec<Machine> = if args.is_empty() {
        entries(spec)
            .filter(|m| !is_down(spec, m))
            .cloned()
            .collect()
    } else {
        let nodes = resolve_all(args, spec, status)?;
        validate_transition(spec, &nodes, "cancel")?;
        if let Some(down) = nodes.iter().find(|m| is_down(spec, m)) {
            return Err(format!(
                "cancel {down}: the node is Down and stays in the schedule until it is brought \
                 up (kubectl kudo maintenance up {down})"
            ));
        }
        nodes
    };
    let kept_down = if args.is_empty() {
        entries(spec)
            .filter(|m| is_down(spec, m))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let mut next = spec.clone();
    unschedule(&mut next, &removed);
    validate(&next)?;
    Ok(CancelEdit {
        spec: next,
        removed,
        kept_down,
    })
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
