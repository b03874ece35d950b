//! A simulated kube-scheduler: assigns pods without `spec.nodeName` to a
//! Node, with the filters node maintenance relies on (cordoned nodes,
//! NoSchedule/NoExecute taints, nodeSelector) and a spread by pod count.
//! Pure apart from [`Scheduler::from_state`]; the pod writes are in `pods`.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::objects::{is_deleting, now_rfc3339};
use crate::state::State;

/// The taint kube-scheduler checks for a cordoned node (`spec.unschedulable`).
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

/// Whether any toleration tolerates the taint (Kubernetes' matching rules:
/// empty effect matches every effect; `Exists` with an empty key matches
/// every taint).
pub fn tolerates(tolerations: &[Value], taint: &Value) -> bool {
    tolerations.iter().any(|t| {
        let effect = s(t, "effect");
        if !effect.is_empty() && effect != s(taint, "effect") {
            return false;
        }
        let key = s(t, "key");
        match t["operator"].as_str().unwrap_or("Equal") {
            "Exists" => key.is_empty() || key == s(taint, "key"),
            _ => key == s(taint, "key") && s(t, "value") == s(taint, "value"),
        }
    })
}

/// The pod's tolerations.
pub fn tolerations(pod: &Value) -> &[Value] {
    pod["spec"]["tolerations"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The node's taints.
pub fn taints(node: &Value) -> &[Value] {
    node["spec"]["taints"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A NoExecute taint of the node the pod does not tolerate, if any (the
/// taint manager evicts such pods).
pub fn untolerated_no_execute<'a>(node: &'a Value, pod: &Value) -> Option<&'a Value> {
    taints(node)
        .iter()
        .find(|t| s(t, "effect") == "NoExecute" && !tolerates(tolerations(pod), t))
}

/// Whether a pod counts against a node (not finished).
pub fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// One candidate node.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// The node object.
    pub node: Value,
    /// Pods bound to it.
    pub pods: usize,
}

/// The nodes of one scheduling pass.
#[derive(Debug, Clone)]
pub struct Scheduler {
    nodes: Vec<NodeInfo>,
}

impl Scheduler {
    /// The cluster's nodes with their pod counts; None when there are no
    /// Node objects (pods then run without a node, as the sandbox always did).
    pub fn from_state(st: &State) -> Option<Self> {
        let mut nodes: Vec<NodeInfo> = st
            .store
            .list("", "nodes", None)
            .filter(|n| !is_deleting(&n.value))
            .map(|n| NodeInfo {
                name: s(&n.value["metadata"], "name").to_string(),
                node: (*n.value).clone(),
                pods: 0,
            })
            .collect();
        if nodes.is_empty() {
            return None;
        }
        let index: HashMap<String, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        for p in st.store.list("", "pods", None) {
            if let Some(&i) = p.value["spec"]["nodeName"]
                .as_str()
                .and_then(|n| index.get(n))
                && !is_terminal(&p.value)
            {
                nodes[i].pods += 1;
            }
        }
        Some(Self { nodes })
    }

    /// A scheduler over given nodes (tests).
    #[cfg(test)]
    pub fn new(nodes: Vec<NodeInfo>) -> Self {
        Self { nodes }
    }

    /// Picks a node for the pod and counts the pod on it, or gives the
    /// scheduler's "0/N nodes are available: ..." message.
    pub fn choose(&mut self, pod: &Value) -> Result<String, String> {
        let tolerations = tolerations(pod);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut best: Option<(usize, usize, usize)> = None;
        for (i, n) in self.nodes.iter().enumerate() {
            match filter(&n.node, pod, tolerations) {
                Err(reason) => *reasons.entry(reason).or_default() += 1,
                Ok(()) => {
                    let preferred_not = taints(&n.node)
                        .iter()
                        .filter(|t| {
                            s(t, "effect") == "PreferNoSchedule" && !tolerates(tolerations, t)
                        })
                        .count();
                    let score = (preferred_not, n.pods, i);
                    if best.is_none_or(|b| score < b) {
                        best = Some(score);
                    }
                }
            }
        }
        match best {
            Some((_, _, i)) => {
                self.nodes[i].pods += 1;
                Ok(self.nodes[i].name.clone())
            }
            None => Err(unschedulable_message(self.nodes.len(), &reasons)),
        }
    }
}

/// The first filter the node fails for the pod, in kube-scheduler's
/// plugin order (NodeUnschedulable, TaintToleration, NodeAffinity).
fn filter(node: &Value, pod: &Value, tolerations: &[Value]) -> Result<(), String> {
    let cordon = json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"});
    if node["spec"]["unschedulable"] == json!(true) && !tolerates(tolerations, &cordon) {
        return Err("node(s) were unschedulable".into());
    }
    if let Some(t) = taints(node).iter().find(|t| {
        matches!(s(t, "effect"), "NoSchedule" | "NoExecute") && !tolerates(tolerations, t)
    }) {
        return Err(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            s(t, "key"),
            s(t, "value")
        ));
    }
    let labels = &node["metadata"]["labels"];
    if let Some(sel) = pod["spec"]["nodeSelector"].as_object()
        && !sel
            .iter()
            .all(|(k, v)| labels.get(k).and_then(Value::as_str) == v.as_str())
    {
        return Err("node(s) didn't match Pod's node affinity/selector".into());
    }
    Ok(())
}

fn unschedulable_message(total: usize, reasons: &BTreeMap<String, usize>) -> String {
    // Sorted as text, counts included, as kube-scheduler's FitError does.
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
        parts.join(", ")
    )
}

