//! How far KudoOperator children may go. A child is named after its parent
//! and package, so two packages that name each other make a tree of
//! Instances that doubles with every level; without a bound three writes
//! by a tenant would fill the cluster with Instances.

use kudo_api::Instance;
use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Most levels of children below an Instance a person made: a child's
/// child's child's child (real packages use one or two).
pub const MAX_CHILD_DEPTH: usize = 4;

/// Most Instances of one namespace that KudoOperator tasks made.
pub const MAX_CHILDREN_PER_NAMESPACE: usize = 256;

/// Whether an owner reference names an Instance.
pub fn is_instance_owner(owner: &OwnerReference) -> bool {
    owner.kind == "Instance" && owner.api_version.starts_with("kudo.dev/")
}

/// The name of the Instance whose KudoOperator task made `inst`, if any:
/// its owner of kind Instance.
pub fn parent_name(inst: &Instance) -> Option<&str> {
    inst.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|o| is_instance_owner(o))
        .map(|o| o.name.as_str())
}

/// How many parents `inst` has above it, counted up to one past
/// [`MAX_CHILD_DEPTH`] (so a cycle of owner references ends too);
/// `lookup` finds an Instance of the same namespace by name.
pub fn nesting_depth<I: AsRef<Instance>>(
    inst: &Instance,
    lookup: impl Fn(&str) -> Option<I>,
) -> usize {
    let mut depth = 0;
    let mut above = parent_name(inst).and_then(&lookup);
    while let Some(parent) = above {
        depth += 1;
        if depth > MAX_CHILD_DEPTH {
            break;
        }
        above = parent_name(parent.as_ref()).and_then(&lookup);
    }
    depth
}

/// Why `parent` (with `depth` parents above it, and `children` Instances
/// in its namespace made by KudoOperator tasks) may not make a new child.
pub fn may_add_child(parent: &str, depth: usize, children: usize) -> Result<(), String> {
    if depth + 1 > MAX_CHILD_DEPTH {
        return Err(format!(
            "Instance {parent} is {depth} levels of KudoOperator children deep, and children \
             nest at most {MAX_CHILD_DEPTH} deep; check that the packages do not depend on each \
             other in a circle"
        ));
    }
    if children >= MAX_CHILDREN_PER_NAMESPACE {
        return Err(format!(
            "the namespace already holds {children} Instances made by KudoOperator tasks, at most \
             {MAX_CHILDREN_PER_NAMESPACE}; remove Instances that are no longer needed"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn inst(name: &str, parent: Option<&str>) -> Arc<Instance> {
        let mut inst = Instance::new(name, kudo_api::InstanceSpec::default());
        inst.metadata = ObjectMeta {
            name: Some(name.into()),
            owner_references: parent.map(|p| {
                vec![OwnerReference {
                    api_version: "kudo.dev/v1beta1".into(),
                    kind: "Instance".into(),
                    name: p.into(),
                    uid: format!("uid-{p}"),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        };
        Arc::new(inst)
    }

    #[test]
    fn depth_counts_parents_and_stops_past_the_limit_even_in_a_circle() {
        let store: HashMap<&str, Arc<Instance>> = [
            ("root", inst("root", None)),
            ("a", inst("a", Some("root"))),
            ("b", inst("b", Some("a"))),
            ("x", inst("x", Some("y"))),
            ("y", inst("y", Some("x"))),
        ]
        .into();
        let lookup = |name: &str| store.get(name).cloned();
        assert_eq!(nesting_depth(&store["root"], lookup), 0);
        assert_eq!(nesting_depth(&store["b"], lookup), 2);
        assert_eq!(nesting_depth(&store["x"], lookup), MAX_CHILD_DEPTH + 1);
        assert_eq!(nesting_depth(&inst("gone", Some("missing")), lookup), 0);
    }

    #[test]
    fn a_child_past_the_depth_or_the_namespace_count_is_refused_naming_why() {
        assert!(may_add_child("ns/p", MAX_CHILD_DEPTH - 1, 0).is_ok());
        assert!(
            may_add_child("ns/p", MAX_CHILD_DEPTH, 0)
                .unwrap_err()
                .starts_with("Instance ns/p is 4 levels of KudoOperator children deep")
        );
        assert!(
            may_add_child("ns/p", 0, MAX_CHILDREN_PER_NAMESPACE)
                .unwrap_err()
                .contains("already holds 256 Instances made by KudoOperator tasks")
        );
    }
}
