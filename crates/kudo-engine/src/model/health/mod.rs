//! Health of an object as returned by the API server. Pure: it reads the
//! object and nothing else.
//!
//! Rules follow KUDO's health checks with the gaps closed:
//! DaemonSets, OnDelete StatefulSets, Jobs with `completions > 1`, child
//! Instances that failed, and a readiness rule for custom resources in the
//! annotation [`kudo_api::names::HEALTH_ANNOTATION`].

use serde_json::Value;

/// What [`evaluate`] concluded. Messages name the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Ready; the step may move on.
    Healthy,
    /// Not ready yet; not an error.
    Progressing(String),
    /// Failed for good (a Job failed, a child Instance's plan failed).
    Failed(String),
}

impl Health {
    /// Whether the object is healthy.
    pub fn is_healthy(&self) -> bool {
        matches!(self, Self::Healthy)
    }
}

/// `Kind namespace/name`, or `Kind name` for cluster-scoped objects: how
/// every message names an object.
pub fn object_label(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// Evaluate the health of one object.
pub fn evaluate(obj: &Value) -> Health {
    let label = label_of(obj);
    if let Some(rule) = custom_rule_of(obj) {
        return custom_rule(obj, rule, &label);
    }
    let verdict = rule_for(obj).map_or(Verdict::Healthy, |rule| rule(obj));
    match verdict {
        Verdict::Healthy => Health::Healthy,
        Verdict::Progressing(msg) => Health::Progressing(format!("{label}: {msg}")),
        Verdict::Failed(msg) => Health::Failed(format!("{label}: {msg}")),
    }
}

/// Whether the health of an object about to be applied can depend on what
/// the server stores (its kind has a rule, or it carries a custom rule).
/// When not, it is healthy as soon as the apply succeeds, and the apply
/// response need not be read beyond the object's identity.
pub fn depends_on_stored_object(obj: &Value) -> bool {
    custom_rule_of(obj).is_some() || rule_for(obj).is_some()
}

/// Whether objects of this kind can turn unhealthy after they were
/// healthy (a rollout, a crashing pod): what readiness after a plan
/// watches. CRDs and Namespaces stay healthy once they are.
pub fn health_can_change(api_version: &str, kind: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    matches!(
        (group, kind),
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet")
            | ("batch", "Job")
            | ("", "Pod" | "Service")
            | ("kudo.dev", "Instance")
    )
}

fn custom_rule_of(obj: &Value) -> Option<&str> {
    str_at(
        obj,
        &[
            "metadata",
            "annotations",
            kudo_api::names::HEALTH_ANNOTATION,
        ],
    )
}

/// The built-in rule of an object's kind; kinds without one are healthy
/// once they exist.
fn rule_for(obj: &Value) -> Option<fn(&Value) -> Verdict> {
    let kind = str_at(obj, &["kind"]).unwrap_or_default();
    let api_version = str_at(obj, &["apiVersion"]).unwrap_or_default();
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let rule: fn(&Value) -> Verdict = match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd,
        ("apps", "Deployment") => deployment,
        ("apps", "StatefulSet") => statefulset,
        ("apps", "DaemonSet") => daemonset,
        ("batch", "Job") => job,
        ("kudo.dev", "Instance") => instance,
        ("", "Pod") => pod,
        ("", "Namespace") => namespace,
        ("", "Service") => service,
        _ => return None,
    };
    Some(rule)
}

enum Verdict {
    Healthy,
    Progressing(String),
    Failed(String),
}

fn label_of(obj: &Value) -> String {
    let kind = str_at(obj, &["kind"]).unwrap_or("object");
    let name = str_at(obj, &["metadata", "name"]).unwrap_or("?");
    object_label(kind, str_at(obj, &["metadata", "namespace"]), name)
}

fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, key| v.get(*key))
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(obj, path).and_then(Value::as_str)
}

fn int_at(obj: &Value, path: &[&str]) -> Option<i64> {
    at(obj, path).and_then(Value::as_i64)
}

/// Status of the condition of this type (`"True"`, `"False"`, ...) and its message.
fn condition<'a>(obj: &'a Value, type_: &str) -> Option<(&'a str, &'a str)> {
    at(obj, &["status", "conditions"])?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| {
            (
                c.get("status").and_then(Value::as_str).unwrap_or(""),
                c.get("message").and_then(Value::as_str).unwrap_or(""),
            )
        })
}

