//! The simulated Deployment and ReplicaSet controllers. A Deployment gets
//! one ReplicaSet per pod template, `<deployment>-<pod-template-hash>`;
//! the current one has the Deployment's replicas and the others are scaled
//! to 0 at once (no surge, no gradual rollout), and old ones beyond
//! `revisionHistoryLimit` are deleted. A ReplicaSet keeps `replicas` pods
//! `<replicaset>-<5 random characters>`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::kubelet;
use crate::objects::{self, is_deleting};
use crate::pods::{Pass, controlled_by, controller_ref};
use crate::scheduler::is_terminal;

const HASH_LABEL: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";

/// kube-controller-manager's pod-template-hash: FNV-32a of the template,
/// its decimal digits written in the API server's safe alphabet.
pub fn template_hash(template: &Value) -> String {
    const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    // Hashed as it is serialised, without building the text.
    struct Fnv(u32);
    impl std::io::Write for Fnv {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            for b in buf {
                self.0 ^= u32::from(*b);
                self.0 = self.0.wrapping_mul(0x0100_0193);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Fnv(0x811c_9dc5);
    let _ = serde_json::to_writer(&mut h, template);
    h.0.to_string()
        .bytes()
        .map(|b| SAFE[b as usize % SAFE.len()] as char)
        .collect()
}

fn object(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn revision_of(rs: &Value) -> i64 {
    rs["metadata"]["annotations"][REVISION]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// The Deployment's annotations a ReplicaSet gets, as the real controller
/// copies them (so the fail annotation reaches the pods' owner).
fn copied_annotations(d: &Value, revision: i64, replicas: i64) -> Map<String, Value> {
    let mut out: Map<String, Value> = object(&d["metadata"]["annotations"])
        .into_iter()
        .filter(|(k, _)| {
            k != "kubectl.kubernetes.io/last-applied-configuration"
                && !k.starts_with("deployment.kubernetes.io/")
        })
        .collect();
    out.insert(REVISION.into(), json!(revision.to_string()));
    out.insert(DESIRED.into(), json!(replicas.to_string()));
    out
}

/// The ReplicaSet for the Deployment's current template.
pub fn replicaset_object(d: &Value, hash: &str, revision: i64, replicas: i64) -> Value {
    let name = d["metadata"]["name"].as_str().unwrap_or_default();
    let mut template = d["spec"]["template"].clone();
    let mut labels = object(&template["metadata"]["labels"]);
    labels.insert(HASH_LABEL.into(), json!(hash));
    template["metadata"]["labels"] = json!(labels);
    let mut selector = d["spec"]["selector"].clone();
    if !selector.is_object() {
        selector = json!({});
    }
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let mut spec = json!({"replicas": replicas, "selector": selector, "template": template});
    if let Some(m) = d["spec"].get("minReadySeconds") {
        spec["minReadySeconds"] = m.clone();
    }
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": format!("{name}-{hash}"), "labels": labels,
                        "annotations": copied_annotations(d, revision, replicas),
                        "ownerReferences": controller_ref("Deployment", d)},
           "spec": spec})
}

/// Brings the Deployment's ReplicaSets in line with its spec.
pub fn deployment(cx: &mut Pass<'_>, ns: &str, name: &str) {
    let Some(d) = cx
        .st
        .store
        .get("apps", "deployments", ns, name)
        .map(|s| s.value.clone())
    else {
        return;
    };
    if is_deleting(&d) || d["spec"]["paused"] == json!(true) {
        return;
    }
    let uid = objects::uid(&d).to_string();
    let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
    let hash = template_hash(&d["spec"]["template"]);
    let current_name = format!("{name}-{hash}");
    let prefix = format!("{name}-");
    let owned: Vec<Arc<Value>> = cx
        .st
        .store
        .list_prefix("apps", "replicasets", ns, &prefix)
        .filter(|s| controlled_by(&s.value, &uid))
        .map(|s| s.value.clone())
        .collect();
    let newest = owned.iter().map(|r| revision_of(r)).max().unwrap_or(0);
    match owned.iter().find(|r| r["metadata"]["name"] == current_name) {
        None => {
            // A ReplicaSet of that name owned by someone else: a hash
            // collision the real controller resolves with collisionCount.
            if cx
                .st
                .store
                .get("apps", "replicasets", ns, &current_name)
                .is_none()
            {
                let rs = replicaset_object(&d, &hash, newest + 1, replicas);
                cx.create("replicasets", ns, rs);
            }
        }
        Some(rs) => {
            let current = revision_of(rs);
            let revision = if current == newest {
                current
            } else {
                newest + 1
            };
            let mut annotations = object(&rs["metadata"]["annotations"]);
            annotations.retain(|k, _| {
                k.starts_with("deployment.kubernetes.io/")
                    || d["metadata"]["annotations"].get(k).is_some()
            });
            annotations.extend(copied_annotations(&d, revision, replicas));
            let annotations = json!(annotations);
            // Most calls change nothing: compare before copying the object.
            if rs["spec"]["replicas"] != json!(replicas)
                || rs["metadata"]["annotations"] != annotations
            {
                let mut new = (**rs).clone();
                new["spec"]["replicas"] = json!(replicas);
                new["metadata"]["annotations"] = annotations;
                cx.update("apps", "replicasets", rs, new);
            }
        }
    }
    let mut old: Vec<&Arc<Value>> = owned
        .iter()
        .filter(|r| r["metadata"]["name"] != current_name)
        .collect();
    for rs in &old {
        if rs["spec"]["replicas"] != json!(0) {
            let mut new = (***rs).clone();
            new["spec"]["replicas"] = json!(0);
            cx.update("apps", "replicasets", rs, new);
        }
    }
    let limit = d["spec"]["revisionHistoryLimit"]
        .as_i64()
        .unwrap_or(10)
        .max(0);
    if old.len() as i64 > limit {
        old.sort_by_key(|r| revision_of(r));
        let excess = old.len() - limit as usize;
        for rs in old.into_iter().take(excess) {
            let (_, rs_name) = crate::store::ns_name(rs);
            cx.st.delete_internal("apps", "replicasets", ns, &rs_name);
        }
    }
}

/// Brings the ReplicaSet's pods in line with its replicas.
pub fn replicaset(cx: &mut Pass<'_>, ns: &str, name: &str) {
    let Some(rs) = cx
        .st
        .store
        .get("apps", "replicasets", ns, name)
        .map(|s| s.value.clone())
    else {
        return;
    };
    if is_deleting(&rs) {
        return;
    }
    let uid = objects::uid(&rs).to_string();
    let replicas = rs["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
    let prefix = format!("{name}-");
    let mut active: Vec<Arc<Value>> = cx
        .st
        .store
        .list_prefix("", "pods", ns, &prefix)
        .filter(|p| controlled_by(&p.value, &uid))
        .filter(|p| !is_deleting(&p.value) && !is_terminal(&p.value))
        .map(|p| p.value.clone())
        .collect();
    for pod in &active {
        cx.sync_readiness(&rs, pod);
    }
    let have = active.len() as i64;
    if have < replicas {
        let tmpl = &rs["spec"]["template"];
        let mut meta = json!({"generateName": prefix, "labels": tmpl["metadata"]["labels"],
                              "ownerReferences": controller_ref("ReplicaSet", &rs)});
        if tmpl["metadata"]["annotations"].is_object() {
            meta["annotations"] = tmpl["metadata"]["annotations"].clone();
        }
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                         "spec": tmpl["spec"]});
        for _ in have..replicas {
            cx.create("pods", ns, pod.clone());
        }
    } else if have > replicas {
        // Not-ready pods go first, then the newest, roughly as the real
        // controller ranks them.
        active.sort_by_key(|p| {
            (
                kubelet::is_ready(p),
                std::cmp::Reverse(crate::store::object_rv(p)),
            )
        });
        for pod in active.iter().take((have - replicas) as usize) {
            let (_, pod_name) = crate::store::ns_name(pod);
            cx.st.delete_internal("", "pods", ns, &pod_name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy() -> Value {
        json!({"metadata": {"name": "web", "uid": "d-1",
                            "annotations": {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    }

    #[test]
    fn template_hash_is_stable_safe_and_follows_the_template() {
        let d = deploy();
        let h = template_hash(&d["spec"]["template"]);
        assert_eq!(h, template_hash(&d["spec"]["template"]));
        assert!(
            h.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
        let mut other = d["spec"]["template"].clone();
        other["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(h, template_hash(&other));
    }

    #[test]
    fn replicaset_is_named_selected_and_annotated_like_the_real_one() {
        let rs = replicaset_object(&deploy(), "abc", 3, 2);
        assert_eq!(rs["metadata"]["name"], "web-abc");
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"],
            json!({"app": "web", "pod-template-hash": "abc"})
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
            "abc"
        );
        let ann = &rs["metadata"]["annotations"];
        assert_eq!(ann["team"], "a");
        assert_eq!(ann[REVISION], "3");
        assert!(
            ann.get("kubectl.kubernetes.io/last-applied-configuration")
                .is_none()
        );
        assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    }
}