/// The `PodScheduled` condition.
pub fn scheduled_condition(message: Option<&str>) -> Value {
    match message {
        None => json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                       "lastTransitionTime": now_rfc3339()}),
        Some(m) => json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                          "message": m, "lastProbeTime": null, "lastTransitionTime": now_rfc3339()}),
    }
}

/// Sets a condition in `status.conditions` by type; keeps the old
/// transition time when status, reason and message are unchanged. Returns
/// whether anything changed.
pub fn set_condition(obj: &mut Value, cond: Value) -> bool {
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    if !obj["status"]["conditions"].is_array() {
        obj["status"]["conditions"] = json!([]);
    }
    let Some(list) = obj["status"]["conditions"].as_array_mut() else {
        return false;
    };
    let same = |a: &Value, b: &Value| {
        ["status", "reason", "message"]
            .iter()
            .all(|k| a.get(*k) == b.get(*k))
    };
    match list.iter_mut().find(|c| c["type"] == cond["type"]) {
        Some(old) if same(old, &cond) => false,
        Some(old) => {
            *old = cond;
            true
        }
        None => {
            list.push(cond);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, unschedulable: bool, taints: Value) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            node: json!({"metadata": {"name": name, "labels": {"zone": "a"}},
                         "spec": {"unschedulable": unschedulable, "taints": taints}}),
            pods: 0,
        }
    }

    fn pod(tolerations: Value) -> Value {
        json!({"spec": {"tolerations": tolerations}})
    }

    #[test]
    fn tolerations_follow_kubernetes_matching() {
        let taint = json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"});
        assert!(tolerates(
            &[json!({"key": "dedicated", "value": "db"})],
            &taint
        ));
        assert!(tolerates(
            &[json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"})],
            &taint
        ));
        assert!(tolerates(&[json!({"operator": "Exists"})], &taint));
        assert!(!tolerates(
            &[json!({"key": "dedicated", "value": "web"})],
            &taint
        ));
        assert!(!tolerates(
            &[json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"})],
            &taint
        ));
    }

    #[test]
    fn cordoned_and_tainted_nodes_are_filtered_and_untainted_preferred() {
        let prefer = json!([{"key": "old", "effect": "PreferNoSchedule"}]);
        let mut sched = Scheduler::new(vec![
            node("a-cordoned", true, json!([])),
            node(
                "b-tainted",
                false,
                json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            ),
            node("c-prefer-not", false, prefer),
            node("d-clean", false, json!([])),
        ]);
        assert_eq!(sched.choose(&pod(json!([]))).unwrap(), "d-clean");
        // Spread: d-clean has a pod now, but PreferNoSchedule still ranks first.
        assert_eq!(sched.choose(&pod(json!([]))).unwrap(), "d-clean");
        let tolerant = pod(json!([{"key": "k", "operator": "Exists"}]));
        assert_eq!(sched.choose(&tolerant).unwrap(), "b-tainted");
    }

    #[test]
    fn no_fitting_node_gives_the_schedulers_message() {
        let mut sched = Scheduler::new(vec![
            node("a", true, json!([])),
            node(
                "b",
                false,
                json!([{"key": "k", "value": "v", "effect": "NoExecute"}]),
            ),
            node(
                "c",
                false,
                json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            ),
        ]);
        let err = sched.choose(&pod(json!([]))).unwrap_err();
        assert_eq!(
            err,
            "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint {k: v}. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
        let mut selective = Scheduler::new(vec![node("a", false, json!([]))]);
        let p = json!({"spec": {"nodeSelector": {"zone": "b"}}});
        assert!(
            selective
                .choose(&p)
                .unwrap_err()
                .contains("node affinity/selector")
        );
    }

    #[test]
    fn conditions_are_replaced_by_type_only_when_they_change() {
        let mut p = json!({"status": {"phase": "Pending"}});
        assert!(set_condition(&mut p, scheduled_condition(Some("none"))));
        assert!(!set_condition(&mut p, scheduled_condition(Some("none"))));
        assert!(set_condition(&mut p, scheduled_condition(None)));
        assert_eq!(p["status"]["conditions"].as_array().unwrap().len(), 1);
        assert_eq!(p["status"]["conditions"][0]["status"], "True");
    }
}
