//! The Eviction API, `POST /api/v1/namespaces/{ns}/pods/{name}/eviction`
//! with a policy/v1 Eviction: deletes the pod unless a PodDisruptionBudget
//! forbids it, as kube-apiserver's eviction subresource does. RBAC has
//! checked `create pods/eviction` before this runs.

use std::sync::Arc;

use http::{Method, Response};
use serde_json::{Value, json};

use crate::admission;
use crate::disruption;
use crate::handlers::{RequestCtx, delete_options_value, write};
use crate::http::{Body, Query, json_response};
use crate::kubelet::is_ready;
use crate::objects::is_deleting;
use crate::registry::ResourceInfo;
use crate::server::Inner;
use crate::state::{CommitError, parse_body};
use crate::status::{ApiError, Subject};

/// kube-apiserver's refusal when a budget allows no disruption (429, the
/// budget named in a `DisruptionBudget` cause).
pub fn budget_refusal(budget: &str, desired: i64, healthy: i64) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests", "code": 429,
        "details": {"causes": [{"reason": "DisruptionBudget", "message": format!(
            "The disruption budget {budget} needs {desired} healthy pods and has {healthy} currently")}]},
    })
}

/// Pods whose eviction needs no budget: finished, not yet running, or
/// already being deleted.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed" | "Pending")
    ) || is_deleting(pod)
}

/// Serves the eviction subresource.
pub async fn evict(
    inner: &Arc<Inner>,
    res: &ResourceInfo,
    ctx: &RequestCtx,
) -> Result<Response<Body>, ApiError> {
    if ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} pods/eviction)",
            ctx.method
        )));
    }
    let ns = ctx.path.namespace.clone().unwrap_or_default();
    let name = ctx.path.name.clone().unwrap_or_default();
    let body = parse_body(&ctx.body)?;
    if let Some(n) = body["metadata"]["name"].as_str()
        && !n.is_empty()
        && n != name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    // Only `deleteOptions` counts, as on a real server (kube-rs 5 sends its
    // EvictParams as `delete_options`, which the server ignores).
    let delete_body = &body["deleteOptions"];
    let opts = delete_options_value(&Query::default(), delete_body)?;
    let dry_run = ctx.query.get("dryRun") == Some("All")
        || delete_body["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "All"));
    let recorded = {
        let mut st = inner.lock();
        let pod = st
            .store
            .get("", "pods", &ns, &name)
            .map(|p| p.value.clone())
            .ok_or_else(|| {
                ApiError::not_found(Subject {
                    group: "",
                    plural: "pods",
                    name: &name,
                })
            })?;
        let mut budget = None;
        if !can_ignore_budget(&pod) {
            let budgets = disruption::matching(&st, &pod);
            if budgets.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(pdb) = budgets.first() {
                let b = disruption::evaluate(&st, pdb);
                let always = pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow";
                // An unready pod is not counted as healthy: evicting it costs
                // the budget nothing while the budget holds.
                let unhealthy_free =
                    !is_ready(&pod) && (always || (b.healthy >= b.desired && b.desired > 0));
                if !unhealthy_free {
                    if b.allowed <= 0 {
                        let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
                        return Ok(json_response(
                            429,
                            &budget_refusal(name, b.desired, b.healthy),
                        ));
                    }
                    budget = Some((pdb.clone(), b));
                }
            }
        }
        let planned = st.plan_delete(res, "v1", &ns, &name, &opts)?;
        if admission::matching_hooks(&st, &planned, ctx.caller.as_ref()).is_empty() {
            // Checked and deleted under one lock: no other eviction can
            // slip in between, so the budget needs no bookkeeping.
            match st.commit_owned(planned, dry_run) {
                Ok(_) => {}
                Err(CommitError::Api(e)) => return Err(e),
                Err(CommitError::Stale) => {
                    return Err(ApiError::internal("pod changed while evicting"));
                }
            }
            drop(st);
            if !dry_run {
                inner.dirty.notify_one();
            }
            return Ok(success());
        }
        // A webhook is called without the lock: record the eviction in the
        // budget first, as kube-apiserver does.
        if let Some((pdb, b)) = &budget
            && !dry_run
        {
            disruption::record_eviction(&mut st, pdb, b, &name);
        }
        budget.map(|(pdb, _)| pdb)
    };
    let deleted = write(inner, ctx.caller.as_ref(), dry_run, |st| {
        st.plan_delete(res, "v1", &ns, &name, &opts)
    })
    .await;
    if let Some(pdb) = recorded {
        // The pod's name may be reused at once (StatefulSets): forget it.
        disruption::forget_eviction(&mut inner.lock(), &pdb, &name);
    }
    deleted?;
    Ok(success())
}

fn success() -> Response<Body> {
    json_response(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}
