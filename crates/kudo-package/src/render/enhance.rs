//! KUDO's enhancer: the labels, annotations, namespace and ownership KUDO
//! stamps on every rendered object, so tools that read KUDO's labels work.

use std::collections::BTreeMap;

use kudo_api::names;
use serde_json::{Map, Value, json};

use super::{Discovery, RenderContext, api_group};
use crate::RenderError;

/// What the objects are rendered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnhanceMode {
    /// Objects to apply: everything is stamped.
    Apply,
    /// Objects to delete: only the namespace is set.
    Delete,
}

/// Kinds whose `spec.template` is a pod template.
const POD_TEMPLATE_KINDS: &[&str] = &[
    "StatefulSet",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "DaemonSet",
    "Job",
];

/// Enhances every object of a task. Whether a kind is namespaced comes from
/// `discovery`, or from a CustomResourceDefinition rendered in the same task
/// (so a CRD and its first objects can live in one task). Unknown kinds are
/// FATAL when applying and dropped when deleting, as in KUDO.
pub(crate) fn enhance_all(
    objects: Vec<Value>,
    task: &str,
    ctx: &RenderContext,
    discovery: &dyn Discovery,
    mode: EnhanceMode,
) -> Result<Vec<Value>, RenderError> {
    let crd_scopes = crd_scopes(&objects);
    let mut out = Vec::with_capacity(objects.len());
    for mut obj in objects {
        let api_version = str_at(&obj, "apiVersion").to_string();
        let kind = str_at(&obj, "kind").to_string();
        let namespaced = discovery.is_namespaced(&api_version, &kind).or_else(|| {
            crd_scopes
                .get(&(api_group(&api_version).to_string(), kind.clone()))
                .copied()
        });
        let Some(namespaced) = namespaced else {
            if mode == EnhanceMode::Delete {
                continue;
            }
            return Err(RenderError::UnknownKind {
                task: task.to_string(),
                api_version,
                kind,
                name: object_name(&obj),
            });
        };
        if namespaced {
            check_namespace(&obj, task, &kind, ctx)?;
        }
        enhance_object(&mut obj, ctx, namespaced, mode);
        out.push(obj);
    }
    Ok(out)
}

/// A namespaced object may leave its namespace out or name the Instance's;
/// naming another would let a parameter write into (or delete from) any
/// namespace the writing account reaches. KUDO silently moved such objects.
fn check_namespace(
    obj: &Value,
    task: &str,
    kind: &str,
    ctx: &RenderContext,
) -> Result<(), RenderError> {
    let namespace = obj
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if namespace.is_empty() || namespace == ctx.namespace {
        return Ok(());
    }
    Err(RenderError::ForeignNamespace {
        task: task.to_string(),
        kind: kind.to_string(),
        name: object_name(obj),
        namespace: namespace.to_string(),
        instance_namespace: ctx.namespace.clone(),
    })
}

fn crd_scopes(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter_map(super::discovery::crd_defined_kind)
        .map(|(group, kind, namespaced)| ((group.to_string(), kind.to_string()), namespaced))
        .collect()
}

fn str_at<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The object's `metadata.name` (empty when missing).
pub(crate) fn object_name(obj: &Value) -> String {
    obj.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Stamps one object.
pub fn enhance_object(obj: &mut Value, ctx: &RenderContext, namespaced: bool, mode: EnhanceMode) {
    let kind = str_at(obj, "kind").to_string();
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let metadata = object_field(root, "metadata");
    if namespaced {
        metadata.insert("namespace".into(), json!(ctx.namespace));
    } else {
        metadata.remove("namespace");
    }
    if mode == EnhanceMode::Delete {
        return;
    }
    let labels = ownership_labels(ctx);
    merge_strings(object_field(metadata, "labels"), &labels);
    merge_strings(
        object_field(metadata, "annotations"),
        &[
            (names::PLAN_ANNOTATION, ctx.plan.as_str()),
            (names::PHASE_ANNOTATION, ctx.phase.as_str()),
            (names::STEP_ANNOTATION, ctx.step.as_str()),
            (names::PLAN_UID_ANNOTATION, ctx.plan_uid.as_str()),
        ],
    );
    if namespaced {
        if let Some(uid) = ctx.instance_uid.as_deref() {
            set_controller_reference(metadata, &ctx.instance_name, uid);
        }
    } else {
        merge_strings(
            object_field(metadata, "labels"),
            &[(names::INSTANCE_NAMESPACE_LABEL, ctx.namespace.as_str())],
        );
    }
    let pod_template_annotations = [(
        names::OPERATOR_VERSION_ANNOTATION,
        ctx.operator_version.as_str(),
    )];
    for template in pod_templates_mut(root, &kind) {
        let meta = object_field(template, "metadata");
        merge_strings(object_field(meta, "labels"), &labels);
        merge_strings(object_field(meta, "annotations"), &pod_template_annotations);
    }
    if kind == "StatefulSet"
        && let Some(claims) = root
            .get_mut("spec")
            .and_then(|s| s.get_mut("volumeClaimTemplates"))
            .and_then(Value::as_array_mut)
    {
        for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
            let meta = object_field(claim, "metadata");
            merge_strings(object_field(meta, "labels"), &labels);
        }
    }
}

