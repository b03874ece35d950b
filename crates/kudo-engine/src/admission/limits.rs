//! What the rules refuse for its size: lists every decision walks, values
//! the status keeps again, and names that become label values.

use std::collections::BTreeMap;

use kudo_api::OperatorVersion;
use kudo_api::message::grouped;

use super::{InstanceName, Subject};

/// Most entries of `spec.planOperations` (`kubectl kudo` keeps 20; older
/// ones may be dropped from the front).
pub const MAX_PLAN_OPERATIONS: usize = 256;
/// Most entries of `spec.maintenanceWindows` and of `spec.suppressions`:
/// every decision walks them.
pub const MAX_WINDOWS: usize = 32;

/// Lists an Instance or its OperatorVersions may hold: the checks and
/// every decision walk them, some against each other.
pub(super) fn check_counts(
    new: &Subject,
    ov: &OperatorVersion,
    name: InstanceName<'_>,
) -> Result<(), String> {
    let declared = ov.spec.parameters.len();
    if declared > kudo_api::MAX_PARAMETERS {
        return Err(format!(
            "Instance {name}: OperatorVersion {} declares {} parameters, more than the {} a \
             package may (package verify refuses it too)",
            ov.metadata.name.as_deref().unwrap_or_default(),
            grouped(declared),
            grouped(kudo_api::MAX_PARAMETERS)
        ));
    }
    let lists = [
        (
            "spec.planOperations",
            new.spec.plan_operations.len(),
            MAX_PLAN_OPERATIONS,
            "drop the oldest",
        ),
        (
            "spec.maintenanceWindows",
            new.spec.maintenance_windows.len(),
            MAX_WINDOWS,
            "merge windows",
        ),
        (
            "spec.suppressions",
            new.spec.suppressions.len(),
            MAX_WINDOWS,
            "remove ended ones",
        ),
    ];
    for (field, len, max, instead) in lists {
        if len > max {
            return Err(format!(
                "Instance {name}: {field} has {} entries, at most {max}; {instead}",
                grouped(len)
            ));
        }
    }
    Ok(())
}

/// Most bytes of `spec.parameters`, names and values together: the status
/// keeps them twice more (what was applied, and the last good
/// configuration to roll back to), and the whole object must stay under
/// the API server's 1.5 MiB.
pub const MAX_PARAMETER_BYTES: usize = 256 * 1024;

pub(super) fn check_parameter_bytes(
    params: &BTreeMap<String, String>,
    name: InstanceName<'_>,
) -> Result<(), String> {
    check_bytes(
        params,
        "spec.parameters",
        "the status keeps them twice more",
        name,
    )
}

/// [`check_parameter_bytes`] for a manual run's values: its plan's status
/// keeps them whole too.
pub(super) fn check_run_parameter_bytes(
    values: &BTreeMap<String, String>,
    name: InstanceName<'_>,
) -> Result<(), String> {
    check_bytes(
        values,
        "spec.planExecution.parameters",
        "the plan's status keeps them too",
        name,
    )
}

fn check_bytes(
    values: &BTreeMap<String, String>,
    field: &str,
    kept: &str,
    name: InstanceName<'_>,
) -> Result<(), String> {
    let bytes: usize = values.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_PARAMETER_BYTES {
        return Err(format!(
            "Instance {name}: {field} hold {} bytes, at most {} ({kept}, and an object holds at \
             most 1.5 MiB); keep large content in a ConfigMap or Secret and pass its name",
            grouped(bytes),
            grouped(MAX_PARAMETER_BYTES)
        ));
    }
    Ok(())
}

/// Longest Instance name: it is the value of the `kudo.dev/instance` label
/// on every object the Instance makes, and a label value holds at most 63
/// characters (the API server refuses every apply past that).
pub const MAX_INSTANCE_NAME: usize = 63;

pub(super) fn check_name_length(name: InstanceName<'_>) -> Result<(), String> {
    if name.name.len() > MAX_INSTANCE_NAME {
        return Err(format!(
            "cannot create Instance {name}: its name has {} characters; at most \
             {MAX_INSTANCE_NAME}, since it becomes the kudo.dev/instance label of every object \
             the Instance makes",
            name.name.len()
        ));
    }
    Ok(())
}
