//! The dependencies hash (KUDO's `kudo.dev/dependencies-hash`): a pod template annotation that
//! changes when a ConfigMap or Secret the pods mount changes, so that the
//! pods roll. The recipe is KUDO's, byte for byte, because KUDO's tests
//! assert exact values.
//!
//! Two phases, because live lookups are IO done by the caller:
//! [`dependency_refs`] says which objects to fetch; the caller fetches them
//! and passes them to [`stamp_dependencies_hash`] (missing ones are simply
//! absent from the map).

use std::collections::{BTreeMap, BTreeSet};

use kudo_api::names;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use crate::RenderError;
use crate::render::api_group;

/// A reference to an object, ordered as KUDO sorts dependencies: group,
/// kind, version, namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// API group (`""` for core).
    pub group: String,
    /// Kind.
    pub kind: String,
    /// API version without the group (`v1`).
    pub version: String,
    /// Namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectRef {
    /// A reference from an `apiVersion` string.
    pub fn new(api_version: &str, kind: &str, namespace: &str, name: &str) -> Self {
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
        Self {
            group: api_group(api_version).to_string(),
            kind: kind.to_string(),
            version: version.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The reference of an object (none without apiVersion, kind or name).
    pub fn of(obj: &Value) -> Option<Self> {
        fn field<'a>(v: Option<&'a Value>, f: &str) -> Option<&'a str> {
            v.and_then(|v| v.get(f)).and_then(Value::as_str)
        }
        let meta = obj.get("metadata");
        Some(Self::new(
            field(Some(obj), "apiVersion")?,
            field(Some(obj), "kind")?,
            field(meta, "namespace").unwrap_or(""),
            field(meta, "name")?,
        ))
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// The ConfigMaps and Secrets a workload's pod template references:
/// `imagePullSecrets`, `volumes[].configMap` and `volumes[].secret` (not
/// env references, as in KUDO), sorted and without duplicates.
pub fn pod_dependencies(obj: &Value) -> Vec<ObjectRef> {
    let Some(spec) = crate::render::pod_template_of(obj).and_then(|t| t.get("spec")) else {
        return Vec::new();
    };
    let namespace = obj
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut deps = BTreeSet::new();
    let list = |field: &str| {
        spec.get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for secret in list("imagePullSecrets") {
        if let Some(name) = secret.get("name").and_then(Value::as_str) {
            deps.insert(ObjectRef::new("v1", "Secret", namespace, name));
        }
    }
    for volume in list("volumes") {
        if let Some(name) = volume
            .get("configMap")
            .and_then(|c| c.get("name"))
            .and_then(Value::as_str)
        {
            deps.insert(ObjectRef::new("v1", "ConfigMap", namespace, name));
        }
        if let Some(name) = volume
            .get("secret")
            .and_then(|s| s.get("secretName"))
            .and_then(Value::as_str)
        {
            deps.insert(ObjectRef::new("v1", "Secret", namespace, name));
        }
    }
    deps.into_iter().collect()
}

/// The dependencies of a task's objects that the task itself does not
/// render: the caller fetches these from the cluster.
pub fn dependency_refs(objects: &[Value]) -> Vec<ObjectRef> {
    let own: BTreeSet<ObjectRef> = objects.iter().filter_map(ObjectRef::of).collect();
    let mut refs = BTreeSet::new();
    for obj in objects {
        for dep in pod_dependencies(obj) {
            if !own.contains(&dep) {
                refs.insert(dep);
            }
        }
    }
    refs.into_iter().collect()
}

/// Writes `kudo.dev/dependencies-hash` on the pod template of every
/// workload that references ConfigMaps or Secrets. Each dependency is taken
/// from the task's own objects, else from `live` (its
/// `kudo.dev/last-applied-configuration` when present); a missing one, or
/// one annotated `kudo.dev/skip-hash-calculation`, counts as 16 zero bytes.
pub fn stamp_dependencies_hash(
    objects: &mut [Value],
    live: &BTreeMap<ObjectRef, Value>,
) -> Result<(), RenderError> {
    let all_deps: Vec<_> = objects.iter().map(pod_dependencies).collect();
    // Most tasks have no pod template referencing anything: then there is
    // nothing to stamp and no reason to copy the objects into `own`.
    if all_deps.iter().all(|d| d.is_empty()) {
        return Ok(());
    }
    let own: BTreeMap<ObjectRef, Value> = objects
        .iter()
        .filter_map(|o| ObjectRef::of(o).map(|r| (r, o.clone())))
        .collect();
    for (obj, deps) in objects.iter_mut().zip(all_deps) {
        if deps.is_empty() {
            continue;
        }
        let mut resolved = Vec::with_capacity(deps.len());
        for dep in &deps {
            let found = match own.get(dep) {
                Some(o) => Some(o.clone()),
                None => match live.get(dep) {
                    Some(l) => Some(effective_live(l).map_err(|detail| RenderError::Hash {
                        object: dep.to_string(),
                        detail,
                    })?),
                    None => None,
                },
            };
            resolved.push(found);
        }
        let hash = dependencies_hash(resolved.iter().map(Option::as_ref));
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if let Some(root) = obj.as_object_mut() {
            for template in crate::render::pod_templates_of_mut(root, &kind) {
                let meta = crate::render::object_field_mut(template, "metadata");
                crate::render::object_field_mut(meta, "annotations")
                    .insert(names::DEPENDENCIES_HASH_ANNOTATION.into(), json!(hash));
            }
        }
    }
    Ok(())
}

/// The live object as last applied: its last-applied-configuration
/// annotation when present, else the object itself.
fn effective_live(live: &Value) -> Result<Value, String> {
    let annotation = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(names::LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str);
    match annotation {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("{} is not valid JSON: {e}", names::LAST_APPLIED_ANNOTATION)),
        None => Ok(live.clone()),
    }
}

fn skips_hash(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(names::SKIP_HASH_ANNOTATION))
        .is_some()
}

