//! Why the manager's pods do not come up, read from their status, so
//! `init --wait` can say so (and what to do) instead of waiting out its
//! timeout. Pure: the caller lists the pods.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// Waiting reasons that mean the image will not arrive by itself.
const IMAGE_REASONS: [&str; 4] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
];

/// What keeps the manager from starting, if its pods say so; `None` while
/// they are merely on their way.
pub fn stuck_reason(pods: &[Pod], image: &str, namespace: &str) -> Option<String> {
    pods.iter()
        .find_map(|pod| pod_problem(pod, image, namespace))
}

fn pod_problem(pod: &Pod, image: &str, namespace: &str) -> Option<String> {
    let status = pod.status.as_ref()?;
    let unschedulable = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    if let Some(condition) = unschedulable {
        return Some(format!(
            "the manager pod cannot be scheduled: {}",
            condition.message.as_deref().unwrap_or("no node fits it")
        ));
    }
    let containers = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    containers
        .filter_map(|c| container_problem(c, image, namespace))
        .next()
}

fn container_problem(container: &ContainerStatus, image: &str, namespace: &str) -> Option<String> {
    let waiting = container.state.as_ref()?.waiting.as_ref()?;
    let reason = waiting.reason.as_deref()?;
    let detail = waiting
        .message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    if IMAGE_REASONS.contains(&reason) {
        return Some(format!(
            "the manager image {image} cannot be pulled ({reason}{detail}). Build it from the \
             kudo-rs repository with `make image IMAGE={image}`, then push it to your registry \
             or load it into the nodes (kind: `kind load docker-image {image}`), or pass \
             another image with --image"
        ));
    }
    match reason {
        "CrashLoopBackOff" => {
            let last = container
                .last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .map(|t| {
                    let why = t.reason.as_deref().unwrap_or("exited");
                    format!("; last exit: {why}, code {}", t.exit_code)
                })
                .unwrap_or_default();
            Some(format!(
                "the manager keeps restarting ({} restarts{last}); see `kubectl -n {namespace} \
                 logs deploy/kudo-manager --previous`",
                container.restart_count
            ))
        }
        "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError" => Some(
            format!("the manager container cannot start ({reason}{detail})"),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "kudo-manager-1"}, "status": status}))
            .unwrap()
    }

    fn waiting(reason: &str, message: &str) -> Pod {
        pod(json!({"containerStatuses": [{
            "name": "manager", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}}
        }]}))
    }

    #[test]
    fn an_image_that_cannot_be_pulled_says_how_to_build_and_load_it() {
        let pods = [waiting("ImagePullBackOff", "Back-off pulling image \"x\"")];
        let message = stuck_reason(&pods, "kudo-rs/kudo-manager:0.1.0", "kudo-system").unwrap();
        assert!(
            message.starts_with(
                "the manager image kudo-rs/kudo-manager:0.1.0 cannot be pulled (ImagePullBackOff: Back-off pulling image \"x\")"
            ) && message.contains("make image IMAGE=kudo-rs/kudo-manager:0.1.0")
                && message.contains("kind load docker-image kudo-rs/kudo-manager:0.1.0"),
            "{message}"
        );
    }

    #[test]
    fn a_crashing_manager_points_at_its_logs() {
        let pods = [pod(json!({"containerStatuses": [{
            "name": "manager", "image": "i", "imageID": "", "ready": false, "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}
        }]}))];
        assert_eq!(
            stuck_reason(&pods, "i", "kudo-system").unwrap(),
            "the manager keeps restarting (4 restarts; last exit: Error, code 1); see \
             `kubectl -n kudo-system logs deploy/kudo-manager --previous`"
        );
    }

    #[test]
    fn an_unschedulable_pod_says_why() {
        let pods = [pod(json!({"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient memory."
        }]}))];
        assert_eq!(
            stuck_reason(&pods, "i", "ns").unwrap(),
            "the manager pod cannot be scheduled: 0/3 nodes are available: 3 Insufficient memory."
        );
    }

    #[test]
    fn pods_on_their_way_are_not_stuck() {
        let pods = [
            waiting("ContainerCreating", ""),
            pod(json!({"phase": "Pending"})),
            pod(json!({"containerStatuses": [{
                "name": "manager", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                "state": {"running": {}}
            }]})),
        ];
        assert_eq!(stuck_reason(&pods, "i", "ns"), None);
    }
}