fn ownership_labels(ctx: &RenderContext) -> [(&'static str, &str); 3] {
    [
        (names::HERITAGE_LABEL, names::HERITAGE_VALUE),
        (names::OPERATOR_LABEL, ctx.operator_name.as_str()),
        (names::INSTANCE_LABEL, ctx.instance_name.as_str()),
    ]
}

/// The pod templates of a workload object (`spec.template`, or
/// `spec.jobTemplate.spec.template` for CronJobs).
pub(crate) fn pod_templates_mut<'a>(
    root: &'a mut Map<String, Value>,
    kind: &str,
) -> Vec<&'a mut Map<String, Value>> {
    let spec = root.get_mut("spec").and_then(Value::as_object_mut);
    let template = match (kind, spec) {
        (k, Some(spec)) if POD_TEMPLATE_KINDS.contains(&k) => spec.get_mut("template"),
        ("CronJob", Some(spec)) => spec
            .get_mut("jobTemplate")
            .and_then(|j| j.get_mut("spec"))
            .and_then(|s| s.get_mut("template")),
        _ => None,
    };
    template
        .and_then(Value::as_object_mut)
        .into_iter()
        .collect()
}

/// The pod template of an object (read-only), if its kind has one.
pub(crate) fn pod_template(obj: &Value) -> Option<&Value> {
    let kind = str_at(obj, "kind");
    let spec = obj.get("spec")?;
    if POD_TEMPLATE_KINDS.contains(&kind) {
        spec.get("template")
    } else if kind == "CronJob" {
        spec.get("jobTemplate")?.get("spec")?.get("template")
    } else {
        None
    }
}

/// The map at `key`, created (or replacing a non-map such as `null`).
pub(crate) fn object_field<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let slot = parent
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(map) => map,
        _ => unreachable!("replaced by a map just above"),
    }
}

fn merge_strings(map: &mut Map<String, Value>, entries: &[(&str, &str)]) {
    for (k, v) in entries {
        map.insert((*k).to_string(), json!(v));
    }
}