/// The final hash: hex of md5 over the concatenated per-dependency md5
/// digests (16 zero bytes for a missing or skipped dependency).
pub fn dependencies_hash<'a>(deps: impl IntoIterator<Item = Option<&'a Value>>) -> String {
    let mut outer = Md5::new();
    for dep in deps {
        match dep {
            Some(obj) if !skips_hash(obj) => {
                outer.update(Md5::digest(hash_text(obj).as_bytes()));
            }
            _ => outer.update([0u8; 16]),
        }
    }
    hex::encode(outer.finalize())
}

/// The text KUDO hashes for one dependency: the sanitized object wrapped
/// as Go's `Unstructured` struct (`object:` at the top), written by yaml.v2.
pub fn hash_text(obj: &Value) -> String {
    crate::yaml::v2::to_string(&json!({ "object": sanitize(obj) }))
}

/// The object with every server-set and ownership field neutralised, as
/// KUDO's hash preparation leaves it.
pub fn sanitize(obj: &Value) -> Value {
    let mut root = obj.as_object().cloned().unwrap_or_default();
    root.insert("apiVersion".into(), json!(""));
    root.insert("kind".into(), json!(""));
    let mut meta: Map<String, Value> = root
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in [
        "namespace",
        "resourceVersion",
        "clusterName",
        "continue",
        "generateName",
        "selfLink",
        "uid",
        "creationTimestamp",
        "generation",
    ] {
        meta.remove(field);
    }
    meta.insert("ownerReferences".into(), json!([]));
    meta.insert("finalizers".into(), json!([]));
    meta.insert("managedFields".into(), json!([]));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    meta.insert("remainingItemCount".into(), json!(0));
    meta.insert("annotations".into(), json!({}));
    root.insert("metadata".into(), Value::Object(meta));
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sanitized ConfigMap of KUDO's e2e test `dependencies-hash`, as
    /// yaml.v2 writes it, the input KUDO hashes.
    const KUDO_SANITIZED_CONFIGMAP: &str = "object:
  apiVersion: \"\"
  data:
    valueA: FancyValue
    valueB: OtherFancyValue
  kind: \"\"
  metadata:
    annotations: {}
    deletionGracePeriodSeconds: 0
    finalizers: []
    labels:
      heritage: kudo
      kudo.dev/instance: depop
      kudo.dev/operator: dep-operator
    managedFields: []
    name: configdata
    ownerReferences: []
    remainingItemCount: 0
";

    fn rendered_configmap() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "configdata",
                "namespace": "kudo-test-abc",
                "labels": {"kudo.dev/operator": "dep-operator", "heritage": "kudo", "kudo.dev/instance": "depop"},
                "annotations": {"kudo.dev/plan": "deploy", "kudo.dev/phase": "main"},
                "ownerReferences": [{"apiVersion": "kudo.dev/v1beta1", "kind": "Instance", "name": "depop", "uid": "x", "controller": true}],
            },
            "data": {"valueB": "OtherFancyValue", "valueA": "FancyValue"},
        })
    }

    #[test]
    fn sanitized_text_matches_kudo_byte_for_byte() {
        assert_eq!(hash_text(&rendered_configmap()), KUDO_SANITIZED_CONFIGMAP);
    }

    #[test]
    fn per_dependency_md5_equals_md5_of_kudos_text() {
        let ours = hex::encode(Md5::digest(hash_text(&rendered_configmap()).as_bytes()));
        let kudos = hex::encode(Md5::digest(KUDO_SANITIZED_CONFIGMAP.as_bytes()));
        assert_eq!(ours, kudos);
        // The final hash is md5 over the concatenated digests.
        let mut outer = Md5::new();
        outer.update(Md5::digest(KUDO_SANITIZED_CONFIGMAP.as_bytes()));
        assert_eq!(
            dependencies_hash([Some(&rendered_configmap())]),
            hex::encode(outer.finalize())
        );
    }

    #[test]
    fn missing_and_skipped_dependencies_count_as_zero_bytes() {
        let mut skipped = rendered_configmap();
        skipped["metadata"]["annotations"][names::SKIP_HASH_ANNOTATION] = json!("true");
        let zero = hex::encode(Md5::digest([0u8; 16]));
        assert_eq!(dependencies_hash([None]), zero);
        assert_eq!(dependencies_hash([Some(&skipped)]), zero);
    }

    fn deployment(volumes: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"template": {"metadata": {}, "spec": {"volumes": volumes, "imagePullSecrets": [{"name": "pull"}]}}}})
    }

    #[test]
    fn dependencies_are_volumes_and_pull_secrets_sorted() {
        let d = deployment(
            json!([{"name": "a", "secret": {"secretName": "s"}}, {"name": "b", "configMap": {"name": "c"}}]),
        );
        let deps: Vec<String> = pod_dependencies(&d)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            deps,
            vec!["ConfigMap ns/c", "Secret ns/pull", "Secret ns/s"]
        );
    }

    #[test]
    fn refs_to_fetch_exclude_objects_of_the_task() {
        let mut cm = rendered_configmap();
        cm["metadata"]["namespace"] = json!("ns");
        cm["metadata"]["name"] = json!("c");
        let d = deployment(json!([{"name": "b", "configMap": {"name": "c"}}]));
        let refs = dependency_refs(&[cm, d]);
        assert_eq!(refs, vec![ObjectRef::new("v1", "Secret", "ns", "pull")]);
    }

    #[test]
    fn hash_changes_when_a_dependency_changes_and_uses_last_applied() {
        let d = deployment(json!([{"name": "b", "configMap": {"name": "c"}}]));
        let cm_ref = ObjectRef::new("v1", "ConfigMap", "ns", "c");
        let stamp = |live: BTreeMap<ObjectRef, Value>| {
            let mut objs = vec![d.clone()];
            stamp_dependencies_hash(&mut objs, &live).unwrap();
            objs[0]["spec"]["template"]["metadata"]["annotations"]
                [names::DEPENDENCIES_HASH_ANNOTATION]
                .as_str()
                .unwrap()
                .to_string()
        };
        let none = stamp(BTreeMap::new());
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}});
        let one = stamp(BTreeMap::from([(cm_ref.clone(), cm.clone())]));
        let mut cm2 = cm.clone();
        cm2["data"]["k"] = json!("2");
        let two = stamp(BTreeMap::from([(cm_ref.clone(), cm2)]));
        assert_ne!(none, one);
        assert_ne!(one, two);
        // A live object carrying last-applied hashes as that configuration.
        let live_with_annotation = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {names::LAST_APPLIED_ANNOTATION: cm.to_string()}},
            "data": {"k": "changed-by-someone-else"}});
        assert_eq!(stamp(BTreeMap::from([(cm_ref, live_with_annotation)])), one);
    }

    #[test]
    fn objects_without_dependencies_get_no_hash() {
        let mut objs = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {}}}}),
        ];
        stamp_dependencies_hash(&mut objs, &BTreeMap::new()).unwrap();
        assert!(objs[0]["spec"]["template"].get("metadata").is_none());
    }
}
