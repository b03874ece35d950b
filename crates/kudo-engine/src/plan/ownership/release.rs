//! Letting a cluster-scoped object go. It cannot carry an owner reference
//! to a namespaced Instance, so the Instances that applied it are recorded
//! on it in annotations, one per Instance; when one is uninstalled (or a
//! plan deletes or stops rendering the object) its record is removed and
//! the object is deleted only if no other Instance that still exists is
//! recorded, kudo-rs created it, and — for a CustomResourceDefinition,
//! whose deletion deletes every custom resource of its kind — deletion was
//! asked for. An Instance's own namespace is never deleted.

use kudo_api::names::{INSTANCE_LABEL, INSTANCE_NAMESPACE_LABEL, OWNER_ANNOTATION_PREFIX};
use serde_json::Value;

use super::{Claimant, created_by_kudo};

/// An Instance recorded as an owner of a cluster-scoped object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Its uid (`None`: recorded only in the labels of an object applied
    /// before owners were recorded).
    pub uid: Option<String>,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Owner {
    /// `namespace/name`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What becomes of the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// Delete it.
    Delete,
    /// Keep it, and why.
    Keep(String),
}

/// The annotation that records Instance `uid` as an owner.
pub fn owner_annotation(uid: &str) -> String {
    format!("{OWNER_ANNOTATION_PREFIX}{uid}")
}

/// The owners recorded on a live object: its owner annotations, or, on an
/// object without any, the Instance its labels name.
pub fn owners(live: &Value) -> Vec<Owner> {
    let meta = &live["metadata"];
    let mut out: Vec<Owner> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            let uid = key.strip_prefix(OWNER_ANNOTATION_PREFIX)?;
            let (namespace, name) = value.as_str()?.split_once('/')?;
            Some(Owner {
                uid: Some(uid.to_string()),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
        })
        .collect();
    if out.is_empty() {
        let labels = &meta["labels"];
        if let (Some(name), Some(namespace)) = (
            labels[INSTANCE_LABEL].as_str(),
            labels[INSTANCE_NAMESPACE_LABEL].as_str(),
        ) {
            out.push(Owner {
                uid: None,
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
        }
    }
    out
}

/// What becomes of cluster-scoped `live` when `claimant` lets it go.
/// `others` are the owners recorded on it other than the claimant that
/// still exist; `delete_crds`: deletion of a CustomResourceDefinition was
/// asked for (on uninstall, or by a plan's Delete task).
pub fn release(
    live: &Value,
    claimant: &Claimant<'_>,
    others: &[Owner],
    delete_crds: bool,
) -> Release {
    let kind = live["kind"].as_str().unwrap_or_default();
    let name = live["metadata"]["name"].as_str().unwrap_or_default();
    if !created_by_kudo(live) {
        return Release::Keep(format!(
            "{kind} {name} was not created by kudo-rs and is never deleted by it"
        ));
    }
    if !others.is_empty() {
        let names: Vec<String> = others.iter().map(Owner::label).collect();
        return Release::Keep(format!(
            "{kind} {name} is still used by Instance {}",
            names.join(", ")
        ));
    }
    if kind == "Namespace" && name == claimant.namespace {
        return Release::Keep(format!("Namespace {name} is the Instance's own namespace"));
    }
    if kind == "CustomResourceDefinition" && !delete_crds {
        return Release::Keep(format!(
            "CustomResourceDefinition {name} is kept: deleting it would delete every custom \
             resource of its kind; uninstall with --delete-crds to delete it"
        ));
    }
    Release::Delete
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ME: Claimant<'static> = Claimant {
        name: "app",
        namespace: "sc-a",
        uid: "uid-a",
    };

    fn crd(annotations: Value) -> Value {
        json!({"kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.example.io",
            "labels": {"heritage": "kudo", "kudo.dev/instance": "app", "kudo.dev/instance-namespace": "sc-b"},
            "annotations": annotations}})
    }

    #[test]
    fn owners_are_read_from_annotations_and_from_labels_of_older_objects() {
        let live = crd(
            json!({"owners.kudo.dev/uid-a": "sc-a/app", "owners.kudo.dev/uid-b": "sc-b/app", "other": "x"}),
        );
        let found: Vec<String> = owners(&live).iter().map(Owner::label).collect();
        assert_eq!(found, ["sc-a/app", "sc-b/app"]);
        let legacy = owners(&crd(json!({})));
        assert_eq!(
            legacy,
            [Owner {
                uid: None,
                namespace: "sc-b".into(),
                name: "app".into()
            }]
        );
    }

    #[test]
    fn an_object_another_instance_still_uses_is_kept_naming_it() {
        let other = Owner {
            uid: Some("uid-b".into()),
            namespace: "sc-b".into(),
            name: "app".into(),
        };
        let kept = release(&crd(json!({})), &ME, &[other], true);
        assert_eq!(
            kept,
            Release::Keep(
                "CustomResourceDefinition gadgets.example.io is still used by Instance sc-b/app"
                    .into()
            )
        );
    }

    #[test]
    fn a_crd_is_deleted_only_when_asked() {
        let kept = release(&crd(json!({})), &ME, &[], false);
        assert!(matches!(kept, Release::Keep(why) if why.contains("--delete-crds")));
        assert_eq!(release(&crd(json!({})), &ME, &[], true), Release::Delete);
    }

    #[test]
    fn objects_kudo_did_not_create_and_the_own_namespace_are_never_deleted() {
        let foreign = json!({"kind": "Namespace", "metadata": {"name": "tenant-b"}});
        assert!(
            matches!(release(&foreign, &ME, &[], true), Release::Keep(why) if why.contains("not created by kudo-rs"))
        );
        let own = json!({"kind": "Namespace", "metadata": {"name": "sc-a", "labels": {"heritage": "kudo"}}});
        assert!(
            matches!(release(&own, &ME, &[], true), Release::Keep(why) if why.contains("own namespace"))
        );
        let made = json!({"kind": "Namespace", "metadata": {"name": "sc-a-app-ns", "labels": {"heritage": "kudo"}}});
        assert_eq!(release(&made, &ME, &[], false), Release::Delete);
    }
}
