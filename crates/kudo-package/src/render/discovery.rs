//! Whether a kind is namespaced: asked of a [`Discovery`] passed in by the
//! caller (the manager wraps the API server's discovery; tests and
//! `package render` use [`StaticDiscovery`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Answers whether objects of a kind live in a namespace.
pub trait Discovery {
    /// `Some(true)` for namespaced kinds, `Some(false)` for cluster-scoped
    /// ones, `None` when the kind is unknown to the API server.
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
}

/// A fixed table of kinds, keyed by API group and kind (any version).
#[derive(Clone, Debug)]
pub struct StaticDiscovery {
    kinds: BTreeMap<(String, String), bool>,
}

/// Built-in kinds: (group, kind, namespaced).
const BUILT_IN: &[(&str, &str, bool)] = &[
    ("", "Pod", true),
    ("", "Service", true),
    ("", "ConfigMap", true),
    ("", "Secret", true),
    ("", "ServiceAccount", true),
    ("", "PersistentVolumeClaim", true),
    ("", "Endpoints", true),
    ("", "Event", true),
    ("", "LimitRange", true),
    ("", "ResourceQuota", true),
    ("", "ReplicationController", true),
    ("", "PodTemplate", true),
    ("", "Namespace", false),
    ("", "Node", false),
    ("", "PersistentVolume", false),
    ("apps", "Deployment", true),
    ("apps", "StatefulSet", true),
    ("apps", "DaemonSet", true),
    ("apps", "ReplicaSet", true),
    ("apps", "ControllerRevision", true),
    ("batch", "Job", true),
    ("batch", "CronJob", true),
    ("policy", "PodDisruptionBudget", true),
    ("autoscaling", "HorizontalPodAutoscaler", true),
    ("networking.k8s.io", "Ingress", true),
    ("networking.k8s.io", "NetworkPolicy", true),
    ("extensions", "Deployment", true),
    ("extensions", "DaemonSet", true),
    ("extensions", "ReplicaSet", true),
    ("extensions", "Ingress", true),
    ("extensions", "NetworkPolicy", true),
    ("extensions", "PodSecurityPolicy", false),
    ("networking.k8s.io", "IngressClass", false),
    ("discovery.k8s.io", "EndpointSlice", true),
    ("coordination.k8s.io", "Lease", true),
    ("rbac.authorization.k8s.io", "Role", true),
    ("rbac.authorization.k8s.io", "RoleBinding", true),
    ("rbac.authorization.k8s.io", "ClusterRole", false),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", false),
    ("apiextensions.k8s.io", "CustomResourceDefinition", false),
    ("storage.k8s.io", "StorageClass", false),
    ("scheduling.k8s.io", "PriorityClass", false),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        false,
    ),
    ("storage.k8s.io", "VolumeAttachment", false),
    ("storage.k8s.io", "CSIDriver", false),
    ("storage.k8s.io", "CSINode", false),
    ("storage.k8s.io", "CSIStorageCapacity", true),
    ("node.k8s.io", "RuntimeClass", false),
    ("certificates.k8s.io", "CertificateSigningRequest", false),
    ("events.k8s.io", "Event", true),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", false),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        false,
    ),
    ("apiregistration.k8s.io", "APIService", false),
    // Kinds that are gone, so that rendering them offline does not give
    // them a namespace they never had.
    ("policy", "PodSecurityPolicy", false),
    ("settings.k8s.io", "PodPreset", true),
    ("kudo.dev", "Operator", true),
    ("kudo.dev", "OperatorVersion", true),
    ("kudo.dev", "Instance", true),
];

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn api_group(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group)
}

/// The kind a CustomResourceDefinition defines: its group, its kind and
/// whether its objects are namespaced (anything but scope `Cluster`);
/// None for any other object or a CRD without group or kind.
pub fn crd_defined_kind(obj: &Value) -> Option<(&str, &str, bool)> {
    if obj.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return None;
    }
    let spec = obj.get("spec")?;
    let group = spec.get("group")?.as_str()?;
    let kind = spec.get("names")?.get("kind")?.as_str()?;
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    Some((group, kind, namespaced))
}

impl Default for StaticDiscovery {
    fn default() -> Self {
        let kinds = BUILT_IN
            .iter()
            .map(|(g, k, ns)| ((g.to_string(), k.to_string()), *ns))
            .collect();
        Self { kinds }
    }
}

