//! Draining a Down node through the Eviction API, as `kubectl drain` does:
//! every pod but DaemonSet and mirror pods is evicted; pods that are
//! terminating are waited for.
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
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams};
use kube::{Client, ResourceExt};
use kudo_api::BlockedEviction;
use kudo_engine::maintenance::drain::{Disposition, blocking_budget, disposition};

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

/// What became of one pod.
enum Evicted {
    Gone,
    Going,
    Blocked(BlockedEviction),
    Failed(String),
}

/// Evicts what has to go from `pods` (the pods on one node).
pub(super) async fn drain(client: &Client, pods: &[Pod]) -> Drained {
    let mut out = Drained::default();
    let mut budgets: HashMap<String, Vec<PodDisruptionBudget>> = HashMap::new();
    let mut to_evict = Vec::new();
    for pod in pods {
        match disposition(pod) {
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
    let results: Vec<Evicted> = futures::stream::iter(to_evict)
        .map(|(pod, held)| {
            // Owned: the stream's futures must not borrow across its items.
            let client = client.clone();
            async move {
                match held {
                    Some(blocked) => Evicted::Blocked(blocked),
                    None => evict(&client, &pod).await,
                }
            }
        })
        .buffer_unordered(CONCURRENT_EVICTIONS)
        .collect()
        .await;
    for result in results {
        match result {
            Evicted::Gone => {}
            Evicted::Going => out.left += 1,
            Evicted::Blocked(blocked) => {
                out.left += 1;
                out.blocked.push(blocked);
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

/// The budget that allows no disruption of `pod` now, if one does.
fn held_back(pod: &Pod, budgets: &[PodDisruptionBudget]) -> Option<BlockedEviction> {
    let exhausted: Vec<PodDisruptionBudget> = budgets
        .iter()
        .filter(|b| {
            b.status
                .as_ref()
                .and_then(|s| s.disruptions_allowed)
                .is_some_and(|allowed| allowed <= 0)
        })
        .cloned()
        .collect();
    let budget = blocking_budget(pod, &exhausted)?;
    let status = exhausted
        .iter()
        .find(|b| budget.ends_with(&format!("/{}", b.name_any())))
        .and_then(|b| b.status.as_ref());
    let message = match status {
        Some(s) => format!(
            "the budget allows no disruption now: {} of {} pods healthy, {} needed",
            s.current_healthy.unwrap_or(0),
            s.expected_pods.unwrap_or(0),
            s.desired_healthy.unwrap_or(0)
        ),
        None => "the budget allows no disruption now".to_string(),
    };
    Some(BlockedEviction {
        pod: format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any()),
        budget: Some(budget),
        message,
    })
}

async fn evict(client: &Client, pod: &Pod) -> Evicted {
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let api = Api::<Pod>::namespaced(client.clone(), &namespace);
    let label = format!("{namespace}/{name}");
    match tokio::time::timeout(EVICTION_BUDGET, api.evict(&name, &EvictParams::default())).await {
        Ok(Ok(_)) => Evicted::Going,
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => Evicted::Gone,
        Ok(Err(kube::Error::Api(status))) if status.code == 429 => {
            let budgets = budgets_in(client, &namespace).await;
            Evicted::Blocked(BlockedEviction {
                pod: label,
                budget: blocking_budget(pod, &budgets),
                message: status.message,
            })
        }
        Ok(Err(err)) => Evicted::Failed(format!(
            "evicting pod {label} failed: {}",
            describe_kube_error(&err)
        )),
        // The client retries a refused eviction for minutes; a refusal is
        // what a budget does, so say which one applies.
        Err(_) => {
            let budgets = budgets_in(client, &namespace).await;
            Evicted::Blocked(BlockedEviction {
                pod: label,
                budget: blocking_budget(pod, &budgets),
                message: format!(
                    "the eviction was not accepted within {}s (refused and retried)",
                    EVICTION_BUDGET.as_secs()
                ),
            })
        }
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
