//! The simulated kubelet for pods the sandbox's controllers created: the
//! status it reports (Running with containers started, Ready unless the
//! workload carries the fail annotation, then Running but not Ready like a
//! failing readiness probe) and graceful deletion (a deleted pod is marked
//! terminating and ended `ready_delay` later). No container runs.

use serde_json::{Value, json};

use crate::objects::{finalizers, is_deleting, meta_mut, now_rfc3339};
use crate::pods::managed;
use crate::state::State;

/// How a delete goes for a pod the simulated kubelet runs: `Some(Some(pod))`
/// marks it terminating (deletionTimestamp = now + grace period) for the
/// kubelet to end; `Some(None)` removes it now (grace period 0, or a pod
/// never started); None for any other object, which the usual rules delete.
pub fn pod_delete(
    st: &State,
    group: &str,
    plural: &str,
    pod: &Value,
    grace: Option<i64>,
) -> Option<Option<Value>> {
    if !st.kubelet
        || !group.is_empty()
        || plural != "pods"
        || !managed(pod)
        || !finalizers(pod).is_empty()
    {
        return None;
    }
    let started = pod["status"]["phase"] == "Running"
        || pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
    let grace = grace
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(30);
    if !started || grace <= 0 {
        return Some(None);
    }
    if is_deleting(pod) {
        return Some(Some(pod.clone()));
    }
    let mut v = pod.clone();
    let generation = v["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
    let now = jiff::Timestamp::now();
    let at = now
        .checked_add(jiff::SignedDuration::from_secs(grace))
        .unwrap_or(now);
    let meta = meta_mut(&mut v);
    meta.insert(
        "deletionTimestamp".into(),
        json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
    );
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    meta.insert("generation".into(), json!(generation));
    Some(Some(v))
}

/// Whether the pod's `Ready` condition is True.
pub fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Whether the pod is Running and Ready.
pub fn is_running_and_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running" && is_ready(pod)
}

fn container_names(pod: &Value, list: &str) -> Vec<String> {
    pod["spec"][list]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn readiness_conditions(pod: &Value, ready: bool, now: &str) -> [Value; 2] {
    let cond = |kind: &str| {
        let mut c = json!({"type": kind, "status": if ready { "True" } else { "False" },
                           "lastProbeTime": null, "lastTransitionTime": now});
        if !ready {
            c["reason"] = json!("ContainersNotReady");
            c["message"] = json!(format!(
                "containers with unready status: [{}]",
                container_names(pod, "containers").join(" ")
            ));
        }
        c
    };
    [cond("Ready"), cond("ContainersReady")]
}

/// The status of a started pod: phase Running, every container running
/// (ready or not), init containers completed, IPs assigned.
pub fn running_status(pod: &Value, ready: bool, host_ip: Option<&str>) -> Value {
    let now = now_rfc3339();
    let uid = uuid::Uuid::parse_str(pod["metadata"]["uid"].as_str().unwrap_or_default())
        .unwrap_or_default();
    // Container IDs from the pod's uid: unique enough, no entropy to draw.
    let id = |i: usize| format!("containerd://{}{i:032x}", uid.simple());
    let image = |c: &Value| c["image"].clone();
    let list = |key: &str| {
        pod["spec"][key]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
    };
    let containers: Vec<Value> = list("containers")
        .map(|(i, c)| {
            json!({"name": c["name"], "image": image(c), "imageID": "", "containerID": id(i),
                   "ready": ready, "started": true, "restartCount": 0,
                   "state": {"running": {"startedAt": now}}})
        })
        .collect();
    let inits: Vec<Value> = list("initContainers")
        .map(|(i, c)| {
            json!({"name": c["name"], "image": image(c), "imageID": "", "containerID": id(100 + i),
                   "ready": true, "started": false, "restartCount": 0,
                   "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                            "startedAt": now, "finishedAt": now}}})
        })
        .collect();
    let b = uid.into_bytes();
    let pod_ip = format!("10.244.{}.{}", b[0], b[1].max(1));
    let [ready_c, containers_c] = readiness_conditions(pod, ready, &now);
    let ok = |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    let mut status = json!({
        "phase": "Running",
        "conditions": [ok("PodReadyToStartContainers"), ok("Initialized"), ready_c, containers_c,
                       ok("PodScheduled")],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": now,
        "containerStatuses": containers,
    });
    if !inits.is_empty() {
        status["initContainerStatuses"] = json!(inits);
    }
    if let Some(ip) = host_ip {
        status["hostIP"] = json!(ip);
        status["hostIPs"] = json!([{"ip": ip}]);
    }
    status
}

/// A Running pod's status with readiness changed, or None if it already
/// has that readiness (or is not Running).
pub fn with_readiness(pod: &Value, ready: bool) -> Option<Value> {
    if pod["status"]["phase"] != "Running" || is_ready(pod) == ready {
        return None;
    }
    let mut status = pod["status"].clone();
    let now = now_rfc3339();
    let [ready_c, containers_c] = readiness_conditions(pod, ready, &now);
    if let Some(conds) = status["conditions"].as_array_mut() {
        for c in conds.iter_mut() {
            if c["type"] == "Ready" {
                *c = ready_c.clone();
            } else if c["type"] == "ContainersReady" {
                *c = containers_c.clone();
            }
        }
    }
    if let Some(cs) = status["containerStatuses"].as_array_mut() {
        for c in cs {
            c["ready"] = json!(ready);
        }
    }
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({"metadata": {"uid": "0a0b0c0d-0000-0000-0000-000000000000"},
               "spec": {"containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "x"}],
                        "initContainers": [{"name": "init", "image": "busybox"}]}})
    }

    #[test]
    fn started_pods_are_running_with_containers_and_ips() {
        let mut p = pod();
        p["status"] = running_status(&p, true, Some("10.0.0.7"));
        assert!(is_running_and_ready(&p));
        let st = &p["status"];
        assert_eq!(st["podIP"], "10.244.10.11");
        assert_eq!(st["hostIP"], "10.0.0.7");
        assert_eq!(st["containerStatuses"].as_array().unwrap().len(), 2);
        assert_eq!(st["containerStatuses"][0]["ready"], true);
        assert_eq!(
            st["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
    }

    #[test]
    fn failing_pods_run_but_are_not_ready_until_the_failure_goes() {
        let mut p = pod();
        p["status"] = running_status(&p, false, None);
        assert!(!is_ready(&p));
        let ready = p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap()
            .clone();
        assert_eq!(
            ready["message"],
            "containers with unready status: [app side]"
        );
        assert!(with_readiness(&p, false).is_none());
        p["status"] = with_readiness(&p, true).unwrap();
        assert!(is_running_and_ready(&p));
        assert_eq!(p["status"]["containerStatuses"][1]["ready"], true);
    }
}
