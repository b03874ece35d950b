//! PodDisruptionBudgets: the disruption controller's arithmetic and the
//! status it keeps, which the Eviction API checks (`eviction`).
//!
//! As kube-controller-manager: with an integer `minAvailable` the expected
//! count is the number of matching pods; with `maxUnavailable` or a
//! percentage it is the scale of the pods' controllers (a StatefulSet's or
//! a Deployment's replicas), so a pod that is gone and not yet back still
//! counts as unavailable. Healthy pods are Ready, not being deleted and not
//! just evicted (`status.disruptedPods`, kept for two minutes at most).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::kubelet::is_ready;
use crate::objects::{is_deleting, now_rfc3339};
use crate::pods::controller_of;
use crate::selector::selector_matches;
use crate::state::State;

/// How long an eviction is remembered while its pod is not gone yet.
const DISRUPTED_FOR: i64 = 120;

/// A budget's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Pods the budget expects.
    pub expected: i64,
    /// Healthy pods it needs.
    pub desired: i64,
    /// Healthy pods there are.
    pub healthy: i64,
    /// Evictions allowed now.
    pub allowed: i64,
    /// Evicted pods not gone yet, with the eviction time.
    pub disrupted: Map<String, Value>,
}

/// An int-or-string of a budget: a number, or a percentage of `total`
/// rounded up.
pub fn scaled(v: &Value, total: i64) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.strip_suffix('%') {
            Some(p) => {
                let pct: i64 = p.trim().parse().unwrap_or(0);
                (pct * total + 99) / 100
            }
            None => s.trim().parse().unwrap_or(0),
        },
        _ => 0,
    }
}

/// The replicas of the pods' controllers, each counted once; a pod without
/// a known controller counts as one.
fn controller_scale(st: &State, ns: &str, pods: &[&Value]) -> i64 {
    let mut seen = HashSet::new();
    let mut total = 0;
    for pod in pods {
        let Some((kind, name, uid)) = controller_of(pod) else {
            total += 1;
            continue;
        };
        if !seen.insert(uid.to_string()) {
            continue;
        }
        let owner = match kind {
            "StatefulSet" => st.store.get("apps", "statefulsets", ns, name),
            "ReplicaSet" => st.store.get("apps", "replicasets", ns, name),
            _ => None,
        };
        let Some(owner) = owner.map(|o| o.value.clone()) else {
            total += 1;
            continue;
        };
        let scale_of = |o: &Value| o["spec"]["replicas"].as_i64().unwrap_or(1);
        total += match controller_of(&owner) {
            Some(("Deployment", d, _)) => st
                .store
                .get("apps", "deployments", ns, d)
                .map_or_else(|| scale_of(&owner), |d| scale_of(&d.value)),
            _ => scale_of(&owner),
        };
    }
    total
}

fn seconds_since(time: &Value) -> i64 {
    let then = time
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    jiff::Timestamp::now().as_second() - then.as_second()
}

