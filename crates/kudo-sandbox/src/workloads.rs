//! Simulated workload controllers: Deployments, StatefulSets, DaemonSets,
//! ReplicaSets and Jobs get a realistic status some time after each change,
//! so health checks pass without running pods. The annotation
//! [`FAIL_ANNOTATION`] set to "true" makes them fail instead.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::objects::{is_deleting, now_rfc3339};
use crate::server::Inner;
use crate::store::{EventKind, ns_name};

/// Annotation that makes a simulated workload fail (Job Failed, Deployment
/// stuck with ProgressDeadlineExceeded, others never ready).
pub const FAIL_ANNOTATION: &str = "sandbox.kudo.dev/fail";

const KINDS: [(&str, &str); 5] = [
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
];

fn is_workload(group: &str, plural: &str) -> bool {
    KINDS.iter().any(|(g, p)| *g == group && *p == plural)
}

pub(crate) fn failing(obj: &Value) -> bool {
    obj["metadata"]["annotations"][FAIL_ANNOTATION].as_str() == Some("true")
}

pub(crate) fn revision(obj: &Value) -> String {
    // FNV-1a over the pod template: changes when the template changes.
    let text = obj["spec"]["template"].to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!(
        "{}-{:010x}",
        obj["metadata"]["name"].as_str().unwrap_or_default(),
        h & 0xff_ffff_ffff
    )
}

fn condition(kind: &str, status: bool, reason: &str, message: &str) -> Value {
    let now = now_rfc3339();
    json!({"type": kind, "status": if status { "True" } else { "False" }, "reason": reason,
           "message": message, "lastTransitionTime": now, "lastUpdateTime": now})
}

/// Whether the object's status is out of date with respect to the simulation.
pub fn needs_status(plural: &str, obj: &Value) -> bool {
    if is_deleting(obj) {
        return false;
    }
    let st = &obj["status"];
    if plural == "jobs" {
        let done = st["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True"
            })
        });
        return !done;
    }
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    if st["observedGeneration"].as_i64() != Some(generation) {
        return true;
    }
    let shown_failing = st["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["reason"] == "ProgressDeadlineExceeded" || c["reason"] == "SandboxFailure")
    });
    shown_failing != failing(obj)
}

