//! The `MaintenanceSchedule` custom resource: node maintenance as Mesos'
//! maintenance primitives define it, carried over to Kubernetes.
//!
//! One cluster-scoped schedule (named [`SCHEDULE_NAME`]) lists windows of
//! nodes and when they become unavailable. A scheduled node is Draining:
//! new pods avoid it and every Instance with pods there is told (its
//! `maintenance` plan runs) and answers. A node asked `down` is cordoned
//! and drained through the Eviction API; `up` ends its maintenance and
//! takes it out of the schedule. The manager acts on spec and records what
//! it did in status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Time;

/// The one schedule the manager acts on (Mesos has one per cluster).
pub const SCHEDULE_NAME: &str = "default";
/// Taint key put on scheduled nodes.
pub const MAINTENANCE_TAINT: &str = "kudo.dev/maintenance";
/// Taint value (effect PreferNoSchedule) while a node is Draining.
pub const DRAINING_TAINT_VALUE: &str = "draining";
/// Taint value (effect NoSchedule) once a node is Down.
pub const DOWN_TAINT_VALUE: &str = "down";
/// Annotation on a scheduled node: its window, `START/END` in RFC 3339.
pub const WINDOW_ANNOTATION: &str = "kudo.dev/maintenance-window";
/// Annotation on a node the manager cordoned, so `up` uncordons only what
/// it cordoned itself.
pub const CORDONED_ANNOTATION: &str = "kudo.dev/maintenance-cordoned";
/// The plan an OperatorVersion may define to prepare for node maintenance.
pub const MAINTENANCE_PLAN: &str = "maintenance";

/// Spec of a [`MaintenanceSchedule`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "MaintenanceSchedule",
    shortname = "ms",
    category = "kudo",
    status = "MaintenanceScheduleStatus",
    printcolumn = r#"{"name":"Next Window","type":"string","jsonPath":".status.nextWindow"}"#,
    printcolumn = r#"{"name":"Draining","type":"integer","jsonPath":".status.draining"}"#,
    printcolumn = r#"{"name":"Down","type":"integer","jsonPath":".status.down"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceScheduleSpec {
    /// Windows of maintenance; a node appears in at most one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<NodeWindow>,
    /// Scheduled nodes asked to go Down: cordoned and drained. Each must
    /// stay in `windows` until it is brought `up`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<Machine>,
}

/// Nodes and when they become unavailable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeWindow {
    /// The nodes (at least one).
    #[serde(default)]
    pub nodes: Vec<Machine>,
    /// When they become unavailable, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailability: Option<Unavailability>,
}

/// A node, by its Node name, or as Mesos identifies a machine: by hostname
/// and/or InternalIP (given both, both must match).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// `metadata.name` of the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A `Hostname` address of the Node (compared case-insensitively).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// An `InternalIP` address of the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
}

/// When maintenance makes the nodes unavailable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Unavailability {
    /// Start of the unavailability.
    pub start: Time,
    /// How long it lasts, e.g. `1h`, `90m`, `1h30m`.
    pub duration: String,
}

/// Status of a [`MaintenanceSchedule`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceScheduleStatus {
    /// Every scheduled node (a node not listed is Up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeMaintenance>,
    /// Instances with pods on scheduled nodes, and their answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<AffectedInstance>,
    /// Start of the earliest window that has not ended (printer column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_window: Option<String>,
    /// How many nodes are Draining.
    #[serde(default)]
    pub draining: u32,
    /// How many nodes are Down.
    #[serde(default)]
    pub down: u32,
    /// Why the manager does not act on this object, or what failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `metadata.generation` last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Mode of a scheduled node (Mesos: Up → Draining → Down → Up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum MachineMode {
    /// Scheduled: tainted PreferNoSchedule, Instances told.
    #[default]
    Draining,
    /// Cordoned and drained.
    Down,
}

/// One scheduled node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeMaintenance {
    /// The node as scheduled.
    pub machine: Machine,
    /// The Node it is (unset: no registered Node matches it yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Its mode.
    pub mode: MachineMode,
    /// Since when it is in this mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// Its window's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Time>,
    /// Its window's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Time>,
    /// Down: pods still to be evicted (DaemonSet and mirror pods stay and
    /// are not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_left: Option<u32>,
    /// Down: evictions a PodDisruptionBudget refuses for now (retried).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedEviction>,
    /// What is going on, e.g. why it is not drained yet.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A pod whose eviction a PodDisruptionBudget refuses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockedEviction {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// `namespace/name` of the budget that blocks it, when it was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// The API server's reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// An Instance with pods on scheduled nodes (Mesos: a framework that gets
/// inverse offers).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedInstance {
    /// Namespace of the Instance.
    pub namespace: String,
    /// Name of the Instance.
    pub name: String,
    /// Its pods on scheduled nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<PodPlacement>,
    /// Its answer.
    pub response: MaintenanceResponse,
    /// The answer's explanation (a Declined plan's message).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A pod and the scheduled node it runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodPlacement {
    /// Pod name (in the Instance's namespace).
    pub pod: String,
    /// Node name.
    pub node: String,
}

/// An Instance's answer to maintenance (Mesos' inverse-offer answer). A
/// hint to the person running maintenance; it blocks nothing by itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum MaintenanceResponse {
    /// Its `maintenance` plan has not finished yet.
    #[default]
    Pending,
    /// Its `maintenance` plan completed.
    Accepted,
    /// Its `maintenance` plan ended FATAL_ERROR.
    Declined,
    /// Its OperatorVersion has no `maintenance` plan.
    NoResponse,
}

impl MaintenanceResponse {
    /// The value as written in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Accepted => "Accepted",
            Self::Declined => "Declined",
            Self::NoResponse => "NoResponse",
        }
    }
}

impl MachineMode {
    /// The value as written in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draining => "Draining",
            Self::Down => "Down",
        }
    }
}

impl std::fmt::Display for Machine {
    /// The node as a person names it: its name, else hostname and IP.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.name, &self.hostname, &self.ip) {
            (Some(name), _, _) => f.write_str(name),
            (None, Some(host), Some(ip)) => write!(f, "{host} ({ip})"),
            (None, Some(host), None) => f.write_str(host),
            (None, None, Some(ip)) => f.write_str(ip),
            (None, None, None) => f.write_str("(unnamed node)"),
        }
    }
}

/// What an Instance was told of node maintenance, and its answer
/// (`status.maintenance`; templates read it as `.Maintenance`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceMaintenance {
    /// Scheduled nodes its pods run on.
    pub nodes: Vec<String>,
    /// Start of the earliest of their windows.
    pub start: Time,
    /// End of the latest of their windows.
    pub end: Time,
    /// Its answer.
    pub response: MaintenanceResponse,
    /// The answer's explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Execution uid of the `maintenance` plan run for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}
