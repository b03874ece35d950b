//! Which built-in versions were removed in which Kubernetes release, what
//! replaces each, and when the replacements appeared. Written from the
//! Kubernetes deprecation guide and release notes (1.16, 1.20, 1.21, 1.22,
//! 1.25, 1.26, 1.27, 1.29, 1.32).

use super::{Convert, admission, autoscaling, cluster, crd, networking, workloads};

/// A kind whose version is removed and whose successors are tried in order.
pub(super) struct Rule {
    pub(super) api_version: &'static str,
    pub(super) kind: &'static str,
    /// Release that stopped serving `api_version` (`1.25`).
    pub(super) removed_in: &'static str,
    /// Alpha versions were never served unless an administrator enabled them.
    pub(super) alpha: bool,
    /// Successor versions, preferred first.
    pub(super) targets: &'static [&'static str],
    pub(super) convert: Convert,
    /// Set when no successor is left from some release on.
    pub(super) gone: Option<Gone>,
}

/// A kind removed without successor.
pub(super) struct Gone {
    pub(super) removed_in: &'static str,
    pub(super) advice: &'static str,
}

const APPS: &[&str] = &["apps/v1"];

const PSP_GONE: Gone = Gone {
    removed_in: "1.25",
    advice: "use Pod Security Admission instead (label the namespace \
             pod-security.kubernetes.io/enforce=baseline or restricted) or a policy engine, \
             and drop the PodSecurityPolicy and the RBAC rules that grant `use` of it",
};

const PODPRESET_GONE: Gone = Gone {
    removed_in: "1.20",
    advice: "set the environment and volumes in the pod templates themselves, or use a \
             mutating admission webhook that injects them",
};

const fn removal(
    api_version: &'static str,
    kind: &'static str,
    removed_in: &'static str,
    targets: &'static [&'static str],
    convert: Convert,
) -> Rule {
    Rule {
        api_version,
        kind,
        removed_in,
        alpha: false,
        targets,
        convert,
        gone: None,
    }
}

const fn alpha(mut r: Rule) -> Rule {
    r.alpha = true;
    r
}

const fn gone(mut r: Rule, g: Gone) -> Rule {
    r.gone = Some(g);
    r
}

