//! The ClusterRole an Instance's objects are written with by default.
//!
//! The manager applies an Instance's objects as the ServiceAccount
//! [`INSTANCE_ACCOUNT`] of the Instance's namespace (impersonation), bound
//! there by a RoleBinding to this ClusterRole: what a namespace's
//! application needs, in that namespace only, and nothing cluster-scoped.
//! `kubectl kudo init` and `kudo-manager dev` install it; the manager makes
//! the account and its RoleBinding in a namespace the first time an
//! Instance there needs them.

use serde_json::{Value, json};

use crate::names::{INSTANCE_ACCOUNT, INSTANCE_ROLE};

/// Verbs of full rights on a resource.
const ALL: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];
/// Verbs of reading.
const READ: [&str; 3] = ["get", "list", "watch"];

/// The rules of the [`INSTANCE_ROLE`] ClusterRole (as JSON `PolicyRule`s):
/// the kinds packages create in their namespace (workloads, configuration,
/// services, storage claims, disruption budgets, ingresses and network
/// policies, autoscalers, namespaced RBAC, child Instances), running pipe
/// pods, and reading what health and pods need. A package's Role or
/// RoleBinding can grant only what these rules hold (the API server's
/// escalation check).
pub fn instance_rules() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["configmaps", "secrets", "services", "serviceaccounts", "persistentvolumeclaims", "pods"], "verbs": ALL},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create", "get"]},
        {"apiGroups": [""], "resources": ["endpoints", "events"], "verbs": READ},
        {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets", "replicasets"], "verbs": ALL},
        {"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": READ},
        {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ALL},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ALL},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "networkpolicies"], "verbs": ALL},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ALL},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ALL},
        {"apiGroups": ["kudo.dev"], "resources": ["instances"], "verbs": ALL},
        {"apiGroups": ["kudo.dev"], "resources": ["operatorversions"], "verbs": READ},
        // An Instance that tracks a channel gets its releases' Operator and
        // OperatorVersion made in its own namespace, as its own account.
        {"apiGroups": ["kudo.dev"], "resources": ["operators", "operatorversions"], "verbs": ["get", "create"]},
        {"apiGroups": ["kudo.dev"], "resources": ["instances/finalizers"], "verbs": ["update"]},
    ])
}

/// The [`INSTANCE_ROLE`] ClusterRole object.
pub fn instance_cluster_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": INSTANCE_ROLE, "labels": {"app.kubernetes.io/part-of": "kudo-rs"}},
        "rules": instance_rules(),
    })
}

/// The ServiceAccount [`INSTANCE_ACCOUNT`] of `namespace`.
pub fn instance_account(namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": INSTANCE_ACCOUNT, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "kudo-manager"}},
    })
}

/// The RoleBinding of [`INSTANCE_ACCOUNT`] to [`INSTANCE_ROLE`] in `namespace`.
pub fn instance_role_binding(namespace: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": INSTANCE_ACCOUNT, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "kudo-manager"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": INSTANCE_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": INSTANCE_ACCOUNT, "namespace": namespace}],
    })
}

/// What the manager needs beyond its own work to write as the instance
/// accounts: make each account and bind it to [`INSTANCE_ROLE`] (and
/// nothing else: `bind` is limited to that ClusterRole, which it checks for
/// at start), and impersonate it.
pub fn account_management_rules() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate", "create"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"], "verbs": ["get", "create"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind", "get"], "resourceNames": [INSTANCE_ROLE]},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instance_role_grants_nothing_cluster_scoped_and_no_escalation() {
        let rules = instance_rules();
        let text = rules.to_string();
        for cluster_scoped in [
            "\"namespaces\"",
            "\"nodes\"",
            "\"clusterroles\"",
            "\"clusterrolebindings\"",
            "\"customresourcedefinitions\"",
            "\"persistentvolumes\"",
        ] {
            assert!(!text.contains(cluster_scoped), "{cluster_scoped} in {text}");
        }
        for verb in ["\"bind\"", "\"escalate\"", "\"impersonate\"", "\"*\""] {
            assert!(!text.contains(verb), "{verb} in {text}");
        }
    }
}
