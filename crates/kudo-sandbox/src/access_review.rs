//! `authorization.k8s.io/v1` access reviews, answered from the same RBAC
//! rules that authorize impersonated requests ([`crate::authz`]):
//! SubjectAccessReview (cluster-wide), LocalSubjectAccessReview (in a
//! namespace; the review's namespace must be the path's) and
//! SelfSubjectAccessReview (the caller itself). Only resource attributes
//! are judged; a review of a non-resource URL is answered "not allowed".
//! Nothing is stored: the answer is the review with its `status` filled in.

use std::sync::Arc;

use http::{Method, Response};
use serde_json::{Value, json};

use crate::authz::{self, ADMIN_GROUPS, ADMIN_USER, Attributes, Caller};
use crate::handlers::RequestCtx;
use crate::http::{Body, json_response};
use crate::server::Inner;
use crate::state::parse_body;
use crate::status::ApiError;

/// The group the reviews belong to.
pub const GROUP: &str = "authorization.k8s.io";

const KINDS: [(&str, &str); 3] = [
    ("subjectaccessreviews", "SubjectAccessReview"),
    ("localsubjectaccessreviews", "LocalSubjectAccessReview"),
    ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
];

/// Answers a review request (`POST` of one of the three kinds).
pub fn answer(inner: &Arc<Inner>, ctx: &RequestCtx) -> Result<Response<Body>, ApiError> {
    let p = &ctx.path;
    let Some(&(plural, kind)) = KINDS.iter().find(|(plural, _)| *plural == p.plural) else {
        return Err(ApiError::no_route(&format!("{GROUP}/{}", p.plural)));
    };
    let local = plural == "localsubjectaccessreviews";
    if p.version != "v1" || p.name.is_some() || p.namespace.is_some() != local {
        return Err(ApiError::no_route(&format!(
            "{GROUP}/{}/{plural}{}",
            p.version,
            if local {
                " (namespaced: /apis/authorization.k8s.io/v1/namespaces/NS/localsubjectaccessreviews)"
            } else {
                ""
            }
        )));
    }
    if ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "{plural} can only be created (POST), not {}",
            ctx.method
        )));
    }
    let mut review = parse_body(&ctx.body)?;
    let st = inner.lock();
    let is_self = plural == "selfsubjectaccessreviews";
    // Everyone may ask about themselves (kube-apiserver's `system:basic-user`).
    if let Some(caller) = ctx.caller.as_ref().filter(|_| !is_self) {
        let attrs = Attributes {
            verb: "create",
            group: GROUP,
            resource: plural,
            subresource: None,
            namespace: p.namespace.as_deref().unwrap_or_default(),
            name: None,
        };
        authz::authorize(&st, caller, &attrs)?;
    }
    let spec = &review["spec"];
    let subject = if is_self {
        ctx.caller.clone().unwrap_or_else(|| Caller {
            user: ADMIN_USER.to_string(),
            groups: ADMIN_GROUPS.iter().map(|g| (*g).to_string()).collect(),
        })
    } else {
        subject_of(spec, kind)?
    };
    let attributes = &spec["resourceAttributes"];
    let namespace = attributes["namespace"].as_str().unwrap_or_default();
    if let Some(path_ns) = p.namespace.as_deref()
        && namespace != path_ns
    {
        return Err(ApiError::bad_request(format!(
            "{kind}: spec.resourceAttributes.namespace {namespace:?} must equal the namespace \
             of the request ({path_ns:?})"
        )));
    }
    let status = if attributes.is_object() {
        let text = |field: &str| attributes[field].as_str().unwrap_or_default();
        let subresource = text("subresource");
        let name = text("name");
        let attrs = Attributes {
            verb: text("verb"),
            group: text("group"),
            resource: text("resource"),
            subresource: (!subresource.is_empty()).then_some(subresource),
            namespace,
            name: (!name.is_empty()).then_some(name),
        };
        if authz::allowed(&st, &subject, &attrs) {
            json!({"allowed": true, "reason": "allowed by an RBAC rule"})
        } else {
            json!({"allowed": false})
        }
    } else {
        json!({"allowed": false, "reason": "kudo-sandbox judges only resourceAttributes"})
    };
    review["apiVersion"] = json!(format!("{GROUP}/v1"));
    review["kind"] = json!(kind);
    review["status"] = status;
    Ok(json_response(201, &review))
}

/// The user and groups a (Local)SubjectAccessReview asks about: as given,
/// the way kube-apiserver takes them (no groups added).
fn subject_of(spec: &Value, kind: &str) -> Result<Caller, ApiError> {
    let user = spec["user"].as_str().unwrap_or_default().to_string();
    let groups: Vec<String> = spec["groups"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if user.is_empty() && groups.is_empty() {
        return Err(ApiError::invalid(
            kind,
            GROUP,
            "",
            "spec.user",
            "at least one of user or group must be specified",
        ));
    }
    Ok(Caller { user, groups })
}
