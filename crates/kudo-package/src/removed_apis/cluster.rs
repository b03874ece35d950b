//! The smaller conversions: PodDisruptionBudget, CertificateSigningRequest,
//! EndpointSlice, RuntimeClass (alpha), RBAC bindings (alpha) and
//! PriorityLevelConfiguration. Kinds whose successor has the same fields
//! use the identity conversion in `table.rs`.

use serde_json::{Map, Value, json};

use super::Refusal;
use super::json::{array_mut, missing, object_mut, rename};

/// `policy/v1beta1` → `policy/v1` (removed in 1.25). An empty
/// `spec.selector` (`{}`) selected no pods in v1beta1 but selects every pod
/// of the namespace in v1; it is removed, and a missing selector selects no
/// pods in both.
pub(super) fn pod_disruption_budget(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return Ok(());
    };
    let empty = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|s| {
            s.iter().all(|(_, v)| match v {
                Value::Null => true,
                Value::Object(m) => m.is_empty(),
                Value::Array(a) => a.is_empty(),
                _ => false,
            })
        });
    if empty {
        spec.remove("selector");
        notes.push(
            "the empty spec.selector was removed: it selected no pods in policy/v1beta1 but \
             would select every pod of the namespace in policy/v1"
                .into(),
        );
    }
    Ok(())
}

const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// `certificates.k8s.io/v1beta1` → `v1` (removed in 1.22).
///
/// v1 requires `signerName` and `usages`. v1beta1 defaulted the usages to
/// digital signature and key encipherment, and the signer to
/// `kubernetes.io/legacy-unknown` (or a kubelet signer for kubelet
/// requests), which v1 does not accept. A request for a client
/// certificate (usages include `client auth`, not `server auth`) is given
/// `kubernetes.io/kube-apiserver-client`, the v1 signer of client
/// certificates the API server trusts, which the cluster CA signs as it did
/// legacy-unknown requests; any other request has no v1 equivalent and is
/// refused with what to do.
pub(super) fn certificate_signing_request(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return Ok(());
    };
    if missing(spec, "usages") {
        spec.insert(
            "usages".into(),
            json!(["digital signature", "key encipherment"]),
        );
        notes.push(
            "spec.usages set to [digital signature, key encipherment], the v1beta1 default".into(),
        );
    }
    let signer = spec
        .get("signerName")
        .and_then(Value::as_str)
        .unwrap_or(LEGACY_SIGNER);
    if signer != LEGACY_SIGNER {
        return Ok(());
    }
    let usages: Vec<&str> = spec
        .get("usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if usages.contains(&"client auth") && !usages.contains(&"server auth") {
        spec.insert("signerName".into(), json!(CLIENT_SIGNER));
        notes.push(format!(
            "spec.signerName set to {CLIENT_SIGNER}: v1beta1 defaulted a request without one to \
             {LEGACY_SIGNER}, which v1 refuses; this client certificate request goes to the \
             signer of client certificates the API server trusts (it still needs approval)"
        ));
        return Ok(());
    }
    Err(Refusal {
        reason: format!(
            "it has no signerName, so certificates.k8s.io/v1beta1 (removed in Kubernetes 1.22) \
             gave it {LEGACY_SIGNER}, which certificates.k8s.io/v1 refuses, and its usages \
             ({}) are not those of a client certificate",
            usages.join(", ")
        ),
        advice: "set spec.signerName to a signer that issues such certificates (for example \
                 one served by cert-manager) or create the certificate with cert-manager"
            .into(),
    })
}

/// `discovery.k8s.io/v1beta1` → `v1` (removed in 1.25): an endpoint's
/// `topology` map is gone; its `kubernetes.io/hostname` is `nodeName` and
/// its `topology.kubernetes.io/zone` is `zone`. Other keys have no place
/// (v1's `deprecatedTopology` cannot be written) and are dropped.
pub(super) fn endpoint_slice(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let mut moved = false;
    let mut dropped: Vec<String> = Vec::new();
    for endpoint in array_mut(obj, &["endpoints"]).into_iter().flatten() {
        let Some(endpoint) = endpoint.as_object_mut() else {
            continue;
        };
        let Some(Value::Object(topology)) = endpoint.remove("topology") else {
            continue;
        };
        for (key, value) in topology {
            let field = match key.as_str() {
                "kubernetes.io/hostname" => "nodeName",
                "topology.kubernetes.io/zone" => "zone",
                _ => {
                    if !dropped.contains(&key) {
                        dropped.push(key);
                    }
                    continue;
                }
            };
            if missing(endpoint, field) {
                endpoint.insert(field.into(), value);
            }
            moved = true;
        }
    }
    if moved {
        notes.push(
            "endpoints[].topology kubernetes.io/hostname and topology.kubernetes.io/zone moved \
             to nodeName and zone"
                .into(),
        );
    }
    if !dropped.is_empty() {
        notes.push(format!(
            "endpoints[].topology keys dropped (v1 cannot store them): {}",
            dropped.join(", ")
        ));
    }
    Ok(())
}

/// `node.k8s.io/v1alpha1` → `v1` (removed in 1.22): the alpha version kept
/// everything under `spec` and called the handler `runtimeHandler`.
pub(super) fn runtime_class_v1alpha1(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let Some(root) = obj.as_object_mut() else {
        return Ok(());
    };
    let Some(Value::Object(mut spec)) = root.remove("spec") else {
        return Ok(());
    };
    rename(&mut spec, "runtimeHandler", "handler");
    for (key, value) in spec {
        if missing(root, &key) {
            root.insert(key, value);
        }
    }
    notes.push("spec.runtimeHandler is now handler; overhead and scheduling moved up".into());
    Ok(())
}

/// `rbac.authorization.k8s.io/v1alpha1` → `v1` (removed in 1.22): a
/// subject named its group with `apiVersion`; v1 uses `apiGroup`
/// (`rbac.authorization.k8s.io` for users and groups, empty for service
/// accounts).
pub(super) fn rbac_v1alpha1_binding(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let mut changed = false;
    for subject in array_mut(obj, &["subjects"]).into_iter().flatten() {
        let Some(subject) = subject.as_object_mut() else {
            continue;
        };
        if subject.remove("apiVersion").is_none() {
            continue;
        }
        changed = true;
        let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
        if missing(subject, "apiGroup") && (kind == "User" || kind == "Group") {
            subject.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
    if changed {
        notes.push("subjects[].apiVersion replaced by apiGroup".into());
    }
    Ok(())
}

/// flowcontrol `v1beta1`/`v1beta2` → `v1beta3`/`v1`: a limited priority
/// level's `assuredConcurrencyShares` is `nominalConcurrencyShares`. Going
/// to `v1`, an explicit 0 (which the beta versions replaced by 30) is
/// removed so it still means 30.
pub(super) fn priority_level_configuration(
    obj: &mut Value,
    target: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    let Some(limited) = object_mut(obj, &["spec", "limited"]) else {
        return Ok(());
    };
    if rename(
        limited,
        "assuredConcurrencyShares",
        "nominalConcurrencyShares",
    ) {
        notes.push("spec.limited.assuredConcurrencyShares is now nominalConcurrencyShares".into());
    }
    if target.ends_with("/v1") && zero(limited, "nominalConcurrencyShares") {
        limited.remove("nominalConcurrencyShares");
        notes.push(
            "spec.limited.nominalConcurrencyShares 0 removed: the beta versions read 0 as the \
             default 30, v1 would take it literally"
                .into(),
        );
    }
    Ok(())
}

fn zero(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_i64) == Some(0)
}
