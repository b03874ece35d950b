//! The simulated StatefulSet controller: pods `<set>-<ordinal>` and their
//! claims `<template>-<pod>`, created in ordinal order (each waiting for
//! the one before to be Running and Ready, unless `podManagementPolicy:
//! Parallel`), removed from the highest ordinal on scale down, and replaced
//! one at a time, highest first, when the template changes (RollingUpdate
//! with partition; nothing for OnDelete). Claims outlive the pods as on a
//! real cluster, unless `persistentVolumeClaimRetentionPolicy.whenDeleted`
//! is Delete (then the StatefulSet owns them).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::kubelet;
use crate::objects::{self, is_deleting};
use crate::pods::{PVC_PROTECTION, Pass, controlled_by, controller_ref};
use crate::workloads::revision;

/// Label with the revision a pod was created from.
const REVISION_LABEL: &str = "controller-revision-hash";

fn object(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// The pod for one ordinal, from the template.
pub fn pod_object(sts: &Value, pod_name: &str, ordinal: i64, revision: &str) -> Value {
    let tmpl = &sts["spec"]["template"];
    let mut labels = object(&tmpl["metadata"]["labels"]);
    labels.insert(REVISION_LABEL.into(), json!(revision));
    labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(pod_name));
    labels.insert(
        "apps.kubernetes.io/pod-index".into(),
        json!(ordinal.to_string()),
    );
    let mut meta = json!({"name": pod_name, "labels": labels,
                          "ownerReferences": controller_ref("StatefulSet", sts)});
    if tmpl["metadata"]["annotations"].is_object() {
        meta["annotations"] = tmpl["metadata"]["annotations"].clone();
    }
    let mut spec = object(&tmpl["spec"]);
    spec.insert("hostname".into(), json!(pod_name));
    if let Some(service) = sts["spec"]["serviceName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        spec.insert("subdomain".into(), json!(service));
    }
    let mut volumes: Vec<Value> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in claim_templates(sts) {
        let tname = t["metadata"]["name"].as_str().unwrap_or_default();
        volumes.retain(|v| v["name"] != tname);
        volumes.push(json!({"name": tname,
                            "persistentVolumeClaim": {"claimName": format!("{tname}-{pod_name}")}}));
    }
    if !volumes.is_empty() {
        spec.insert("volumes".into(), json!(volumes));
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

fn claim_templates(sts: &Value) -> &[Value] {
    sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A claim from a volumeClaimTemplate, already Bound (no PersistentVolume
/// object is made).
pub fn claim_object(sts: &Value, tmpl: &Value, claim: &str) -> Value {
    let mut labels = object(&tmpl["metadata"]["labels"]);
    labels.extend(object(&sts["spec"]["selector"]["matchLabels"]));
    let mut annotations = object(&tmpl["metadata"]["annotations"]);
    annotations.insert("pv.kubernetes.io/bind-completed".into(), json!("yes"));
    annotations.insert("pv.kubernetes.io/bound-by-controller".into(), json!("yes"));
    let mut meta = json!({"name": claim, "labels": labels, "annotations": annotations,
                          "finalizers": [PVC_PROTECTION]});
    if sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] == "Delete" {
        meta["ownerReferences"] = controller_ref("StatefulSet", sts);
    }
    let mut spec = object(&tmpl["spec"]);
    spec.entry("volumeMode").or_insert(json!("Filesystem"));
    spec.insert(
        "volumeName".into(),
        json!(format!("pvc-{}", uuid::Uuid::new_v4())),
    );
    let status = json!({"phase": "Bound", "accessModes": spec.get("accessModes"),
                        "capacity": {"storage": tmpl["spec"]["resources"]["requests"]["storage"]}});
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
           "spec": spec, "status": status})
}

/// Creates the pod's missing claims. False while one of them is still being
/// deleted: the pod waits for it to go and be made anew.
fn ensure_claims(cx: &mut Pass<'_>, sts: &Value, ns: &str, pod_name: &str) -> bool {
    let mut ready = true;
    for t in claim_templates(sts) {
        let claim = format!(
            "{}-{pod_name}",
            t["metadata"]["name"].as_str().unwrap_or_default()
        );
        match cx.st.store.get("", "persistentvolumeclaims", ns, &claim) {
            Some(c) if is_deleting(&c.value) => ready = false,
            Some(_) => {}
            None => {
                let obj = claim_object(sts, t, &claim);
                ready &= cx.create("persistentvolumeclaims", ns, obj).is_some();
            }
        }
    }
    ready
}

/// Brings the StatefulSet's pods and claims in line with its spec.
pub fn reconcile(cx: &mut Pass<'_>, ns: &str, name: &str) {
    let Some(sts) = cx
        .st
        .store
        .get("apps", "statefulsets", ns, name)
        .map(|s| s.value.clone())
    else {
        return;
    };
    if is_deleting(&sts) {
        return;
    }
    let uid = objects::uid(&sts).to_string();
    let spec = &sts["spec"];
    let replicas = spec["replicas"].as_i64().unwrap_or(1).max(0);
    let start = spec["ordinals"]["start"].as_i64().unwrap_or(0).max(0);
    let parallel = spec["podManagementPolicy"] == "Parallel";
    let rev = revision(&sts);
    let prefix = format!("{name}-");
    let owned: Vec<(i64, Arc<Value>)> = cx
        .st
        .store
        .list_prefix("", "pods", ns, &prefix)
        .filter(|p| controlled_by(&p.value, &uid))
        .filter_map(|p| {
            let pod_name = p.value["metadata"]["name"].as_str()?;
            let ordinal = pod_name.strip_prefix(&prefix)?.parse().ok()?;
            Some((ordinal, p.value.clone()))
        })
        .collect();
    for (_, pod) in &owned {
        cx.sync_readiness(&sts, pod);
    }
    let mut condemned: Vec<&(i64, Arc<Value>)> = owned
        .iter()
        .filter(|(o, p)| (*o < start || *o >= start + replicas) && !is_deleting(p))
        .collect();
    condemned.sort_by_key(|(o, _)| std::cmp::Reverse(*o));
    for (_, pod) in condemned {
        let (_, pod_name) = crate::store::ns_name(pod);
        cx.st.delete_internal("", "pods", ns, &pod_name);
    }
    let mut all_ready = true;
    for ordinal in start..start + replicas {
        let pod_name = format!("{name}-{ordinal}");
        let existing = cx
            .st
            .store
            .get("", "pods", ns, &pod_name)
            .map(|p| p.value.clone());
        let ready = match existing {
            None => {
                if ensure_claims(cx, &sts, ns, &pod_name) {
                    cx.create("pods", ns, pod_object(&sts, &pod_name, ordinal, &rev));
                }
                false
            }
            // Another controller's pod of that name: left alone.
            Some(p) if !controlled_by(&p, &uid) => false,
            Some(p) => {
                if p["status"]["phase"] == "Pending" {
                    ensure_claims(cx, &sts, ns, &pod_name);
                }
                !is_deleting(&p) && kubelet::is_running_and_ready(&p)
            }
        };
        all_ready &= ready;
        if !ready && !parallel {
            return;
        }
    }
    let strategy = &spec["updateStrategy"];
    if !all_ready || strategy["type"] == "OnDelete" {
        return;
    }
    let partition = strategy["rollingUpdate"]["partition"].as_i64().unwrap_or(0);
    for index in (partition.max(0)..replicas).rev() {
        let pod_name = format!("{name}-{}", start + index);
        let stale = cx
            .st
            .store
            .get("", "pods", ns, &pod_name)
            .is_some_and(|p| p.value["metadata"]["labels"][REVISION_LABEL] != json!(rev));
        if stale {
            cx.st.delete_internal("", "pods", ns, &pod_name);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sts() -> Value {
        json!({"metadata": {"name": "db", "uid": "u-1"},
               "spec": {"serviceName": "db-hs", "selector": {"matchLabels": {"app": "db"}},
                        "template": {"metadata": {"labels": {"app": "db"}, "annotations": {"a": "1"}},
                                     "spec": {"containers": [{"name": "c", "image": "x"}],
                                              "volumes": [{"name": "data", "emptyDir": {}},
                                                          {"name": "config", "configMap": {"name": "c"}}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"tier": "disk"}},
                            "spec": {"accessModes": ["ReadWriteOnce"],
                                     "resources": {"requests": {"storage": "1Gi"}}}}]}})
    }

    #[test]
    fn pods_carry_template_labels_owner_hostname_and_claim_volumes() {
        let pod = pod_object(&sts(), "db-2", 2, "db-abc");
        let meta = &pod["metadata"];
        assert_eq!(meta["labels"]["app"], "db");
        assert_eq!(meta["labels"]["controller-revision-hash"], "db-abc");
        assert_eq!(meta["labels"]["apps.kubernetes.io/pod-index"], "2");
        assert_eq!(meta["annotations"]["a"], "1");
        let owner = &meta["ownerReferences"][0];
        assert_eq!(
            (
                &owner["kind"],
                &owner["uid"],
                &owner["controller"],
                &owner["blockOwnerDeletion"]
            ),
            (
                &json!("StatefulSet"),
                &json!("u-1"),
                &json!(true),
                &json!(true)
            )
        );
        assert_eq!(pod["spec"]["hostname"], "db-2");
        assert_eq!(pod["spec"]["subdomain"], "db-hs");
        let volumes = pod["spec"]["volumes"].as_array().unwrap();
        assert_eq!(
            volumes.len(),
            2,
            "the template's volume of the same name is replaced"
        );
        assert!(volumes.contains(&json!({"name": "data",
            "persistentVolumeClaim": {"claimName": "data-db-2"}})));
    }

    #[test]
    fn claims_are_bound_protected_and_not_owned_by_default() {
        let set = sts();
        let claim = claim_object(&set, &set["spec"]["volumeClaimTemplates"][0], "data-db-0");
        assert_eq!(
            claim["metadata"]["labels"],
            json!({"tier": "disk", "app": "db"})
        );
        assert_eq!(claim["metadata"]["finalizers"], json!([PVC_PROTECTION]));
        assert!(claim["metadata"].get("ownerReferences").is_none());
        assert_eq!(claim["status"]["phase"], "Bound");
        assert_eq!(claim["status"]["capacity"]["storage"], "1Gi");
        let mut deleting = set.clone();
        deleting["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": "Delete"});
        let owned = claim_object(&deleting, &set["spec"]["volumeClaimTemplates"][0], "x");
        assert_eq!(
            owned["metadata"]["ownerReferences"][0]["kind"],
            "StatefulSet"
        );
    }
}
