//! Pipe tasks, pure part one: from what the cluster shows (the pipe pod,
//! whether this execution's artifacts exist) to what to do next.
//!
//! All state lives in the cluster, so a Pipe task can be re-run by any
//! reconcile, after a restart or from a stale cache:
//! - the pod exists while files are being produced; it is deleted only
//!   after every artifact was applied;
//! - an artifact carries the plan execution uid it was copied in
//!   (`kudo.dev/last-plan-execution-uid`, stamped by the enhancer).
//!
//! So "no pod, and every artifact carries this execution's uid" means the
//! copy already happened: the task is done and the pod is not created again
//! (KUDO re-created it after a stale reconcile and copied twice). A
//! restart of the step within the same execution therefore keeps the
//! copied files; delete the artifacts to copy them again.

use serde_json::Value;

use kudo_api::names::PLAN_UID_ANNOTATION;

/// What a Pipe task does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipeAction {
    /// The files were copied in this execution and the pod is gone (or
    /// going): done.
    AlreadyCopied,
    /// No pod and no complete copy: create the pod.
    CreatePod,
    /// The pod cannot serve this execution (it belongs to an earlier one,
    /// or its waiter exited): delete it and wait.
    DeletePod(String),
    /// Not ready yet (not an error).
    Wait(String),
    /// The pod failed: the step fails for good.
    Fail(String),
    /// Running and Ready: copy the files out.
    Copy,
}

fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, key| v.get(*key))
}

fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(obj, path).and_then(Value::as_str)
}

/// `pipe pod ns/name`.
pub fn pod_label(pod: &Value) -> String {
    let ns = str_at(pod, &["metadata", "namespace"]).unwrap_or_default();
    let name = str_at(pod, &["metadata", "name"]).unwrap_or_default();
    if ns.is_empty() {
        format!("pipe pod {name}")
    } else {
        format!("pipe pod {ns}/{name}")
    }
}

/// Whether an object carries this plan execution's uid.
pub fn stamped_with(obj: &Value, plan_uid: &str) -> bool {
    str_at(obj, &["metadata", "annotations", PLAN_UID_ANNOTATION]) == Some(plan_uid)
}