fn set_controller_reference(metadata: &mut Map<String, Value>, name: &str, uid: &str) {
    let reference = json!({
        "apiVersion": names::API_VERSION,
        "kind": "Instance",
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let refs = metadata
        .entry("ownerReferences".to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !refs.is_array() {
        *refs = Value::Array(Vec::new());
    }
    if let Value::Array(list) = refs {
        list.retain(|r| {
            r.get("uid").and_then(Value::as_str) != Some(uid)
                && r.get("controller").and_then(Value::as_bool) != Some(true)
        });
        list.push(reference);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::StaticDiscovery;

    fn ctx() -> RenderContext {
        RenderContext {
            instance_name: "zk".into(),
            namespace: "data".into(),
            instance_uid: Some("uid-1".into()),
            operator_name: "zookeeper".into(),
            operator_version: "0.1.0".into(),
            plan: "deploy".into(),
            phase: "main".into(),
            step: "everything".into(),
            plan_uid: "plan-uid".into(),
            ..Default::default()
        }
    }

    /// Enhances `objects` for task `t` of [`ctx`] with no cluster discovery.
    fn enhance(objects: Vec<Value>, mode: EnhanceMode) -> Result<Vec<Value>, RenderError> {
        enhance_all(objects, "t", &ctx(), &StaticDiscovery::default(), mode)
    }

    #[test]
    fn namespaced_objects_get_labels_annotations_namespace_and_controller_reference() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let out = enhance(vec![obj], EnhanceMode::Apply).unwrap();
        let m = &out[0]["metadata"];
        assert_eq!(m["namespace"], "data");
        assert_eq!(m["labels"]["heritage"], "kudo");
        assert_eq!(m["labels"]["kudo.dev/operator"], "zookeeper");
        assert_eq!(m["labels"]["kudo.dev/instance"], "zk");
        assert_eq!(m["annotations"]["kudo.dev/plan"], "deploy");
        assert_eq!(m["annotations"]["kudo.dev/phase"], "main");
        assert_eq!(m["annotations"]["kudo.dev/step"], "everything");
        assert_eq!(
            m["annotations"]["kudo.dev/last-plan-execution-uid"],
            "plan-uid"
        );
        assert_eq!(
            m["ownerReferences"],
            json!([{"apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "name": "zk", "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}])
        );
    }

    #[test]
    fn a_namespaced_object_naming_another_namespace_is_refused_to_apply_and_to_delete() {
        for mode in [EnhanceMode::Apply, EnhanceMode::Delete] {
            let obj = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "kube-system"}});
            let err = enhance(vec![obj], mode).unwrap_err();
            assert!(err.is_fatal());
            let text = err.to_string();
            assert!(
                text.contains("Secret s names namespace \"kube-system\"")
                    && text.contains("Instance is in \"data\"")
                    && text.contains("{{ .Namespace }}"),
                "{text}"
            );
        }
        let own = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "data"}});
        assert!(enhance(vec![own], EnhanceMode::Apply).is_ok());
    }

    #[test]
    fn cluster_scoped_objects_get_ownership_labels_and_no_namespace() {
        let obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "x"}});
        let out = enhance(vec![obj], EnhanceMode::Apply).unwrap();
        let m = &out[0]["metadata"];
        assert!(m.get("namespace").is_none());
        assert!(m.get("ownerReferences").is_none());
        assert_eq!(m["labels"]["kudo.dev/instance-namespace"], "data");
        assert_eq!(m["labels"]["kudo.dev/instance"], "zk");
    }

    #[test]
    fn pod_templates_and_claim_templates_are_labelled() {
        let obj = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
            "spec": {"template": {"spec": {}}, "volumeClaimTemplates": [{"metadata": {"name": "data"}}]}});
        let out = enhance(vec![obj], EnhanceMode::Apply).unwrap();
        let tmpl = &out[0]["spec"]["template"]["metadata"];
        assert_eq!(tmpl["labels"]["kudo.dev/instance"], "zk");
        assert_eq!(tmpl["annotations"]["kudo.dev/operator-version"], "0.1.0");
        assert!(tmpl["annotations"].get("kudo.dev/plan").is_none());
        assert_eq!(
            out[0]["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"]["heritage"],
            "kudo"
        );
    }

    #[test]
    fn cronjob_job_template_pod_template_is_labelled() {
        let obj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        let out = enhance(vec![obj], EnhanceMode::Apply).unwrap();
        let meta = &out[0]["spec"]["jobTemplate"]["spec"]["template"]["metadata"];
        assert_eq!(meta["labels"]["kudo.dev/operator"], "zookeeper");
    }

    #[test]
    fn unknown_kinds_are_fatal_for_apply_and_dropped_for_delete() {
        let obj =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let err = enhance(vec![obj.clone()], EnhanceMode::Apply).unwrap_err();
        assert!(err.is_fatal());
        assert!(err.to_string().contains("Widget w"), "{err}");
        let out = enhance(vec![obj], EnhanceMode::Delete).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn a_crd_in_the_same_task_makes_its_kind_known() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget"}}});
        let obj =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        let out = enhance(vec![crd, obj], EnhanceMode::Apply).unwrap();
        assert_eq!(out[1]["metadata"]["namespace"], "data");
        assert!(out[0]["metadata"].get("namespace").is_none());
    }

    #[test]
    fn delete_mode_only_sets_the_namespace() {
        let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}});
        let out = enhance(vec![obj], EnhanceMode::Delete).unwrap();
        assert_eq!(
            out[0]["metadata"],
            json!({"name": "s", "namespace": "data"})
        );
    }
}
