//! Draining a Down node through the Eviction API, as `kubectl drain` does:
//! every pod but DaemonSet and mirror pods is evicted (a pod of a DaemonSet
//! that does not exist is evicted too); pods that are terminating are
//! waited for.
//!
//! PodDisruptionBudgets are respected by the API server, which refuses an
//! eviction they forbid (429). The client retries a 429 with backoff for
//! minutes, so a pod whose budget allows no disruption now (its status says
//! so) is not asked at all, and each eviction gets a short budget of its
//! own: either way the pod is reported as blocked, naming the budget, and
//! tried again on the next pass.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams};
use kube::{Client, ResourceExt};
use kudo_api::BlockedEviction;
use kudo_engine::maintenance::drain::{
    Disposition, blocking_budget, budget_name, budgets_selecting, claimed_daemon_set, disposition,
};

use crate::classify::describe_kube_error;

/// How long one eviction may take (the client's retries of a 429 included).
const EVICTION_BUDGET: Duration = Duration::from_secs(2);
/// Evictions under way at once.
const CONCURRENT_EVICTIONS: usize = 8;

/// What one pass of draining a node left.
#[derive(Debug, Default)]
pub(super) struct Drained {
    /// Pods still on the node that draining waits for.
    pub left: u32,
    /// Evictions a budget stands in the way of.
    pub blocked: Vec<BlockedEviction>,
    /// Evictions that failed otherwise (retried on the next pass).
    pub failures: Vec<String>,
}

impl Drained {
    /// The node's status message.
    pub fn message(&self) -> String {
        let mut message = match self.left {
            0 => "drained".to_string(),
            1 => "draining: 1 pod left".to_string(),
            n => format!("draining: {n} pods left"),
        };
        if !self.blocked.is_empty() {
            message.push_str(&format!(
                "; {} eviction(s) held back by a PodDisruptionBudget, retried",
                self.blocked.len()
            ));
        }
        if let Some(first) = self.failures.first() {
            message.push_str(&format!("; {first}"));
        }
        message
    }
}

/// Whether the DaemonSet `name` (with `uid`) of `pod`'s namespace exists;
/// the uids found are kept in `seen` for the pass (each pod's claim is
/// compared with it). One that cannot be read counts as existing: the pod
/// stays, as it did before the check.
async fn daemon_set_exists(
    client: &Client,
    pod: &Pod,
    name: &str,
    uid: &str,
    seen: &mut HashMap<(String, String), Option<String>>,
) -> bool {
    let namespace = pod.namespace().unwrap_or_default();
    let key = (namespace.clone(), name.to_string());
    if let Some(found) = seen.get(&key) {
        return found.as_deref() == Some(uid);
    }
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), &namespace);
    let found = match api.get_metadata_opt(name).await {
        Ok(found) => found.and_then(|d| d.metadata.uid),
        Err(e) => {
            tracing::warn!(error = %e, daemon_set = %name, %namespace, "could not read a pod's DaemonSet");
            return true;
        }
    };
    let exists = found.as_deref() == Some(uid);
    seen.insert(key, found);
    exists
}

/// What became of one pod.
enum Evicted {
    Gone,
    Going,
    /// Held back without asking: its budget allows no disruption now.
    Held(BlockedEviction),
    /// Refused (or not accepted in time), with why; the caller names the
    /// budget that selects the pod.
    Refused(String),
    Failed(String),
}