/// The removals, grouped by release.
#[rustfmt::skip]
const RULES: &[Rule] = &[
    // 1.16
    removal("extensions/v1beta1", "Deployment", "1.16", APPS, workloads::extensions_deployment),
    removal("extensions/v1beta1", "DaemonSet", "1.16", APPS, workloads::extensions_daemon_set),
    removal("extensions/v1beta1", "ReplicaSet", "1.16", APPS, workloads::replica_set),
    removal("apps/v1beta1", "Deployment", "1.16", APPS, workloads::apps_v1beta1_deployment),
    removal("apps/v1beta1", "StatefulSet", "1.16", APPS, workloads::apps_v1beta1_stateful_set),
    removal("apps/v1beta2", "Deployment", "1.16", APPS, workloads::apps_v1beta2),
    removal("apps/v1beta2", "StatefulSet", "1.16", APPS, workloads::apps_v1beta2),
    removal("apps/v1beta2", "DaemonSet", "1.16", APPS, workloads::apps_v1beta2),
    removal("apps/v1beta2", "ReplicaSet", "1.16", APPS, workloads::apps_v1beta2),
    removal("extensions/v1beta1", "NetworkPolicy", "1.16", &["networking.k8s.io/v1"], same),
    gone(
        removal("extensions/v1beta1", "PodSecurityPolicy", "1.16", &["policy/v1beta1"], same),
        PSP_GONE,
    ),
    // 1.20
    gone(alpha(removal("settings.k8s.io/v1alpha1", "PodPreset", "1.20", &[], same)), PODPRESET_GONE),
    // 1.21
    alpha(removal("batch/v2alpha1", "CronJob", "1.21", &["batch/v1", "batch/v1beta1"], same)),
    // 1.22
    removal("extensions/v1beta1", "Ingress", "1.22", &["networking.k8s.io/v1"], networking::ingress),
    removal("networking.k8s.io/v1beta1", "Ingress", "1.22", &["networking.k8s.io/v1"], networking::ingress),
    removal("networking.k8s.io/v1beta1", "IngressClass", "1.22", &["networking.k8s.io/v1"], same),
    removal("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "1.22", &["apiextensions.k8s.io/v1"], crd::custom_resource_definition),
    removal("admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration", "1.22", &["admissionregistration.k8s.io/v1"], admission::webhook_configuration),
    removal("admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration", "1.22", &["admissionregistration.k8s.io/v1"], admission::webhook_configuration),
    removal("rbac.authorization.k8s.io/v1beta1", "Role", "1.22", &["rbac.authorization.k8s.io/v1"], same),
    removal("rbac.authorization.k8s.io/v1beta1", "ClusterRole", "1.22", &["rbac.authorization.k8s.io/v1"], same),
    removal("rbac.authorization.k8s.io/v1beta1", "RoleBinding", "1.22", &["rbac.authorization.k8s.io/v1"], same),
    removal("rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding", "1.22", &["rbac.authorization.k8s.io/v1"], same),
    alpha(removal("rbac.authorization.k8s.io/v1alpha1", "Role", "1.22", &["rbac.authorization.k8s.io/v1"], same)),
    alpha(removal("rbac.authorization.k8s.io/v1alpha1", "ClusterRole", "1.22", &["rbac.authorization.k8s.io/v1"], same)),
    alpha(removal("rbac.authorization.k8s.io/v1alpha1", "RoleBinding", "1.22", &["rbac.authorization.k8s.io/v1"], cluster::rbac_v1alpha1_binding)),
    alpha(removal("rbac.authorization.k8s.io/v1alpha1", "ClusterRoleBinding", "1.22", &["rbac.authorization.k8s.io/v1"], cluster::rbac_v1alpha1_binding)),
    removal("scheduling.k8s.io/v1beta1", "PriorityClass", "1.22", &["scheduling.k8s.io/v1"], same),
    removal("storage.k8s.io/v1beta1", "StorageClass", "1.22", &["storage.k8s.io/v1"], same),
    removal("storage.k8s.io/v1beta1", "VolumeAttachment", "1.22", &["storage.k8s.io/v1"], same),
    removal("storage.k8s.io/v1beta1", "CSIDriver", "1.22", &["storage.k8s.io/v1"], same),
    removal("storage.k8s.io/v1beta1", "CSINode", "1.22", &["storage.k8s.io/v1"], same),
    removal("coordination.k8s.io/v1beta1", "Lease", "1.22", &["coordination.k8s.io/v1"], same),
    removal("certificates.k8s.io/v1beta1", "CertificateSigningRequest", "1.22", &["certificates.k8s.io/v1"], cluster::certificate_signing_request),
    removal("apiregistration.k8s.io/v1beta1", "APIService", "1.22", &["apiregistration.k8s.io/v1"], same),
    alpha(removal("node.k8s.io/v1alpha1", "RuntimeClass", "1.22", &["node.k8s.io/v1", "node.k8s.io/v1beta1"], cluster::runtime_class_v1alpha1)),
    // 1.25
    removal("batch/v1beta1", "CronJob", "1.25", &["batch/v1"], same),
    removal("policy/v1beta1", "PodDisruptionBudget", "1.25", &["policy/v1"], cluster::pod_disruption_budget),
    gone(removal("policy/v1beta1", "PodSecurityPolicy", "1.25", &[], same), PSP_GONE),
    removal("autoscaling/v2beta1", "HorizontalPodAutoscaler", "1.25", &["autoscaling/v2", "autoscaling/v2beta2"], autoscaling::v2beta1_horizontal_pod_autoscaler),
    removal("discovery.k8s.io/v1beta1", "EndpointSlice", "1.25", &["discovery.k8s.io/v1"], cluster::endpoint_slice),
    removal("events.k8s.io/v1beta1", "Event", "1.25", &["events.k8s.io/v1"], same),
    removal("node.k8s.io/v1beta1", "RuntimeClass", "1.25", &["node.k8s.io/v1"], same),
    // 1.26
    removal("autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.26", &["autoscaling/v2"], same),
    removal("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", "1.26", FLOWCONTROL, same),
    removal("flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration", "1.26", FLOWCONTROL, cluster::priority_level_configuration),
    // 1.27
    removal("storage.k8s.io/v1beta1", "CSIStorageCapacity", "1.27", &["storage.k8s.io/v1"], same),
    // 1.29
    removal("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", "1.29", FLOWCONTROL, same),
    removal("flowcontrol.apiserver.k8s.io/v1beta2", "PriorityLevelConfiguration", "1.29", FLOWCONTROL, cluster::priority_level_configuration),
    // 1.32
    removal("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.32", &["flowcontrol.apiserver.k8s.io/v1"], same),
    removal("flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration", "1.32", &["flowcontrol.apiserver.k8s.io/v1"], cluster::priority_level_configuration),
];

const FLOWCONTROL: &[&str] = &[
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta3",
];

/// The successor versions and the minor release that first served each
/// (by default), for answering "served?" without a cluster.
const INTRODUCED: &[(&str, &str, u32)] = &[
    ("apps/v1", "Deployment", 9),
    ("apps/v1", "StatefulSet", 9),
    ("apps/v1", "DaemonSet", 9),
    ("apps/v1", "ReplicaSet", 9),
    ("networking.k8s.io/v1", "NetworkPolicy", 7),
    ("networking.k8s.io/v1", "Ingress", 19),
    ("networking.k8s.io/v1", "IngressClass", 19),
    ("networking.k8s.io/v1beta1", "Ingress", 14),
    ("networking.k8s.io/v1beta1", "IngressClass", 18),
    ("policy/v1beta1", "PodSecurityPolicy", 10),
    ("policy/v1", "PodDisruptionBudget", 21),
    ("batch/v1beta1", "CronJob", 8),
    ("batch/v1", "CronJob", 21),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", 16),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        16,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        16,
    ),
    ("rbac.authorization.k8s.io/v1", "Role", 8),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", 8),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", 8),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", 8),
    ("scheduling.k8s.io/v1", "PriorityClass", 14),
    ("storage.k8s.io/v1", "StorageClass", 6),
    ("storage.k8s.io/v1", "VolumeAttachment", 13),
    ("storage.k8s.io/v1", "CSINode", 17),
    ("storage.k8s.io/v1", "CSIDriver", 18),
    ("storage.k8s.io/v1", "CSIStorageCapacity", 24),
    ("storage.k8s.io/v1beta1", "CSIStorageCapacity", 21),
    ("coordination.k8s.io/v1", "Lease", 14),
    ("certificates.k8s.io/v1", "CertificateSigningRequest", 19),
    ("apiregistration.k8s.io/v1", "APIService", 10),
    ("node.k8s.io/v1beta1", "RuntimeClass", 14),
    ("node.k8s.io/v1", "RuntimeClass", 20),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler", 12),
    ("autoscaling/v2", "HorizontalPodAutoscaler", 23),
    ("discovery.k8s.io/v1beta1", "EndpointSlice", 17),
    ("discovery.k8s.io/v1", "EndpointSlice", 21),
    ("events.k8s.io/v1", "Event", 19),
    ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", 20),
    (
        "flowcontrol.apiserver.k8s.io/v1beta1",
        "PriorityLevelConfiguration",
        20,
    ),
    ("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", 23),
    (
        "flowcontrol.apiserver.k8s.io/v1beta2",
        "PriorityLevelConfiguration",
        23,
    ),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 26),
    (
        "flowcontrol.apiserver.k8s.io/v1beta3",
        "PriorityLevelConfiguration",
        26,
    ),
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", 29),
    (
        "flowcontrol.apiserver.k8s.io/v1",
        "PriorityLevelConfiguration",
        29,
    ),
];