fn generation_observed(obj: &Value) -> Option<Verdict> {
    let generation = int_at(obj, &["metadata", "generation"]).unwrap_or(0);
    let observed = int_at(obj, &["status", "observedGeneration"]).unwrap_or(0);
    (observed < generation || observed == 0 && generation > 0).then(|| {
        Verdict::Progressing(format!(
            "waiting for the controller to observe generation {generation} (observed {observed})"
        ))
    })
}

fn crd(obj: &Value) -> Verdict {
    match condition(obj, "Established") {
        Some(("True", _)) => Verdict::Healthy,
        _ => Verdict::Progressing("not Established yet".into()),
    }
}

fn deployment(obj: &Value) -> Verdict {
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    if let Some(cond) = at(obj, &["status", "conditions"]).and_then(Value::as_array)
        && cond.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Progressing")
                && c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded")
        })
    {
        return Verdict::Progressing("progress deadline exceeded".into());
    }
    let want = int_at(obj, &["spec", "replicas"]).unwrap_or(1);
    let updated = int_at(obj, &["status", "updatedReplicas"]).unwrap_or(0);
    let total = int_at(obj, &["status", "replicas"]).unwrap_or(0);
    let available = int_at(obj, &["status", "availableReplicas"]).unwrap_or(0);
    if updated < want {
        Verdict::Progressing(format!("{updated} of {want} replicas updated"))
    } else if total > updated {
        Verdict::Progressing(format!(
            "{} old replicas pending termination",
            total - updated
        ))
    } else if available < updated {
        Verdict::Progressing(format!(
            "{available} of {updated} updated replicas available"
        ))
    } else {
        Verdict::Healthy
    }
}