/// Evicts what has to go from `pods` (the pods on one node).
pub(super) async fn drain(client: &Client, pods: &[Pod]) -> Drained {
    let mut out = Drained::default();
    let mut budgets: HashMap<String, Vec<PodDisruptionBudget>> = HashMap::new();
    let mut to_evict = Vec::new();
    let mut daemon_sets: HashMap<(String, String), Option<String>> = HashMap::new();
    for pod in pods {
        let mut what = disposition(pod);
        if what == Disposition::Stays
            && let Some((name, uid)) = claimed_daemon_set(pod)
            && !daemon_set_exists(client, pod, name, uid, &mut daemon_sets).await
        {
            // A DaemonSet owner anyone could write into the pod.
            what = Disposition::Evict;
        }
        match what {
            Disposition::Stays => {}
            Disposition::Terminating => out.left += 1,
            Disposition::Evict => {
                let namespace = pod.namespace().unwrap_or_default();
                if !budgets.contains_key(&namespace) {
                    let listed = budgets_in(client, &namespace).await;
                    budgets.insert(namespace.clone(), listed);
                }
                let in_namespace = budgets.get(&namespace).map(Vec::as_slice);
                to_evict.push((
                    pod.clone(),
                    held_back(pod, in_namespace.unwrap_or_default()),
                ));
            }
        }
    }
    let results: Vec<(Pod, Evicted)> = futures::stream::iter(to_evict)
        .map(|(pod, held)| {
            // Owned: the stream's futures must not borrow across its items.
            let client = client.clone();
            async move {
                let evicted = match held {
                    Some(blocked) => Evicted::Held(blocked),
                    None => evict(&client, &pod).await,
                };
                (pod, evicted)
            }
        })
        .buffer_unordered(CONCURRENT_EVICTIONS)
        .collect()
        .await;
    for (pod, result) in results {
        match result {
            Evicted::Gone => {}
            Evicted::Going => out.left += 1,
            Evicted::Held(blocked) => {
                out.left += 1;
                out.blocked.push(blocked);
            }
            Evicted::Refused(message) => {
                out.left += 1;
                let namespace = pod.namespace().unwrap_or_default();
                let in_namespace = budgets.get(&namespace).map(Vec::as_slice);
                out.blocked.push(BlockedEviction {
                    pod: format!("{namespace}/{}", pod.name_any()),
                    budget: blocking_budget(&pod, in_namespace.unwrap_or_default()),
                    message,
                });
            }
            Evicted::Failed(message) => {
                out.left += 1;
                out.failures.push(message);
            }
        }
    }
    out.blocked.sort_by(|a, b| a.pod.cmp(&b.pod));
    out
}

/// The budget that allows no disruption of `pod` now (its status says
/// so), if one does: the pod is then held back without asking.
fn held_back(pod: &Pod, budgets: &[PodDisruptionBudget]) -> Option<BlockedEviction> {
    let (budget, status) = budgets_selecting(pod, budgets)
        .filter_map(|b| Some((b, b.status.as_ref()?)))
        .find(|(_, s)| s.disruptions_allowed.is_some_and(|allowed| allowed <= 0))?;
    Some(BlockedEviction {
        pod: format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any()),
        budget: Some(budget_name(budget)),
        message: format!(
            "the budget allows no disruption now: {} of {} pods healthy, {} needed",
            status.current_healthy.unwrap_or(0),
            status.expected_pods.unwrap_or(0),
            status.desired_healthy.unwrap_or(0)
        ),
    })
}

async fn evict(client: &Client, pod: &Pod) -> Evicted {
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    match tokio::time::timeout(EVICTION_BUDGET, api.evict(&name, &EvictParams::default())).await {
        Ok(Ok(_)) => Evicted::Going,
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => Evicted::Gone,
        Ok(Err(kube::Error::Api(status))) if status.code == 429 => Evicted::Refused(status.message),
        Ok(Err(err)) => Evicted::Failed(format!(
            "evicting pod {namespace}/{name} failed: {}",
            describe_kube_error(&err)
        )),
        // The client retries a refused eviction for minutes; a refusal is
        // what a budget does, so the caller names the one that applies.
        Err(_) => Evicted::Refused(format!(
            "the eviction was not accepted within {}s (refused and retried)",
            EVICTION_BUDGET.as_secs()
        )),
    }
}

/// The policy/v1 budgets of a namespace; none when they cannot be read
/// (a refusal is still reported, without the budget's name).
async fn budgets_in(client: &Client, namespace: &str) -> Vec<PodDisruptionBudget> {
    match Api::<PodDisruptionBudget>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
    {
        Ok(list) => list.items,
        Err(err) => {
            tracing::debug!(namespace, error = %err, "cannot list PodDisruptionBudgets");
            Vec::new()
        }
    }
}
