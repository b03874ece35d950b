//! Objects in API versions the server no longer serves (packages written
//! for 2020 clusters): the server's discovery decides, kudo-package's pure
//! translation rewrites the object for the successor it serves.

use std::collections::HashSet;

use kudo_engine::{Note, TaskOutcome};
use kudo_package::removed_apis::{self, RemovedVersion};
use serde_json::Value;

use super::apply::object_identity;
use crate::classify::{describe_kube_error, object_label};
use crate::context::Context;

/// The objects as they will be applied (or deleted), with a note for each
/// one moved to another version. Objects in served versions, and kinds
/// kudo-package knows nothing about, pass untouched.
pub(super) async fn objects_to_apply(
    ctx: &Context,
    objects: Vec<Value>,
    notes: &mut Vec<Note>,
) -> Result<Vec<Value>, TaskOutcome> {
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        let id = object_identity(&obj);
        let Some(removed) = removed_apis::removed_version(&id.api_version, &id.kind) else {
            out.push(obj);
            continue;
        };
        let label = object_label(&id.kind, id.namespace.as_deref(), &id.name);
        if served(ctx, &id.api_version, &id.kind, &label).await? {
            out.push(obj);
            continue;
        }
        let mut successors = HashSet::new();
        for version in removed.successors {
            if served(ctx, version, &id.kind, &label).await? {
                successors.insert(*version);
            }
        }
        let serves =
            |api_version: &str, kind: &str| kind == id.kind && successors.contains(api_version);
        match removed_apis::object_to_apply(obj, &serves) {
            Ok((obj, change)) => {
                if let Some(change) = change {
                    notes.push(Note::new(
                        "ApiVersionTranslated",
                        format!("{label}: {}", change.message()),
                    ));
                }
                out.push(obj);
            }
            Err(refused) => {
                return Err(TaskOutcome::Fatal {
                    message: format!("{label}: {refused}"),
                });
            }
        }
    }
    Ok(out)
}

async fn served(
    ctx: &Context,
    api_version: &str,
    kind: &str,
    label: &str,
) -> Result<bool, TaskOutcome> {
    match ctx.api.resolve(api_version, kind).await {
        Ok(found) => Ok(found.is_some()),
        Err(e) => Err(TaskOutcome::Transient {
            message: format!("{label}: discovery failed: {}", describe_kube_error(&e)),
        }),
    }
}

/// Why the server has no `kind` in `api_version`: a built-in version that
/// was removed (and which release removed it), or a custom kind whose CRD
/// is missing.
pub(super) fn unknown_kind_message(label: &str, api_version: &str, kind: &str) -> String {
    match removed_apis::removed_version(api_version, kind) {
        Some(RemovedVersion {
            removed_in,
            successors: [],
            ..
        }) => format!(
            "{label}: {kind} in {api_version} was removed in Kubernetes {removed_in} and has no successor this server serves"
        ),
        Some(RemovedVersion {
            removed_in,
            successors,
            ..
        }) => format!(
            "{label}: {kind} is built in, but {api_version} was removed in Kubernetes {removed_in} and this server serves none of {}",
            successors.join(", ")
        ),
        None => format!(
            "{label}: the API server has no kind {kind} in {api_version}; install its CustomResourceDefinition first"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_built_in_version_is_not_called_a_missing_crd() {
        let m = unknown_kind_message(
            "PodDisruptionBudget ns/pdb",
            "policy/v1beta1",
            "PodDisruptionBudget",
        );
        assert!(
            m.contains("is built in, but policy/v1beta1 was removed in Kubernetes 1.25"),
            "{m}"
        );
        assert!(m.contains("policy/v1"), "{m}");
        assert!(!m.contains("CustomResourceDefinition"), "{m}");
    }

    #[test]
    fn an_unknown_custom_kind_asks_for_its_crd() {
        let m = unknown_kind_message("Widget ns/w", "example.com/v1", "Widget");
        assert!(
            m.ends_with("install its CustomResourceDefinition first"),
            "{m}"
        );
    }
}
