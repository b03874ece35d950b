//! The scale subresource of Deployments, StatefulSets and ReplicaSets:
//! reads and writes `spec.replicas` through an `autoscaling/v1` Scale.

use std::sync::Arc;

use http::{Method, Response};
use serde_json::{Value, json};

use crate::handlers::{RequestCtx, request_body, write};
use crate::http::{Body, json_response};
use crate::patch::PatchKind;
use crate::registry::ResourceInfo;
use crate::server::Inner;
use crate::state::parse_body;
use crate::status::{ApiError, Subject};

fn scale_of(obj: &Value) -> Value {
    let replicas = obj["spec"]["replicas"].as_i64().unwrap_or(1);
    let selector = obj["spec"]["selector"]["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
            "uid": obj["metadata"]["uid"], "resourceVersion": obj["metadata"]["resourceVersion"],
            "creationTimestamp": obj["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": replicas},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

/// Serves GET, PUT and PATCH of `<resource>/scale`.
pub async fn scale(
    inner: &Arc<Inner>,
    res: &ResourceInfo,
    ctx: &RequestCtx,
) -> Result<Response<Body>, ApiError> {
    let p = &ctx.path;
    let ns = p.namespace.clone().unwrap_or_default();
    let name = p.name.clone().unwrap_or_default();
    let current = inner
        .lock()
        .store
        .get(&res.group, &res.plural, &ns, &name)
        .map(|s| s.value.clone())
        .ok_or_else(|| {
            ApiError::not_found(Subject {
                group: &res.group,
                plural: &res.plural,
                name: &name,
            })
        })?;
    let mut sc = scale_of(&current);
    match ctx.method {
        Method::GET => return Ok(json_response(200, &sc)),
        Method::PUT => sc = parse_body(&ctx.body)?,
        Method::PATCH => {
            let body = request_body(ctx)?;
            match PatchKind::from_content_type(&ctx.content_type)? {
                PatchKind::Json => crate::patch::json(&mut sc, &body)?,
                _ => crate::patch::merge(&mut sc, &body),
            }
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "scale supports get, update and patch",
            ));
        }
    }
    let replicas = sc["spec"]["replicas"].as_i64().ok_or_else(|| {
        ApiError::invalid(
            "Scale",
            "autoscaling",
            &name,
            "spec.replicas",
            "Required value",
        )
    })?;
    let patch = serde_json::to_vec(&json!({"spec": {"replicas": replicas}})).unwrap_or_default();
    let version = p.version.clone();
    let manager = ctx.update_manager();
    let (out, _) = write(
        inner,
        ctx.caller.as_ref(),
        ctx.query.get("dryRun") == Some("All"),
        |st| {
            st.plan_patch(
                res,
                &version,
                &ns,
                &name,
                false,
                PatchKind::Merge,
                &patch,
                Some(&manager),
                false,
            )
        },
    )
    .await?;
    Ok(json_response(200, &scale_of(&out)))
}