/// Identity conversion: the successor has the same fields.
fn same(_: &mut serde_json::Value, _: &str, _: &mut Vec<String>) -> Result<(), super::Refusal> {
    Ok(())
}

pub(super) fn rule(api_version: &str, kind: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .find(|r| r.api_version == api_version && r.kind == kind)
}

/// A built-in version that Kubernetes no longer serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemovedVersion {
    /// `policy/v1beta1`.
    pub api_version: &'static str,
    /// `PodDisruptionBudget`.
    pub kind: &'static str,
    /// The release that stopped serving it (`1.25`).
    pub removed_in: &'static str,
    /// An alpha version, served only where an administrator enabled it.
    pub alpha: bool,
    /// What replaces it, preferred first; empty when nothing does.
    pub successors: &'static [&'static str],
    /// The release from which the kind has no successor at all.
    pub kind_removed_in: Option<&'static str>,
}

impl RemovedVersion {
    fn of(r: &Rule) -> Self {
        Self {
            api_version: r.api_version,
            kind: r.kind,
            removed_in: r.removed_in,
            alpha: r.alpha,
            successors: r.targets,
            kind_removed_in: r.gone.as_ref().map(|g| g.removed_in),
        }
    }

    /// The minor number of [`Self::removed_in`].
    pub fn removed_in_minor(&self) -> u32 {
        minor(self.removed_in)
    }
}

/// Whether `api_version` `kind` is a removed built-in version, and when it
/// was removed: for explaining "the server has no such kind" truthfully.
pub fn removed_version(api_version: &str, kind: &str) -> Option<RemovedVersion> {
    rule(api_version, kind).map(RemovedVersion::of)
}

/// Every removed built-in version this crate translates or refuses, in
/// release order.
pub fn removed_versions() -> Vec<RemovedVersion> {
    RULES.iter().map(RemovedVersion::of).collect()
}

/// The release that first served `api_version` `kind` (by default), for the
/// successor versions this crate translates to (`policy/v1`
/// PodDisruptionBudget → `1.21`); `None` for anything else.
pub fn introduced_in(api_version: &str, kind: &str) -> Option<String> {
    introduced_minor(api_version, kind).map(|m| format!("1.{m}"))
}

pub(super) fn introduced_minor(api_version: &str, kind: &str) -> Option<u32> {
    INTRODUCED
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, m)| *m)
}

/// `1.25` → 25.
pub(super) fn minor(release: &str) -> u32 {
    release
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}