/// The status the simulated controller writes for an object.
pub fn simulated_status(plural: &str, obj: &Value) -> Value {
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    let replicas = obj["spec"]["replicas"].as_i64().unwrap_or(1);
    let fail = failing(obj);
    let ready = if fail { 0 } else { replicas };
    match plural {
        "deployments" => {
            let mut s = json!({
                "observedGeneration": generation, "replicas": replicas, "updatedReplicas": replicas,
                "readyReplicas": ready, "availableReplicas": ready,
            });
            s["conditions"] = if fail {
                s["unavailableReplicas"] = json!(replicas);
                json!([
                    condition(
                        "Available",
                        false,
                        "MinimumReplicasUnavailable",
                        "Deployment does not have minimum availability."
                    ),
                    condition(
                        "Progressing",
                        false,
                        "ProgressDeadlineExceeded",
                        "ReplicaSet has timed out progressing (simulated failure)."
                    ),
                ])
            } else {
                json!([
                    condition(
                        "Available",
                        true,
                        "MinimumReplicasAvailable",
                        "Deployment has minimum availability."
                    ),
                    condition(
                        "Progressing",
                        true,
                        "NewReplicaSetAvailable",
                        "ReplicaSet has successfully progressed."
                    ),
                ])
            };
            if ready == 0 && !fail {
                s.as_object_mut().map(|m| m.remove("readyReplicas"));
            }
            s
        }
        "statefulsets" => {
            let rev = revision(obj);
            let mut s = json!({
                "observedGeneration": generation, "replicas": replicas, "readyReplicas": ready,
                "currentReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": ready,
                "currentRevision": rev, "updateRevision": rev, "collisionCount": 0,
            });
            if fail {
                s["conditions"] = json!([condition(
                    "Ready",
                    false,
                    "SandboxFailure",
                    "simulated failure"
                )]);
            }
            s
        }
        "daemonsets" => {
            let mut s = json!({
                "observedGeneration": generation, "desiredNumberScheduled": 1, "currentNumberScheduled": 1,
                "numberReady": if fail { 0 } else { 1 }, "updatedNumberScheduled": 1,
                "numberAvailable": if fail { 0 } else { 1 }, "numberMisscheduled": 0,
            });
            if fail {
                s["numberUnavailable"] = json!(1);
                s["conditions"] = json!([condition(
                    "Ready",
                    false,
                    "SandboxFailure",
                    "simulated failure"
                )]);
            }
            s
        }
        "replicasets" => {
            let mut s = json!({
                "observedGeneration": generation, "replicas": replicas, "fullyLabeledReplicas": replicas,
                "readyReplicas": ready, "availableReplicas": ready,
            });
            if fail {
                s["conditions"] = json!([condition(
                    "ReplicaFailure",
                    true,
                    "SandboxFailure",
                    "simulated failure"
                )]);
            }
            s
        }
        _ => {
            let start = obj["status"]["startTime"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(now_rfc3339);
            let completions = obj["spec"]["completions"].as_i64().unwrap_or(1);
            if fail {
                let backoff = obj["spec"]["backoffLimit"].as_i64().unwrap_or(6);
                json!({
                    "startTime": start, "failed": backoff + 1, "active": 0, "ready": 0,
                    "conditions": [
                        condition("FailureTarget", true, "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                        condition("Failed", true, "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                    ],
                })
            } else {
                json!({
                    "startTime": start, "completionTime": now_rfc3339(), "succeeded": completions,
                    "active": 0, "ready": 0,
                    "conditions": [
                        condition("SuccessCriteriaMet", true, "CompletionsReached", "Reached expected number of succeeded pods"),
                        condition("Complete", true, "CompletionsReached", "Reached expected number of succeeded pods"),
                    ],
                })
            }
        }
    }
}

type Key = (String, String, String, String);

fn schedule(inner: &Arc<Inner>, pending: &Arc<Mutex<HashSet<Key>>>, key: Key) {
    {
        let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
        if !p.insert(key.clone()) {
            return;
        }
    }
    let inner = inner.clone();
    let pending = pending.clone();
    tokio::spawn(async move {
        tokio::time::sleep(inner.settings.ready_delay).await;
        pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        let (group, plural, ns, name) = &key;
        let mut st = inner.lock();
        let Some(stored) = st.store.get(group, plural, ns, name) else {
            return;
        };
        if !needs_status(plural, &stored.value) {
            return;
        }
        let mut obj = (*stored.value).clone();
        let owners = stored.owners.clone();
        obj["status"] = simulated_status(plural, &obj);
        st.store.put(group, plural, obj, owners);
        drop(st);
        inner.dirty.notify_one();
    });
}

/// Runs the simulated controllers until shutdown.
pub async fn run(inner: Arc<Inner>) {
    let pending: Arc<Mutex<HashSet<Key>>> = Arc::default();
    let mut shutdown = inner.shutdown.clone();
    let mut rx = inner.lock().store.subscribe();
    loop {
        let due: Vec<Key> = {
            let st = inner.lock();
            st.store
                .iter_all()
                .filter(|(g, p, s)| is_workload(g, p) && needs_status(p, &s.value))
                .map(|(g, p, s)| {
                    let (ns, name) = ns_name(&s.value);
                    (g.to_string(), p.to_string(), ns, name)
                })
                .collect()
        };
        for key in due {
            schedule(&inner, &pending, key);
        }
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                c = rx.recv() => match c {
                    Ok(c) => {
                        if c.kind != EventKind::Deleted && is_workload(&c.group, &c.plural) && needs_status(&c.plural, &c.object) {
                            let (ns, name) = ns_name(&c.object);
                            schedule(&inner, &pending, (c.group.clone(), c.plural.clone(), ns, name));
                        }
                    }
                    // Missed changes: rescan everything.
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy(gen_: i64, fail: bool) -> Value {
        let mut d = json!({"metadata": {"name": "web", "generation": gen_}, "spec": {"replicas": 2, "template": {}}});
        if fail {
            d["metadata"]["annotations"] = json!({FAIL_ANNOTATION: "true"});
        }
        d
    }

    #[test]
    fn deployment_becomes_available_with_observed_generation() {
        let mut d = deploy(3, false);
        assert!(needs_status("deployments", &d));
        d["status"] = simulated_status("deployments", &d);
        assert_eq!(d["status"]["availableReplicas"], 2);
        assert_eq!(d["status"]["observedGeneration"], 3);
        assert!(!needs_status("deployments", &d));
    }

    #[test]
    fn failing_deployment_reports_progress_deadline_exceeded() {
        let mut d = deploy(1, true);
        d["status"] = simulated_status("deployments", &d);
        assert_eq!(
            d["status"]["conditions"][1]["reason"],
            "ProgressDeadlineExceeded"
        );
        assert_eq!(d["status"]["availableReplicas"], 0);
        assert!(!needs_status("deployments", &d));
    }

    #[test]
    fn job_completes_or_fails_once() {
        let mut j = json!({"metadata": {"name": "j"}, "spec": {"completions": 3}});
        j["status"] = simulated_status("jobs", &j);
        assert_eq!(j["status"]["succeeded"], 3);
        assert!(!needs_status("jobs", &j));
        let mut f = json!({"metadata": {"name": "j", "annotations": {FAIL_ANNOTATION: "true"}}, "spec": {"backoffLimit": 2}});
        f["status"] = simulated_status("jobs", &f);
        assert_eq!(f["status"]["conditions"][1]["type"], "Failed");
        assert_eq!(f["status"]["failed"], 3);
    }

    #[test]
    fn statefulset_revisions_follow_the_template() {
        let mut a =
            json!({"metadata": {"name": "db", "generation": 1}, "spec": {"template": {"x": 1}}});
        let b =
            json!({"metadata": {"name": "db", "generation": 1}, "spec": {"template": {"x": 2}}});
        a["status"] = simulated_status("statefulsets", &a);
        assert_eq!(
            a["status"]["currentRevision"],
            a["status"]["updateRevision"]
        );
        assert_ne!(
            a["status"]["updateRevision"],
            simulated_status("statefulsets", &b)["updateRevision"]
        );
    }
}
