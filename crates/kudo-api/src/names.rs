//! Well-known names: API group, labels, annotations, finalizer, plan names.
//!
//! Values are KUDO's, so objects written by KUDO and by kudo-rs are
//! recognised by both.

/// API group of all kudo-rs custom resources.
pub const GROUP: &str = "kudo.dev";
/// API version of all kudo-rs custom resources.
pub const VERSION: &str = "v1beta1";
/// `apiVersion` string (`kudo.dev/v1beta1`).
pub const API_VERSION: &str = "kudo.dev/v1beta1";

/// Label `heritage: kudo` on every object kudo-rs renders.
pub const HERITAGE_LABEL: &str = "heritage";
/// Value of [`HERITAGE_LABEL`].
pub const HERITAGE_VALUE: &str = "kudo";
/// Label carrying the operator name.
pub const OPERATOR_LABEL: &str = "kudo.dev/operator";
/// Label carrying the instance name.
pub const INSTANCE_LABEL: &str = "kudo.dev/instance";
/// Label on cluster-scoped objects carrying the instance namespace (kudo-rs
/// addition: cluster-scoped objects cannot have an owner reference to a
/// namespaced Instance, so ownership is recorded in labels).
pub const INSTANCE_NAMESPACE_LABEL: &str = "kudo.dev/instance-namespace";

/// Annotation: plan that last applied the object.
pub const PLAN_ANNOTATION: &str = "kudo.dev/plan";
/// Annotation: phase that last applied the object.
pub const PHASE_ANNOTATION: &str = "kudo.dev/phase";
/// Annotation: step that last applied the object.
pub const STEP_ANNOTATION: &str = "kudo.dev/step";
/// Annotation: uid of the plan execution that last applied the object.
pub const PLAN_UID_ANNOTATION: &str = "kudo.dev/last-plan-execution-uid";
/// Pod-template annotation: OperatorVersion `spec.version`.
pub const OPERATOR_VERSION_ANNOTATION: &str = "kudo.dev/operator-version";
/// Pod-template annotation: hash of referenced ConfigMaps/Secrets.
pub const DEPENDENCIES_HASH_ANNOTATION: &str = "kudo.dev/dependencies-hash";
/// Annotation on a ConfigMap/Secret excluding it from the dependencies hash.
pub const SKIP_HASH_ANNOTATION: &str = "kudo.dev/skip-hash-calculation";
/// Annotation holding the last applied configuration (3-way merge base, hash input).
pub const LAST_APPLIED_ANNOTATION: &str = "kudo.dev/last-applied-configuration";
/// Annotation on pipe pods.
pub const PIPE_POD_ANNOTATION: &str = "kudo.dev/pipepod";
/// Annotation on a custom resource declaring its readiness rule (a kudo-rs
/// addition; the rule's grammar is `kudo_engine::health`'s).
pub const HEALTH_ANNOTATION: &str = "kudo.dev/health";

/// On a rendered object (the package opts in): an existing object of that
/// name that kudo-rs did not create is taken over instead of refused.
pub const ADOPT_EXISTING_ANNOTATION: &str = "kudo.dev/adopt-existing";
/// On a live object (its owner opts in): `namespace/name` of the Instance
/// that may take it over, even from another Instance.
pub const ADOPT_BY_ANNOTATION: &str = "kudo.dev/adopt-by";
/// Prefix of the annotations on a cluster-scoped object that record each
/// Instance that applied it: `owners.kudo.dev/<instance uid>: <namespace>/<name>`.
/// Several Instances may share a CustomResourceDefinition or a Namespace;
/// the object is deleted only when the last of them lets it go.
pub const OWNER_ANNOTATION_PREFIX: &str = "owners.kudo.dev/";
/// On an Instance being deleted: delete the CustomResourceDefinitions it
/// applied (when no other Instance still uses them); without it they stay.
pub const DELETE_CRDS_ANNOTATION: &str = "kudo.dev/delete-crds";
/// On an OperatorVersion (its namespace's owner opts in): `*` or a
/// comma-separated list of the other namespaces whose Instances may run it.
pub const SHARED_WITH_ANNOTATION: &str = "kudo.dev/shared-with";
/// On a Namespace: how many of its Instances may be automatically
/// suppressed before automatic plans in the whole namespace hold (a number
/// N holds when more than N are; `off` never holds). Overrides the
/// manager's `--namespace-suppression-threshold`.
pub const SUPPRESSION_THRESHOLD_ANNOTATION: &str = "kudo.dev/suppression-threshold";
/// Finalizer that holds an Instance until its `cleanup` plan has run.
pub const CLEANUP_FINALIZER: &str = "kudo.dev.instance.cleanup";

/// The ServiceAccount of each namespace that Instances' objects are written
/// as by default (made by the manager, see [`crate::rbac`]).
pub const INSTANCE_ACCOUNT: &str = "kudo-instance";
/// The ClusterRole that account is bound to in its namespace.
pub const INSTANCE_ROLE: &str = "kudo-instance";

/// Field manager used for server-side apply.
pub const FIELD_MANAGER: &str = "kudo-manager";

/// Plan run on creation.
pub const DEPLOY_PLAN: &str = "deploy";
/// Plan run on parameter changes without a trigger.
pub const UPDATE_PLAN: &str = "update";
/// Plan run on an OperatorVersion upgrade.
pub const UPGRADE_PLAN: &str = "upgrade";
/// Plan run on deletion.
pub const CLEANUP_PLAN: &str = "cleanup";
/// Plan the manager builds itself (it is not in any package) to re-apply
/// objects that were deleted or changed behind its back.
pub const RECOVERY_PLAN: &str = "recovery";
/// Plans with a special meaning.
pub const SPECIAL_PLANS: [&str; 4] = [DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN, CLEANUP_PLAN];

/// Name of the validating webhook path served by the manager.
pub const WEBHOOK_PATH: &str = "/validate-kudo-dev-v1beta1-instance";
