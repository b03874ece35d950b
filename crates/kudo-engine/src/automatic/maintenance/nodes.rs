//! Which registered Node each scheduled entry is, its mode and window, and
//! what the manager changes on a Node for it: the taint and window
//! annotation of a Draining node; cordon (`spec.unschedulable`) and a
//! NoSchedule taint for a Down node; and, for a node no longer scheduled,
//! the removal of all of that (uncordoning only what it cordoned itself).

use std::collections::BTreeMap;

use jiff::Timestamp;
use kudo_api::k8s_openapi::api::core::v1::{Node, Taint};
use kudo_api::maintenance::{
    CORDONED_ANNOTATION, DOWN_TAINT_VALUE, DRAINING_TAINT_VALUE, MAINTENANCE_TAINT,
    WINDOW_ANNOTATION,
};
use kudo_api::{Machine, MachineMode, MaintenanceScheduleSpec};

use super::validate::{duration, same_machine};

/// A scheduled entry as the manager acts on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The entry as scheduled.
    pub machine: Machine,
    /// The Node it is, when one is registered.
    pub node: Option<String>,
    /// Draining, or Down when `spec.down` names it.
    pub mode: MachineMode,
    /// Its window.
    pub start: Timestamp,
    /// Its window's end.
    pub end: Timestamp,
}

/// Every scheduled entry with a valid window, resolved against `nodes`.
pub fn targets(spec: &MaintenanceScheduleSpec, nodes: &[Node]) -> Vec<Target> {
    let mut out = Vec::new();
    for window in &spec.windows {
        let Some(unavailability) = &window.unavailability else {
            continue;
        };
        let Ok(length) = duration(unavailability) else {
            continue;
        };
        let start = unavailability.start.0;
        let end = start.checked_add(length).unwrap_or(start);
        for machine in &window.nodes {
            let down = spec.down.iter().any(|d| same_machine(d, machine));
            out.push(Target {
                machine: machine.clone(),
                node: resolve(machine, nodes).map(str::to_string),
                mode: if down {
                    MachineMode::Down
                } else {
                    MachineMode::Draining
                },
                start,
                end,
            });
        }
    }
    out
}

/// The name of the Node `machine` names: by name, or by a `Hostname`
/// address (case-insensitively) and/or an `InternalIP` address; every
/// identifier given must match.
pub fn resolve<'n>(machine: &Machine, nodes: &'n [Node]) -> Option<&'n str> {
    nodes
        .iter()
        .find(|node| matches(machine, node))
        .and_then(|node| node.metadata.name.as_deref())
}

fn matches(machine: &Machine, node: &Node) -> bool {
    let addresses = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has = |kind: &str, value: &str, fold: bool| {
        addresses.iter().any(|a| {
            a.type_ == kind
                && if fold {
                    a.address.eq_ignore_ascii_case(value)
                } else {
                    a.address == value
                }
        })
    };
    let name_ok = machine
        .name
        .as_deref()
        .is_none_or(|n| node.metadata.name.as_deref() == Some(n.trim()));
    let host_ok = machine
        .hostname
        .as_deref()
        .is_none_or(|h| has("Hostname", h.trim(), true));
    let ip_ok = machine
        .ip
        .as_deref()
        .is_none_or(|ip| has("InternalIP", ip.trim(), false));
    name_ok && host_ok && ip_ok
}

/// What to change on a Node: the whole taint list, annotations to set
/// (`Some`) or remove (`None`), and `spec.unschedulable` when it changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeChange {
    /// The Node's taints after the change.
    pub taints: Vec<Taint>,
    /// Annotations to set or remove.
    pub annotations: BTreeMap<String, Option<String>>,
    /// The new `spec.unschedulable`, if it changes.
    pub unschedulable: Option<bool>,
}

/// What `node` needs to carry its target (`None`: it is not scheduled);
/// `None` when it already does.
pub fn node_change(node: &Node, target: Option<&Target>) -> Option<NodeChange> {
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let unschedulable = node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let cordoned_by_us = annotations.contains_key(CORDONED_ANNOTATION);

    let mut wanted: Vec<Taint> = taints
        .iter()
        .filter(|t| t.key != MAINTENANCE_TAINT)
        .cloned()
        .collect();
    let mut set: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut cordon = None;
    match target {
        None => {
            if annotations.contains_key(WINDOW_ANNOTATION) {
                set.insert(WINDOW_ANNOTATION.to_string(), None);
            }
            if cordoned_by_us {
                set.insert(CORDONED_ANNOTATION.to_string(), None);
                cordon = Some(false);
            }
        }
        Some(target) => {
            let window = format!("{}/{}", target.start, target.end);
            if annotations.get(WINDOW_ANNOTATION) != Some(&window) {
                set.insert(WINDOW_ANNOTATION.to_string(), Some(window));
            }
            let (value, effect) = match target.mode {
                MachineMode::Draining => (DRAINING_TAINT_VALUE, "PreferNoSchedule"),
                MachineMode::Down => (DOWN_TAINT_VALUE, "NoSchedule"),
            };
            wanted.push(Taint {
                key: MAINTENANCE_TAINT.to_string(),
                value: Some(value.to_string()),
                effect: effect.to_string(),
                time_added: None,
            });
            match target.mode {
                MachineMode::Down if !unschedulable => {
                    set.insert(CORDONED_ANNOTATION.to_string(), Some("true".to_string()));
                    cordon = Some(true);
                }
                MachineMode::Draining if cordoned_by_us => {
                    set.insert(CORDONED_ANNOTATION.to_string(), None);
                    cordon = Some(false);
                }
                _ => {}
            }
        }
    }
    let same_taints = wanted.len() == taints.len()
        && wanted.iter().all(|w| {
            taints
                .iter()
                .any(|t| t.key == w.key && t.value == w.value && t.effect == w.effect)
        });
    if same_taints && set.is_empty() && cordon.is_none() {
        return None;
    }
    Some(NodeChange {
        taints: if same_taints { taints } else { wanted },
        annotations: set,
        unschedulable: cordon,
    })
}

/// Whether the manager has marked `node` for maintenance (so a node taken
/// out of the schedule is cleaned up).
pub fn marked(node: &Node) -> bool {
    let annotated =
        node.metadata.annotations.as_ref().is_some_and(|a| {
            a.contains_key(WINDOW_ANNOTATION) || a.contains_key(CORDONED_ANNOTATION)
        });
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|t| t.iter().any(|t| t.key == MAINTENANCE_TAINT));
    annotated || tainted
}
