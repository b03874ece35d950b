//! Minimal OpenAPI documents. kubectl downloads them for client-side
//! validation and to decide whether the server validates fields itself.

use http::Response;
use serde_json::json;

use crate::http::{Body, json_response};
use crate::registry::ResourceInfo;
use crate::server::Inner;
use crate::status::ApiError;

/// Serves `/openapi/v3[/...]`. `/openapi/v2` is not served (kubectl asks
/// for it in protobuf only when the v3 documents lack what it needs).
pub fn serve(inner: &Inner, rest: &str) -> Result<Response<Body>, ApiError> {
    match rest {
        "v3" => {
            let st = inner.lock();
            let mut paths = serde_json::Map::new();
            paths.insert(
                "api/v1".into(),
                json!({"serverRelativeURL": "/openapi/v3/api/v1"}),
            );
            for (g, vs) in st.registry.groups() {
                for v in vs {
                    let key = format!("apis/{g}/{v}");
                    paths.insert(
                        key.clone(),
                        json!({"serverRelativeURL": format!("/openapi/v3/{key}")}),
                    );
                }
            }
            Ok(json_response(200, &json!({"paths": paths})))
        }
        other if other.starts_with("v3/") => {
            let gv = &other[3..];
            let (group, version) = match gv.strip_prefix("apis/") {
                Some(rest) => rest.split_once('/').unwrap_or((rest, "")),
                None => ("", gv.strip_prefix("api/").unwrap_or_default()),
            };
            let st = inner.lock();
            let doc = group_version_doc(st.registry.in_group_version(group, version));
            Ok(json_response(200, &doc))
        }
        other => Err(ApiError::no_route(&format!("/openapi/{other}"))),
    }
}

fn query_param(name: &str) -> serde_json::Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

/// An OpenAPI v3 document for one group version. It lists a PATCH operation
/// per resource with the `fieldValidation` parameter, which is how kubectl
/// learns that the server validates fields itself (so it skips client-side
/// validation).
fn group_version_doc<'a>(resources: impl Iterator<Item = &'a ResourceInfo>) -> serde_json::Value {
    let mut paths = serde_json::Map::new();
    for r in resources {
        for version in &r.versions {
            let prefix = if r.group.is_empty() {
                format!("/api/{version}")
            } else {
                format!("/apis/{}/{version}", r.group)
            };
            let path = if r.namespaced {
                format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
            } else {
                format!("{prefix}/{}/{{name}}", r.plural)
            };
            let gvk = json!({"group": r.group, "version": version, "kind": r.kind});
            let op = |action: &str| {
                json!({
                    "operationId": format!("{action}{}", r.kind),
                    "x-kubernetes-action": action,
                    "x-kubernetes-group-version-kind": gvk,
                    "parameters": [query_param("dryRun"), query_param("fieldManager"), query_param("fieldValidation"), query_param("force")],
                    "responses": {"200": {"description": "OK"}},
                })
            };
            paths.insert(path, json!({"patch": op("patch"), "put": op("put")}));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "kudo-sandbox", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    })
}