fn is_terminating(pod: &Value) -> bool {
    at(pod, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

/// Whether the live pod (if any) leaves room for "already copied": the
/// executor looks the artifacts up only then.
pub fn artifacts_matter(pod: Option<&Value>) -> bool {
    pod.is_none_or(is_terminating)
}

/// Decide the next action. `copied`: every artifact exists and carries
/// `plan_uid`.
pub fn next_action(pod: Option<&Value>, plan_uid: &str, copied: bool) -> PipeAction {
    let Some(pod) = pod else {
        return if copied {
            PipeAction::AlreadyCopied
        } else {
            PipeAction::CreatePod
        };
    };
    let label = pod_label(pod);
    if is_terminating(pod) {
        return if copied {
            PipeAction::AlreadyCopied
        } else {
            PipeAction::Wait(format!(
                "{label} is being deleted; a new one is created once it is gone"
            ))
        };
    }
    if !stamped_with(pod, plan_uid) {
        return PipeAction::DeletePod(format!(
            "{label} was created by an earlier execution of the plan; deleting it"
        ));
    }
    if let Some(failure) = failure(pod) {
        return PipeAction::Fail(format!("{label}: {failure}"));
    }
    let phase = str_at(pod, &["status", "phase"]).unwrap_or("Pending");
    match phase {
        "Running" if ready(pod) => PipeAction::Copy,
        "Running" => PipeAction::Wait(format!("{label} is Running but not Ready yet")),
        "Succeeded" => PipeAction::DeletePod(format!(
            "{label} ended before its files were copied (its waiter container exited); \
             deleting it to start over"
        )),
        other => PipeAction::Wait(match waiting_reason(pod) {
            Some(why) => format!("{label} is {other} ({why})"),
            None => format!("{label} is {other}"),
        }),
    }
}

fn ready(pod: &Value) -> bool {
    at(pod, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn statuses<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    at(pod, &["status", field])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A terminated container state with a non-zero exit code, described.
fn failed_termination(state: Option<&Value>) -> Option<String> {
    let t = state?.get("terminated")?;
    let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
    if code == 0 {
        return None;
    }
    let mut text = format!("exit code {code}");
    if let Some(reason) = t.get("reason").and_then(Value::as_str) {
        text.push_str(&format!(", {reason}"));
    }
    if let Some(msg) = t
        .get("message")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        text.push_str(&format!(": {msg}"));
    }
    Some(text)
}

/// Why the pod failed for good: phase Failed, or an init container that
/// exited non-zero (restartPolicy OnFailure would only loop on it).
fn failure(pod: &Value) -> Option<String> {
    for c in statuses(pod, "initContainerStatuses") {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
        let failed =
            failed_termination(c.get("state")).or_else(|| failed_termination(c.get("lastState")));
        if let Some(how) = failed {
            return Some(format!(
                "init container {name} failed ({how}); fix the command that writes the pipe files"
            ));
        }
    }
    if str_at(pod, &["status", "phase"]) == Some("Failed") {
        let reason = str_at(pod, &["status", "reason"]).unwrap_or("");
        let message = str_at(pod, &["status", "message"]).unwrap_or("");
        let detail = [reason, message]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(": ");
        return Some(if detail.is_empty() {
            "the pod failed".to_string()
        } else {
            format!("the pod failed: {detail}")
        });
    }
    None
}

/// Why a container is waiting (image pull problems and the like).
fn waiting_reason(pod: &Value) -> Option<String> {
    statuses(pod, "initContainerStatuses")
        .chain(statuses(pod, "containerStatuses"))
        .find_map(|c| {
            let waiting = c.get("state")?.get("waiting")?;
            let reason = waiting.get("reason").and_then(Value::as_str)?;
            let name = c.get("name").and_then(Value::as_str).unwrap_or("?");
            Some(format!("container {name}: {reason}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UID: &str = "run-2";

    fn pod(uid: &str, status: Value) -> Value {
        json!({
            "metadata": {"name": "p.deploy.main.gen.gen.pipepod", "namespace": "ns",
                         "annotations": {PLAN_UID_ANNOTATION: uid}},
            "status": status,
        })
    }

    fn ready_pod() -> Value {
        pod(
            UID,
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
        )
    }

    #[test]
    fn without_a_pod_the_pod_is_created_unless_this_run_already_copied() {
        assert_eq!(next_action(None, UID, false), PipeAction::CreatePod);
        assert_eq!(next_action(None, UID, true), PipeAction::AlreadyCopied);
    }

    #[test]
    fn a_running_ready_pod_of_this_run_is_copied_from() {
        assert_eq!(
            next_action(Some(&ready_pod()), UID, false),
            PipeAction::Copy
        );
    }

    #[test]
    fn a_pending_pod_waits_with_a_message_naming_it_and_its_phase() {
        let p = pod(
            UID,
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "gen", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}),
        );
        assert_eq!(
            next_action(Some(&p), UID, false),
            PipeAction::Wait(
                "pipe pod ns/p.deploy.main.gen.gen.pipepod is Pending (container gen: ImagePullBackOff)"
                    .into()
            )
        );
        let unscheduled = pod(UID, Value::Null);
        assert!(
            matches!(next_action(Some(&unscheduled), UID, false), PipeAction::Wait(m) if m.ends_with("is Pending"))
        );
        let not_ready = pod(UID, json!({"phase": "Running"}));
        assert!(
            matches!(next_action(Some(&not_ready), UID, false), PipeAction::Wait(m) if m.contains("not Ready"))
        );
    }

    #[test]
    fn a_failed_init_container_is_fatal_with_its_termination_message() {
        let p = pod(
            UID,
            json!({"phase": "Pending", "initContainerStatuses": [{"name": "gen",
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "message": "openssl: not found\n"}}}]}),
        );
        let PipeAction::Fail(msg) = next_action(Some(&p), UID, false) else {
            panic!("expected a failure")
        };
        assert_eq!(
            msg,
            "pipe pod ns/p.deploy.main.gen.gen.pipepod: init container gen failed (exit code 2, \
             Error: openssl: not found); fix the command that writes the pipe files"
        );
    }

    #[test]
    fn a_failed_pod_is_fatal() {
        let p = pod(
            UID,
            json!({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
        );
        assert!(
            matches!(next_action(Some(&p), UID, false), PipeAction::Fail(m) if m.ends_with("the pod failed: Evicted: low on memory"))
        );
    }

    #[test]
    fn a_pod_of_an_earlier_run_is_deleted_first() {
        let mut old = ready_pod();
        old["metadata"]["annotations"][PLAN_UID_ANNOTATION] = json!("run-1");
        assert!(matches!(
            next_action(Some(&old), UID, false),
            PipeAction::DeletePod(m) if m.contains("earlier execution")
        ));
    }

    #[test]
    fn a_terminating_pod_after_the_copy_means_done_otherwise_wait() {
        let mut going = ready_pod();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(artifacts_matter(Some(&going)));
        assert!(!artifacts_matter(Some(&ready_pod())));
        assert_eq!(
            next_action(Some(&going), UID, true),
            PipeAction::AlreadyCopied
        );
        assert!(matches!(
            next_action(Some(&going), UID, false),
            PipeAction::Wait(m) if m.contains("being deleted")
        ));
    }

    #[test]
    fn a_pod_whose_waiter_exited_is_replaced() {
        let done = pod(UID, json!({"phase": "Succeeded"}));
        assert!(matches!(
            next_action(Some(&done), UID, false),
            PipeAction::DeletePod(_)
        ));
    }
}
