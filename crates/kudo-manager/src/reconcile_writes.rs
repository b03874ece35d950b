//! The Instance writes of a reconcile: its status as a merge patch (made
//! to fit what the API server stores) and JSON patches of its metadata.

use kube::api::{Api, Patch, PatchParams};
use kudo_api::status_size::{SOFT_LIMIT, estimate, fit};
use kudo_api::{Instance, InstanceStatus};
use serde_json::json;

use crate::status_patch::{StatusPatch, merge_patch};
use crate::{Error, Result};

/// `status` with shorter messages and less history when its estimated size
/// passes `limit` (the API server stores about 1.5 MiB per object); `None`
/// when it fits as it is.
pub(super) fn fitted(status: &InstanceStatus, limit: usize, label: &str) -> Option<InstanceStatus> {
    if estimate(status) <= limit {
        return None;
    }
    let mut smaller = status.clone();
    fit(&mut smaller, limit);
    tracing::warn!(instance = %label, "status too large to store whole; writing it with shorter messages and less history");
    Some(smaller)
}

/// After the API server refused `status` as too large: fitted within a
/// quarter of the usual limit, when that changes it.
pub(super) fn fitted_again(status: &InstanceStatus, label: &str) -> Option<InstanceStatus> {
    let mut smaller = status.clone();
    fit(&mut smaller, SOFT_LIMIT / 4).then(|| {
        tracing::warn!(instance = %label, "status refused as too large; writing it shorter still");
        smaller
    })
}

/// Writes `status` as a merge patch from `stored` (the whole status when
/// none is stored); `Err` only when a status cannot be serialised.
pub(super) async fn write_status(
    api: &Api<Instance>,
    name: &str,
    label: &str,
    stored: &InstanceStatus,
    status: &InstanceStatus,
) -> Result<Result<Instance, kube::Error>> {
    let old = serde_json::to_value(stored).map_err(|source| Error::Serde {
        context: format!("status of {label}"),
        source,
    })?;
    let params = PatchParams::default();
    if old.as_object().is_some_and(serde_json::Map::is_empty) {
        // From an empty status the merge patch is the new status itself:
        // send it without building it as a Value and diffing first.
        tracing::debug!("writing status (all of it: none was stored)");
        let patch = StatusPatch { status };
        return Ok(api.patch_status(name, &params, &Patch::Merge(&patch)).await);
    }
    let new = serde_json::to_value(status).map_err(|source| Error::Serde {
        context: format!("new status of {label}"),
        source,
    })?;
    let patch = json!({ "status": merge_patch(&old, &new) });
    tracing::debug!(patch = %patch, "writing status");
    Ok(api.patch_status(name, &params, &Patch::Merge(&patch)).await)
}

pub(super) async fn patch_json(
    api: &Api<Instance>,
    name: &str,
    patch: serde_json::Value,
) -> Result<Instance, kube::Error> {
    let patch: json_patch::Patch =
        serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
    api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
}