fn statefulset(obj: &Value) -> Verdict {
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let want = int_at(obj, &["spec", "replicas"]).unwrap_or(1);
    let ready = int_at(obj, &["status", "readyReplicas"]).unwrap_or(0);
    if ready < want {
        return Verdict::Progressing(format!("{ready} of {want} replicas ready"));
    }
    let strategy = str_at(obj, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate");
    if strategy == "OnDelete" {
        // Pods are replaced only when someone deletes them: ready is all we can ask.
        return Verdict::Healthy;
    }
    let partition = int_at(
        obj,
        &["spec", "updateStrategy", "rollingUpdate", "partition"],
    )
    .unwrap_or(0);
    let updated = int_at(obj, &["status", "updatedReplicas"]).unwrap_or(0);
    if partition > 0 {
        let need = (want - partition).max(0);
        return if updated < need {
            Verdict::Progressing(format!(
                "{updated} of {need} replicas above the partition updated"
            ))
        } else {
            Verdict::Healthy
        };
    }
    let current = str_at(obj, &["status", "currentRevision"]);
    let update = str_at(obj, &["status", "updateRevision"]);
    if current.is_some() && update.is_some() && current != update {
        return Verdict::Progressing(format!("{updated} of {want} replicas at the new revision"));
    }
    Verdict::Healthy
}

fn daemonset(obj: &Value) -> Verdict {
    if let Some(v) = generation_observed(obj) {
        return v;
    }
    let desired = int_at(obj, &["status", "desiredNumberScheduled"]).unwrap_or(0);
    let available = int_at(obj, &["status", "numberAvailable"]).unwrap_or(0);
    if str_at(obj, &["spec", "updateStrategy", "type"]) != Some("OnDelete") {
        let updated = int_at(obj, &["status", "updatedNumberScheduled"]).unwrap_or(0);
        if updated < desired {
            return Verdict::Progressing(format!("{updated} of {desired} pods updated"));
        }
    }
    if available < desired {
        Verdict::Progressing(format!("{available} of {desired} pods available"))
    } else {
        Verdict::Healthy
    }
}

fn job(obj: &Value) -> Verdict {
    if let Some(("True", msg)) = condition(obj, "Failed") {
        let msg = if msg.is_empty() {
            "the Job failed"
        } else {
            msg
        };
        return Verdict::Failed(format!("Job failed: {msg}"));
    }
    if let Some(("True", _)) = condition(obj, "Complete") {
        return Verdict::Healthy;
    }
    let completions = int_at(obj, &["spec", "completions"]).unwrap_or(1);
    let succeeded = int_at(obj, &["status", "succeeded"]).unwrap_or(0);
    if succeeded >= completions {
        Verdict::Healthy
    } else {
        Verdict::Progressing(format!(
            "{succeeded} of {completions} completions succeeded"
        ))
    }
}

fn instance(obj: &Value) -> Verdict {
    let generation = int_at(obj, &["metadata", "generation"]).unwrap_or(0);
    let observed = int_at(obj, &["status", "observedGeneration"]).unwrap_or(0);
    let plan = str_at(obj, &["status", "activePlan", "name"]).unwrap_or("");
    let status = str_at(obj, &["status", "activePlan", "status"]).unwrap_or("");
    if observed < generation || plan.is_empty() {
        return Verdict::Progressing("waiting for the child Instance's plan to start".into());
    }
    match status {
        "COMPLETE" => Verdict::Healthy,
        "FATAL_ERROR" => {
            let msg = str_at(obj, &["status", "planStatus", plan, "message"]).unwrap_or("");
            Verdict::Failed(
                format!("plan {plan} failed: {msg}")
                    .trim_end_matches(": ")
                    .to_string(),
            )
        }
        other => Verdict::Progressing(format!("plan {plan} is {other}")),
    }
}

fn pod(obj: &Value) -> Verdict {
    match str_at(obj, &["status", "phase"]) {
        Some("Running") => match condition(obj, "Ready") {
            Some(("True", _)) => Verdict::Healthy,
            _ => Verdict::Progressing("running but not Ready".into()),
        },
        Some("Succeeded") => Verdict::Healthy,
        Some("Failed") => Verdict::Failed("pod failed".into()),
        Some(phase) => Verdict::Progressing(format!("phase {phase}")),
        None => Verdict::Progressing("not scheduled yet".into()),
    }
}

fn namespace(obj: &Value) -> Verdict {
    match str_at(obj, &["status", "phase"]) {
        Some("Terminating") => Verdict::Progressing("Terminating".into()),
        _ => Verdict::Healthy,
    }
}

fn service(obj: &Value) -> Verdict {
    match str_at(obj, &["spec", "type"]).unwrap_or("ClusterIP") {
        "ExternalName" => Verdict::Healthy,
        "LoadBalancer" => {
            let ingress = at(obj, &["status", "loadBalancer", "ingress"])
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            let external = at(obj, &["spec", "externalIPs"])
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if ingress || external {
                Verdict::Healthy
            } else {
                Verdict::Progressing("waiting for a load balancer address".into())
            }
        }
        _ => match str_at(obj, &["spec", "clusterIP"]) {
            Some(ip) if !ip.is_empty() => Verdict::Healthy,
            _ => Verdict::Progressing("no cluster IP assigned yet".into()),
        },
    }
}

/// A readiness rule from [`kudo_api::names::HEALTH_ANNOTATION`]: clauses
/// separated by `;`, each either `condition=TYPE` (condition TYPE is True)
/// or `dotted.path=value` (the field's text equals value). All must hold.
/// A clause `failed:...` of either form marks the object failed when it holds.
fn custom_rule(obj: &Value, rule: &str, label: &str) -> Health {
    let mut waiting = Vec::new();
    for clause in rule.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let (is_failure, clause) = match clause.strip_prefix("failed:") {
            Some(rest) => (true, rest.trim()),
            None => (false, clause),
        };
        let Some((lhs, rhs)) = clause.split_once('=') else {
            return Health::Failed(format!(
                "{label}: readiness rule {clause:?} in annotation {} is not of the form path=value or condition=TYPE",
                kudo_api::names::HEALTH_ANNOTATION
            ));
        };
        let (lhs, rhs) = (lhs.trim(), rhs.trim());
        let holds = if lhs == "condition" {
            matches!(condition(obj, rhs), Some(("True", _)))
        } else {
            let path: Vec<&str> = lhs.split('.').collect();
            match at(obj, &path) {
                Some(Value::String(s)) => s == rhs,
                Some(Value::Null) | None => false,
                Some(other) => {
                    let text = other.to_string();
                    text == rhs
                }
            }
        };
        match (is_failure, holds) {
            (true, true) => return Health::Failed(format!("{label}: {clause}")),
            (false, false) => waiting.push(clause.to_string()),
            _ => {}
        }
    }
    if waiting.is_empty() {
        Health::Healthy
    } else {
        Health::Progressing(format!("{label}: waiting for {}", waiting.join(", ")))
    }
}

#[cfg(test)]
mod tests;
