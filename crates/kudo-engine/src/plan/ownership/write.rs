//! Whether an Instance may write an object that already exists.

use kudo_api::names::{
    ADOPT_BY_ANNOTATION, ADOPT_EXISTING_ANNOTATION, API_VERSION, HERITAGE_LABEL, HERITAGE_VALUE,
    INSTANCE_LABEL, INSTANCE_NAMESPACE_LABEL,
};
use serde_json::Value;

use super::{Claimant, controller, created_by_kudo, is_shared_kind, str_of};

/// What to do with an existing object a step renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Apply it.
    Apply,
    /// Leave it as it is (a shared kind kudo-rs did not create): the step
    /// goes on without applying or recording it, saying so.
    UseAsIs(String),
    /// Wait: it was left by an earlier Instance of the same name, deleted
    /// since, and the garbage collector removes it; the step goes on once
    /// it is gone.
    AwaitRemoval(String),
}

/// Whether `writer` may apply `desired` over `live`; otherwise why not and
/// what to do, starting with the object's label (e.g. `ConfigMap ns/x`).
pub fn may_write(
    live: &Value,
    desired: &Value,
    writer: &Claimant<'_>,
    label: &str,
) -> Result<Write, String> {
    let kind = desired
        .get("kind")
        .or_else(|| live.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let meta = &live["metadata"];
    let handed_to_us = meta["annotations"][ADOPT_BY_ANNOTATION].as_str()
        == Some(format!("{}/{}", writer.namespace, writer.name).as_str());
    if is_shared_kind(kind) {
        return Ok(if created_by_kudo(live) || handed_to_us {
            Write::Apply
        } else {
            Write::UseAsIs(format!(
                "{label} already exists and was not created by kudo-rs: it is used as it is, \
                 not changed and never deleted by kudo-rs (annotate it {ADOPT_BY_ANNOTATION}={}/{} \
                 to hand it over)",
                writer.namespace, writer.name
            ))
        });
    }
    let hand_over = format!(
        "delete it, or annotate it {ADOPT_BY_ANNOTATION}={}/{} to hand it over",
        writer.namespace, writer.name
    );
    if let Some(owner) = controller(meta) {
        let ours = owner["uid"].as_str() == Some(writer.uid);
        if ours || handed_to_us {
            return Ok(Write::Apply);
        }
        if let Some(wait) = left_by_predecessor(owner, writer, label) {
            return Ok(Write::AwaitRemoval(wait));
        }
        let who = if owner["kind"] == "Instance" && owner["apiVersion"] == API_VERSION {
            format!("Instance {}/{}", writer.namespace, str_of(owner, "name"))
        } else {
            format!("{} {}", str_of(owner, "kind"), str_of(owner, "name"))
        };
        return Err(format!(
            "{label} is controlled by {who}; kudo-rs does not take over another owner's objects: {hand_over}"
        ));
    }
    let labels = &meta["labels"];
    if labels[HERITAGE_LABEL].as_str() == Some(HERITAGE_VALUE) {
        let instance = labels[INSTANCE_LABEL].as_str().unwrap_or_default();
        // Cluster-scoped objects name their Instance's namespace in a label;
        // namespaced ones live in it.
        let namespace = labels[INSTANCE_NAMESPACE_LABEL]
            .as_str()
            .or_else(|| meta["namespace"].as_str())
            .unwrap_or_default();
        if (instance == writer.name && namespace == writer.namespace) || handed_to_us {
            return Ok(Write::Apply);
        }
        return Err(format!(
            "{label} belongs to Instance {namespace}/{instance}; kudo-rs does not take over another Instance's objects: {hand_over}"
        ));
    }
    // The package may adopt an object of the Instance's own namespace (its
    // writer could delete and recreate it anyway); a cluster-scoped object
    // only its owner can hand over.
    let cluster_scoped = meta["namespace"].as_str().is_none_or(str::is_empty);
    let package_adopts = !cluster_scoped
        && desired["metadata"]["annotations"][ADOPT_EXISTING_ANNOTATION].as_str() == Some("true");
    if package_adopts || handed_to_us {
        return Ok(Write::Apply);
    }
    if cluster_scoped {
        return Err(format!(
            "{label} already exists and was not created by kudo-rs (no {HERITAGE_LABEL}={HERITAGE_VALUE} \
             label); a cluster-scoped object is taken over only when it is annotated \
             {ADOPT_BY_ANNOTATION}={}/{}",
            writer.namespace, writer.name
        ));
    }
    Err(format!(
        "{label} already exists and was not created by kudo-rs (no {HERITAGE_LABEL}={HERITAGE_VALUE} label); \
         it is not taken over unless the template sets the annotation {ADOPT_EXISTING_ANNOTATION}: \"true\" \
         or the object is annotated {ADOPT_BY_ANNOTATION}={}/{}",
        writer.namespace, writer.name
    ))
}

/// Why `label` is to be waited for when `owner` (one of its owner
/// references) is an earlier Instance of `writer`'s name: names are unique,
/// so that Instance is gone, and the garbage collector deletes what it owned.
pub fn left_by_predecessor(owner: &Value, writer: &Claimant<'_>, label: &str) -> Option<String> {
    let predecessor = owner["kind"] == "Instance"
        && owner["apiVersion"] == API_VERSION
        && owner["name"].as_str() == Some(writer.name)
        && owner["uid"].as_str() != Some(writer.uid);
    predecessor.then(|| {
        format!(
            "{label} was created for an earlier Instance {}/{} (uid {}), deleted since: \
             waiting for the garbage collector to remove it",
            writer.namespace,
            writer.name,
            str_of(owner, "uid")
        )
    })
}

/// Whether the parent Instance `parent` may merge its KudoOperator task's
/// spec into the existing Instance `live`: only a child it created (an
/// owner reference to the parent's uid) or one handed over to it
/// (`kudo.dev/adopt-by: <namespace>/<parent>`); `Ok(true)` when it adopts
/// (the owner reference must be added).
pub fn may_patch_child(live: &Value, parent: &Claimant<'_>, label: &str) -> Result<bool, String> {
    let meta = &live["metadata"];
    let owned = meta["ownerReferences"].as_array().is_some_and(|refs| {
        refs.iter()
            .any(|r| r["kind"] == "Instance" && r["uid"].as_str() == Some(parent.uid))
    });
    if owned {
        return Ok(false);
    }
    if meta["annotations"][ADOPT_BY_ANNOTATION].as_str()
        == Some(format!("{}/{}", parent.namespace, parent.name).as_str())
    {
        return Ok(true);
    }
    Err(format!(
        "{label} exists and is not a child of Instance {}/{}: kudo-rs does not take over \
         another Instance; delete it, or annotate it {ADOPT_BY_ANNOTATION}={}/{} to hand it over",
        parent.namespace, parent.name, parent.namespace, parent.name
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ME: Claimant<'static> = Claimant {
        name: "zk",
        namespace: "data",
        uid: "uid-zk",
    };

    fn owned_by(name: &str, uid: &str) -> Value {
        json!({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "data",
            "labels": {"heritage": "kudo", "kudo.dev/instance": name},
            "ownerReferences": [{"apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "name": name, "uid": uid, "controller": true}]}})
    }

    fn check(live: &Value, desired: &Value) -> Result<(), String> {
        may_write(live, desired, &ME, "ConfigMap data/c").and_then(|w| match w {
            Write::Apply => Ok(()),
            Write::UseAsIs(note) | Write::AwaitRemoval(note) => Err(note),
        })
    }

    #[test]
    fn an_object_left_by_an_earlier_instance_of_the_same_name_is_waited_for() {
        let w = may_write(
            &owned_by("zk", "uid-earlier"),
            &json!({}),
            &ME,
            "ConfigMap data/c",
        );
        let Ok(Write::AwaitRemoval(why)) = w else {
            panic!("expected a wait, got {w:?}");
        };
        assert!(
            why.contains("earlier Instance data/zk (uid uid-earlier)"),
            "{why}"
        );
    }

    #[test]
    fn an_object_this_instance_controls_is_written() {
        assert_eq!(check(&owned_by("zk", "uid-zk"), &json!({})), Ok(()));
    }

    #[test]
    fn an_object_another_instance_controls_is_refused_naming_it() {
        let e = check(&owned_by("other", "uid-other"), &json!({})).unwrap_err();
        assert!(
            e.starts_with("ConfigMap data/c is controlled by Instance data/other"),
            "{e}"
        );
        assert!(e.contains("kudo.dev/adopt-by=data/zk"), "{e}");
    }

    #[test]
    fn the_package_cannot_adopt_from_another_instance_but_its_owner_can_hand_over() {
        let desired = json!({"metadata": {"annotations": {"kudo.dev/adopt-existing": "true"}}});
        assert!(check(&owned_by("other", "uid-other"), &desired).is_err());
        let mut handed = owned_by("other", "uid-other");
        handed["metadata"]["annotations"] = json!({"kudo.dev/adopt-by": "data/zk"});
        assert_eq!(check(&handed, &json!({})), Ok(()));
    }

    #[test]
    fn an_object_controlled_by_something_else_is_refused_naming_its_controller() {
        let live = json!({"kind": "ConfigMap", "metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": true}]}});
        let e = check(&live, &json!({})).unwrap_err();
        assert!(e.contains("controlled by Deployment web"), "{e}");
    }

    #[test]
    fn a_cluster_scoped_object_of_another_instance_is_refused() {
        let live = json!({"kind": "ClusterRole", "metadata": {"name": "r", "labels": {
            "heritage": "kudo", "kudo.dev/instance": "zk", "kudo.dev/instance-namespace": "other-ns"}}});
        let e = check(&live, &json!({})).unwrap_err();
        assert!(e.contains("belongs to Instance other-ns/zk"), "{e}");
        let mine = json!({"kind": "ClusterRole", "metadata": {"name": "r", "labels": {
            "heritage": "kudo", "kudo.dev/instance": "zk", "kudo.dev/instance-namespace": "data"}}});
        assert_eq!(check(&mine, &json!({})), Ok(()));
    }

    #[test]
    fn an_object_kudo_did_not_create_is_refused_unless_the_package_opts_in() {
        let live = json!({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "data"}});
        let e = check(&live, &json!({})).unwrap_err();
        assert!(e.contains("was not created by kudo-rs"), "{e}");
        assert!(e.contains("kudo.dev/adopt-existing: \"true\""), "{e}");
        let desired = json!({"metadata": {"annotations": {"kudo.dev/adopt-existing": "true"}}});
        assert_eq!(check(&live, &desired), Ok(()));
    }

    #[test]
    fn namespaces_and_crds_kudo_created_are_shared_and_foreign_ones_used_as_they_are() {
        for kind in ["Namespace", "CustomResourceDefinition"] {
            let other = json!({"kind": kind, "metadata": {"name": "x", "labels": {
                "heritage": "kudo", "kudo.dev/instance": "other", "kudo.dev/instance-namespace": "b"}}});
            assert_eq!(
                check(&other, &json!({})),
                Ok(()),
                "{kind} of another Instance"
            );
            let foreign = json!({"kind": kind, "metadata": {"name": "x"}});
            let adopting =
                json!({"metadata": {"annotations": {"kudo.dev/adopt-existing": "true"}}});
            let note = may_write(&foreign, &adopting, &ME, "X x").unwrap();
            assert!(
                matches!(&note, Write::UseAsIs(n) if n.contains("used as it is") && n.contains("adopt-by=data/zk")),
                "{note:?}"
            );
            let mut handed = foreign.clone();
            handed["metadata"]["annotations"] = json!({"kudo.dev/adopt-by": "data/zk"});
            assert_eq!(check(&handed, &json!({})), Ok(()));
        }
    }

    #[test]
    fn a_parent_patches_only_its_own_children_or_one_handed_over() {
        let child = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "name": "zk", "uid": "uid-zk"}]}});
        assert_eq!(may_patch_child(&child, &ME, "Instance data/c"), Ok(false));
        let victim = json!({"metadata": {"name": "victim"}});
        let e = may_patch_child(&victim, &ME, "Instance data/victim").unwrap_err();
        assert!(
            e.starts_with("Instance data/victim exists and is not a child of Instance data/zk"),
            "{e}"
        );
        let handed = json!({"metadata": {"annotations": {"kudo.dev/adopt-by": "data/zk"}}});
        assert_eq!(
            may_patch_child(&handed, &ME, "Instance data/victim"),
            Ok(true)
        );
    }

    #[test]
    fn the_package_cannot_adopt_a_cluster_scoped_object_only_its_owner_can_hand_it_over() {
        let live = json!({"kind": "ClusterRole", "metadata": {"name": "admin-ish"}});
        let desired = json!({"metadata": {"annotations": {"kudo.dev/adopt-existing": "true"}}});
        let e = check(&live, &desired).unwrap_err();
        assert!(
            e.contains("taken over only when it is annotated kudo.dev/adopt-by=data/zk"),
            "{e}"
        );
        let mut handed = live.clone();
        handed["metadata"]["annotations"] = json!({"kudo.dev/adopt-by": "data/zk"});
        assert_eq!(check(&handed, &json!({})), Ok(()));
    }
}
