//! The schedule's validation, Mesos' rules: every window has at least one
//! node and an unavailability, a node appears once in the whole schedule,
//! a node has a name, a hostname or an IP (hostnames compare
//! case-insensitively, an IP must be well formed), and a node that is Down
//! stays in the schedule. A node need not be registered to be scheduled.
//! The webhook and the CLI run the same checks, so a refused schedule
//! changes nothing; each message names the window and the node.

use std::net::IpAddr;

use jiff::SignedDuration;
use kudo_api::maintenance::SCHEDULE_NAME;
use kudo_api::{Machine, MaintenanceScheduleSpec, Unavailability};

/// Longest unavailability accepted (a year): beyond it a typo is likelier
/// than a plan.
const LONGEST: SignedDuration = SignedDuration::from_hours(366 * 24);

/// Refuses every schedule but the one the manager acts on.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name == SCHEDULE_NAME {
        return Ok(());
    }
    Err(format!(
        "MaintenanceSchedule {name:?}: there is one schedule per cluster, named \
         {SCHEDULE_NAME:?}; add windows to it instead (kubectl kudo maintenance schedule)"
    ))
}

/// Checks a schedule as Mesos checks one; the message names the window and
/// the node at fault.
pub fn validate(spec: &MaintenanceScheduleSpec) -> Result<(), String> {
    let mut seen: Vec<(Key, usize)> = Vec::new();
    for (w, window) in spec.windows.iter().enumerate() {
        if window.nodes.is_empty() {
            return Err(format!(
                "spec.windows[{w}] has no nodes; a window needs at least one"
            ));
        }
        let Some(unavailability) = &window.unavailability else {
            return Err(format!(
                "spec.windows[{w}] has no unavailability; give its start and duration"
            ));
        };
        duration(unavailability).map_err(|e| format!("spec.windows[{w}].unavailability: {e}"))?;
        for (n, machine) in window.nodes.iter().enumerate() {
            let at = format!("spec.windows[{w}].nodes[{n}]");
            check_machine(machine).map_err(|e| format!("{at}: {e}"))?;
            let key = Key::of(machine);
            if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
                return Err(format!(
                    "{at}: node {machine} is already scheduled in spec.windows[{first}]; a node \
                     appears once in the schedule"
                ));
            }
            seen.push((key, w));
        }
    }
    let mut down: Vec<Key> = Vec::new();
    for (d, machine) in spec.down.iter().enumerate() {
        let at = format!("spec.down[{d}]");
        check_machine(machine).map_err(|e| format!("{at}: {e}"))?;
        let key = Key::of(machine);
        if down.contains(&key) {
            return Err(format!("{at}: node {machine} is listed twice"));
        }
        if !seen.iter().any(|(k, _)| *k == key) {
            return Err(format!(
                "{at}: node {machine} is Down but not in any window; a Down node stays in the \
                 schedule until it is brought up (kubectl kudo maintenance up {machine})"
            ));
        }
        down.push(key);
    }
    Ok(())
}

/// The arguments of `down` / `up`: a non-empty list, each node once, each
/// in the schedule.
pub fn validate_transition(
    spec: &MaintenanceScheduleSpec,
    nodes: &[Machine],
    verb: &str,
) -> Result<(), String> {
    if nodes.is_empty() {
        return Err(format!("{verb} needs at least one node"));
    }
    let mut keys: Vec<Key> = Vec::new();
    for machine in nodes {
        check_machine(machine).map_err(|e| format!("{verb} {machine}: {e}"))?;
        let key = Key::of(machine);
        if keys.contains(&key) {
            return Err(format!("{verb}: node {machine} is named twice"));
        }
        if !spec
            .windows
            .iter()
            .flat_map(|w| &w.nodes)
            .any(|m| Key::of(m) == key)
        {
            return Err(format!(
                "{verb} {machine}: the node is not in the maintenance schedule; schedule it \
                 first (kubectl kudo maintenance schedule {machine} --start now --duration 1h)"
            ));
        }
        keys.push(key);
    }
    Ok(())
}

/// Whether two entries name the same node (hostnames case-insensitively).
pub fn same_machine(a: &Machine, b: &Machine) -> bool {
    Key::of(a) == Key::of(b)
}

/// How long the unavailability lasts: a positive duration such as `1h`,
/// `90m` or `1h30m`, at most a year.
pub fn duration(unavailability: &Unavailability) -> Result<SignedDuration, String> {
    let text = unavailability.duration.trim();
    let parsed: SignedDuration = text.parse().map_err(|_| {
        format!("duration {text:?} is not a duration; write it like 1h, 90m or 1h30m")
    })?;
    if parsed <= SignedDuration::ZERO {
        return Err(format!("duration {text:?} must be positive"));
    }
    if parsed > LONGEST {
        return Err(format!("duration {text:?} is longer than a year"));
    }
    Ok(parsed)
}

fn check_machine(machine: &Machine) -> Result<(), String> {
    let given = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    if !given(&machine.name) && !given(&machine.hostname) && !given(&machine.ip) {
        return Err("a node needs a name, a hostname or an IP".to_string());
    }
    if let Some(ip) = machine.ip.as_deref()
        && ip.trim().parse::<IpAddr>().is_err()
    {
        return Err(format!("{ip:?} is not a well-formed IP address"));
    }
    Ok(())
}

/// A node's identity as compared: hostnames in lower case, IPs parsed.
#[derive(PartialEq, Eq)]
struct Key {
    name: Option<String>,
    hostname: Option<String>,
    ip: Option<String>,
}

impl Key {
    fn of(machine: &Machine) -> Self {
        let norm = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Self {
            name: norm(&machine.name),
            hostname: norm(&machine.hostname).map(|h| h.to_ascii_lowercase()),
            ip: norm(&machine.ip).map(|ip| match ip.parse::<IpAddr>() {
                Ok(parsed) => parsed.to_string(),
                Err(_) => ip,
            }),
        }
    }
}