/// Works out the budget from the pods as they are now.
pub fn evaluate(st: &State, pdb: &Value) -> Budget {
    let ns = pdb["metadata"]["namespace"].as_str().unwrap_or_default();
    let selector = &pdb["spec"]["selector"];
    let pods: Vec<&Value> = st
        .store
        .list("", "pods", Some(ns))
        .map(|p| p.value.as_ref())
        .filter(|p| selector_matches(selector, &p["metadata"]["labels"]))
        .collect();
    let disrupted: Map<String, Value> = pdb["status"]["disruptedPods"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, time)| {
            seconds_since(time) < DISRUPTED_FOR
                && pods
                    .iter()
                    .any(|p| p["metadata"]["name"] == **name && !is_deleting(p))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let healthy = pods
        .iter()
        .filter(|p| {
            let name = p["metadata"]["name"].as_str().unwrap_or_default();
            !is_deleting(p) && !disrupted.contains_key(name) && is_ready(p)
        })
        .count() as i64;
    let spec = &pdb["spec"];
    let (expected, desired) = match (spec.get("maxUnavailable"), spec.get("minAvailable")) {
        (Some(max), _) if !max.is_null() => {
            let expected = controller_scale(st, ns, &pods);
            (expected, (expected - scaled(max, expected)).max(0))
        }
        (_, Some(min @ Value::Number(_))) => (pods.len() as i64, scaled(min, 0)),
        (_, Some(min)) if !min.is_null() => {
            let expected = controller_scale(st, ns, &pods);
            (expected, scaled(min, expected))
        }
        _ => (0, 0),
    };
    Budget {
        expected,
        desired,
        healthy,
        allowed: (healthy - desired).max(0),
        disrupted,
    }
}

/// The status the disruption controller writes for a budget; the
/// condition keeps its transition time while it holds.
pub fn status(pdb: &Value, b: &Budget) -> Value {
    let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(1);
    let ok = b.allowed > 0;
    let old = pdb["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "DisruptionAllowed"));
    let status_text = if ok { "True" } else { "False" };
    let since = old
        .filter(|c| c["status"] == status_text)
        .map_or_else(|| json!(now_rfc3339()), |c| c["lastTransitionTime"].clone());
    let mut s = json!({
        "observedGeneration": generation,
        "disruptionsAllowed": b.allowed,
        "currentHealthy": b.healthy,
        "desiredHealthy": b.desired,
        "expectedPods": b.expected,
        "conditions": [{"type": "DisruptionAllowed", "status": status_text,
                        "reason": if ok { "SufficientPods" } else { "InsufficientPods" },
                        "message": "", "observedGeneration": generation,
                        "lastTransitionTime": since}],
    });
    if !b.disrupted.is_empty() {
        s["disruptedPods"] = json!(b.disrupted);
    }
    s
}

/// The budgets whose selector matches the pod.
pub fn matching(st: &State, pod: &Value) -> Vec<Arc<Value>> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    st.store
        .list("policy", "poddisruptionbudgets", Some(ns))
        .filter(|b| selector_matches(&b.value["spec"]["selector"], &pod["metadata"]["labels"]))
        .map(|b| b.value.clone())
        .collect()
}

fn put_status(st: &mut State, pdb: &Value, status: Value) {
    if pdb["status"] == status {
        return;
    }
    let (ns, name) = crate::store::ns_name(pdb);
    let Some(s) = st.store.get("policy", "poddisruptionbudgets", &ns, &name) else {
        return;
    };
    let owners = s.owners.clone();
    let mut v = (*s.value).clone();
    v["status"] = status;
    st.store.put("policy", "poddisruptionbudgets", v, owners);
}

/// Brings the status of the namespace's budgets up to date.
pub fn refresh(st: &mut State, ns: &str) {
    let budgets: Vec<Arc<Value>> = st
        .store
        .list("policy", "poddisruptionbudgets", Some(ns))
        .filter(|b| !is_deleting(&b.value))
        .map(|b| b.value.clone())
        .collect();
    for pdb in budgets {
        let b = evaluate(st, &pdb);
        let s = status(&pdb, &b);
        put_status(st, &pdb, s);
    }
}

/// Records an eviction the budget allowed, as the API server does before
/// deleting the pod: one disruption fewer, the pod in `disruptedPods`.
pub fn record_eviction(st: &mut State, pdb: &Value, b: &Budget, pod: &str) {
    let mut after = b.clone();
    after
        .disrupted
        .insert(pod.to_string(), json!(now_rfc3339()));
    after.healthy -= 1;
    after.allowed = (after.healthy - after.desired).max(0);
    let s = status(pdb, &after);
    put_status(st, pdb, s);
}

/// Drops an eviction from `disruptedPods` once its delete was answered.
pub fn forget_eviction(st: &mut State, pdb: &Value, pod: &str) {
    let (ns, name) = crate::store::ns_name(pdb);
    let Some(current) = st
        .store
        .get("policy", "poddisruptionbudgets", &ns, &name)
        .map(|s| s.value.clone())
    else {
        return;
    };
    if current["status"]["disruptedPods"].get(pod).is_none() {
        return;
    }
    let mut without = (*current).clone();
    if let Some(m) = without["status"]["disruptedPods"].as_object_mut() {
        m.remove(pod);
    }
    let b = evaluate(st, &without);
    let s = status(&without, &b);
    put_status(st, &current, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_scale_percentages_up() {
        assert_eq!(scaled(&json!(2), 5), 2);
        assert_eq!(scaled(&json!("50%"), 3), 2);
        assert_eq!(scaled(&json!("34%"), 3), 2);
        assert_eq!(scaled(&json!("100%"), 3), 3);
        assert_eq!(scaled(&json!("0%"), 3), 0);
    }

    #[test]
    fn status_reports_the_budget_and_keeps_the_transition_time() {
        let b = Budget {
            expected: 3,
            desired: 2,
            healthy: 2,
            allowed: 0,
            disrupted: Map::new(),
        };
        let mut pdb = json!({"metadata": {"generation": 4}});
        pdb["status"] = status(&pdb, &b);
        let s = &pdb["status"];
        assert_eq!(
            (
                &s["disruptionsAllowed"],
                &s["currentHealthy"],
                &s["desiredHealthy"],
                &s["expectedPods"]
            ),
            (&json!(0), &json!(2), &json!(2), &json!(3))
        );
        assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
        assert_eq!(s["observedGeneration"], 4);
        pdb["status"]["conditions"][0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        assert_eq!(
            status(&pdb, &b)["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
    }
}