impl StaticDiscovery {
    /// A table without any kind.
    pub fn empty() -> Self {
        Self {
            kinds: BTreeMap::new(),
        }
    }

    /// Adds (or overrides) a kind; the version part of `api_version` is ignored.
    pub fn add_kind(&mut self, api_version: &str, kind: &str, namespaced: bool) -> &mut Self {
        self.kinds.insert(
            (api_group(api_version).to_string(), kind.to_string()),
            namespaced,
        );
        self
    }
}

impl StaticDiscovery {
    /// Adds the kinds that CustomResourceDefinitions among `objects`
    /// define, with their scope (anything but `Cluster` is namespaced).
    pub fn learn_crds<'a>(&mut self, objects: impl IntoIterator<Item = &'a Value>) -> &mut Self {
        for (group, kind, namespaced) in objects.into_iter().filter_map(crd_defined_kind) {
            self.kinds
                .insert((group.to_string(), kind.to_string()), namespaced);
        }
        self
    }
}

/// Discovery for rendering without a cluster: a kind `inner` does not know
/// (a custom resource whose CRD another product installs, such as
/// Prometheus' ServiceMonitor) is taken as namespaced, as most custom
/// resources are, and remembered so the caller can say so.
pub struct AssumeNamespaced<'a> {
    inner: &'a dyn Discovery,
    assumed: RefCell<BTreeSet<(String, String)>>,
}

impl<'a> AssumeNamespaced<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a dyn Discovery) -> Self {
        Self {
            inner,
            assumed: RefCell::new(BTreeSet::new()),
        }
    }

    /// The kinds answered by assumption, as `Kind (group)`, sorted.
    pub fn assumed(&self) -> Vec<String> {
        self.assumed
            .borrow()
            .iter()
            .map(|(group, kind)| format!("{kind} ({group})"))
            .collect()
    }
}

impl Discovery for AssumeNamespaced<'_> {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.inner.is_namespaced(api_version, kind).or_else(|| {
            self.assumed
                .borrow_mut()
                .insert((api_group(api_version).to_string(), kind.to_string()));
            Some(true)
        })
    }
}

impl Discovery for StaticDiscovery {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.kinds
            .get(&(api_group(api_version).to_string(), kind.to_string()))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_are_known_by_group_and_kind() {
        let d = StaticDiscovery::default();
        assert_eq!(d.is_namespaced("apps/v1", "StatefulSet"), Some(true));
        assert_eq!(d.is_namespaced("v1", "Namespace"), Some(false));
        assert_eq!(
            d.is_namespaced("policy/v1beta1", "PodDisruptionBudget"),
            Some(true)
        );
        assert_eq!(d.is_namespaced("example.com/v1", "Widget"), None);
    }

    #[test]
    fn crds_teach_their_kind_and_scope() {
        let crds = [
            serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "example.com", "names": {"kind": "Widget"}, "scope": "Cluster"}}),
            serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "example.com", "names": {"kind": "Gadget"}}}),
            serde_json::json!({"kind": "ConfigMap", "spec": {"group": "example.com", "names": {"kind": "Nope"}}}),
        ];
        let mut d = StaticDiscovery::empty();
        d.learn_crds(&crds);
        assert_eq!(d.is_namespaced("example.com/v1", "Widget"), Some(false));
        assert_eq!(d.is_namespaced("example.com/v1", "Gadget"), Some(true));
        assert_eq!(d.is_namespaced("example.com/v1", "Nope"), None);
    }

    #[test]
    fn unknown_kinds_are_assumed_namespaced_and_listed() {
        let table = StaticDiscovery::default();
        let d = AssumeNamespaced::new(&table);
        assert_eq!(d.is_namespaced("v1", "Namespace"), Some(false));
        assert_eq!(
            d.is_namespaced("monitoring.example.com/v1", "Monitor"),
            Some(true)
        );
        assert_eq!(d.assumed(), vec!["Monitor (monitoring.example.com)"]);
    }

    #[test]
    fn added_kinds_are_found() {
        let mut d = StaticDiscovery::empty();
        d.add_kind("example.com/v1", "Widget", false);
        assert_eq!(d.is_namespaced("example.com/v2", "Widget"), Some(false));
    }
}
