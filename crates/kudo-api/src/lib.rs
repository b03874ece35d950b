//! # kudo-api
//!
//! The `kudo.dev/v1beta1` API of kudo-rs: the custom resources
//! ([`Operator`], [`OperatorVersion`], [`Instance`], [`MaintenanceSchedule`]),
//! their status types, the
//! operator package file types (`operator.yaml`, `params.yaml`) and the
//! well-known names (labels, annotations, finalizer, special plan names).
//!
//! Field names and JSON shapes follow KUDO exactly so that KUDO manifests,
//! packages and scripts keep working; kudo-rs additions are optional fields
//! that default to KUDO behaviour.
//!
//! This crate owns types only: serde + schemars, no IO, no clock, no client.

pub mod crds;
pub mod hint;
pub mod instance;
pub mod maintenance;
pub mod message;
pub mod names;
pub mod operations;
pub mod operator;
pub mod operator_version;
pub mod ov_content;
pub mod package;
pub mod param_value;
pub mod rbac;
pub mod repository;
pub mod requirements;
pub mod status;
pub mod status_size;
pub mod upgrades;

pub use instance::{
    ActivePlan, AppliedConfig, AppliedObject, AutoSuppression, Blocker, BlockerKind, Instance,
    InstanceSpec, InstanceStatus, OperationRecord, PhaseStatus, PlanExecution, PlanRun, PlanStatus,
    RecoveryPolicy, RecoveryRecord, StepStatus, TaskStatus,
};
pub use maintenance::{
    AffectedInstance, BlockedEviction, InstanceMaintenance, Machine, MachineMode,
    MaintenanceResponse, MaintenanceSchedule, MaintenanceScheduleSpec, MaintenanceScheduleStatus,
    NodeMaintenance, NodeWindow, PodPlacement, Unavailability,
};
pub use operations::{MaintenanceWindow, PlanAction, PlanOperation, Suppression, WindowKind};
pub use operator::{Maintainer, Operator, OperatorSpec};
pub use operator_version::{
    MAX_PARAMETERS, MAX_TASKS, OperatorVersion, OperatorVersionSpec, Parameter, ParameterType,
    Phase, PipeSpec, Plan, Step, Strategy, Task, TaskKind, TaskSpec, UnknownStrategy,
};
pub use param_value::{ParameterValueError, preview, validate_parameters};
pub use repository::{OperatorRepository, OperatorRepositorySpec, OperatorRepositoryStatus};
pub use status::ExecutionStatus;

/// Re-export so dependants name the same k8s-openapi types.
pub use k8s_openapi;

/// `ObjectReference` as KUDO uses it (`spec.operator`, `spec.operatorVersion`).
pub type ObjectReference = k8s_openapi::api::core::v1::ObjectReference;

/// The namespace an Instance's OperatorVersion reference names: its own
/// when set and not empty, else `own` (the Instance's).
pub fn ov_namespace<'a>(reference_namespace: Option<&'a str>, own: &'a str) -> &'a str {
    reference_namespace
        .filter(|ns| !ns.is_empty())
        .unwrap_or(own)
}
/// Kubernetes `metav1.Time`.
pub type Time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
/// Kubernetes `metav1.Condition`.
pub type Condition = k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
