//! Resource verbs: get, list, create, update, patch, delete, deletecollection
//! and the status and scale subresources. Watch lives in `watch`.

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Response};
use serde_json::{Value, json};

use crate::admission;
use crate::authz::{self, Attributes, Caller};
use crate::faults::Verb;
use crate::http::{Body, ObjectPath, Query, json_response};
use crate::managed_fields::{Shown, ShownList};
use crate::owners::{Owners, update_manager};
use crate::patch::PatchKind;
use crate::registry::ResourceInfo;
use crate::scale::scale;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Inner;
use crate::state::{CommitError, DeleteOptions, Planned, Propagation, State, parse_body};
use crate::status::{ApiError, Subject};
use crate::table::{table, wants_table};
use crate::watch;

/// Everything a resource handler needs from the request.
#[derive(Debug)]
pub struct RequestCtx {
    /// What the request does, as RBAC and fault rules name it.
    pub verb: Verb,
    /// The impersonated caller, if the request impersonates anyone.
    pub caller: Option<Caller>,
    /// HTTP method.
    pub method: Method,
    /// Parsed path.
    pub path: ObjectPath,
    /// Query parameters.
    pub query: Query,
    /// Accept header.
    pub accept: String,
    /// Content-Type header.
    pub content_type: String,
    /// Request body.
    pub body: Bytes,
    /// User-Agent header.
    pub user_agent: Option<String>,
}

impl RequestCtx {
    /// The field manager of a write other than apply.
    pub fn update_manager(&self) -> String {
        update_manager(
            self.query.non_empty("fieldManager"),
            self.user_agent.as_deref(),
        )
    }
}

/// An object as the client asked for it, with its managedFields.
pub fn shown<'a>(
    obj: &'a Value,
    owners: &'a Owners,
    res: &'a ResourceInfo,
    api_version: &'a str,
) -> Shown<'a> {
    Shown {
        obj,
        api_version,
        kind: &res.kind,
        owners,
    }
}

/// Label and field selectors of a list or watch.
pub fn selectors(q: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    Ok((
        LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?,
        FieldSelector::parse(q.get("fieldSelector").unwrap_or_default())?,
    ))
}

/// Dispatches a resource request.
pub async fn handle(inner: &Arc<Inner>, ctx: RequestCtx) -> Result<Response<Body>, ApiError> {
    let p = &ctx.path;
    if p.group == crate::access_review::GROUP {
        return crate::access_review::answer(inner, &ctx);
    }
    let res = inner
        .lock()
        .registry
        .find(&p.group, &p.version, &p.plural)
        .cloned()
        .ok_or_else(|| ApiError::no_route(&format!("{}/{}/{}", p.group, p.version, p.plural)))?;
    if !res.namespaced && p.namespace.is_some() {
        return Err(ApiError::no_route(&format!(
            "{} is not namespaced",
            res.plural
        )));
    }
    if let Some(caller) = &ctx.caller {
        authorize(inner, caller, &res, &ctx)?;
    }
    let status_only = match p.subresource.as_deref() {
        None => false,
        Some("status") if res.status => true,
        Some("scale") if res.scale => return scale(inner, &res, &ctx).await,
        Some("eviction") if res.group.is_empty() && res.plural == "pods" && p.name.is_some() => {
            return crate::eviction::evict(inner, &res, &ctx).await;
        }
        Some("finalize") if res.plural == "namespaces" => false,
        Some(other) => return Err(ApiError::no_route(&format!("{}/{other}", res.plural))),
    };
    let ns = p.namespace.clone().unwrap_or_default();
    let version = p.version.clone();
    let q = &ctx.query;
    let dry_run = q.get("dryRun") == Some("All");
    let table_mode = wants_table(&ctx.accept);
    let api_version = res.api_version(&version);
    match (&ctx.method, p.name.as_deref()) {
        (&Method::GET, None) if q.flag("watch") => watch::serve(
            inner.clone(),
            res,
            version,
            p.namespace.clone(),
            q,
            table_mode,
        ),
        (&Method::GET, None) => list(inner, &res, &version, p.namespace.as_deref(), q, table_mode),
        (&Method::GET, Some(name)) => {
            let st = inner.lock();
            let (obj, owners) = st
                .store
                .get(&res.group, &res.plural, &ns, name)
                .map(|s| (s.value.clone(), s.owners.clone()))
                .ok_or_else(|| {
                    ApiError::not_found(Subject {
                        group: &res.group,
                        plural: &res.plural,
                        name,
                    })
                })?;
            drop(st);
            if table_mode {
                let rv = obj["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                return Ok(json_response(
                    200,
                    &table(&res, [obj.as_ref()].into_iter(), &rv, true),
                ));
            }
            Ok(json_response(
                200,
                &shown(&obj, &owners, &res, &api_version),
            ))
        }
        (&Method::POST, None) => {
            let body = request_body(&ctx)?;
            let manager = ctx.update_manager();
            let (out, owners) = write(inner, ctx.caller.as_ref(), dry_run, |st| {
                st.plan_create(&res, &version, &ns, body.clone(), &manager)
            })
            .await?;
            Ok(json_response(
                201,
                &shown(&out, &owners, &res, &api_version),
            ))
        }
        (&Method::PUT, Some(name)) => {
            let body = request_body(&ctx)?;
            let manager = ctx.update_manager();
            let (out, owners) = write(inner, ctx.caller.as_ref(), dry_run, |st| {
                st.plan_replace(
                    &res,
                    &version,
                    &ns,
                    name,
                    status_only,
                    body.clone(),
                    &manager,
                )
            })
            .await?;
            Ok(json_response(
                200,
                &shown(&out, &owners, &res, &api_version),
            ))
        }
        (&Method::PATCH, Some(name)) => {
            let kind = PatchKind::from_content_type(&ctx.content_type)?;
            // Apply must name its manager; other patches fall back to the User-Agent.
            let manager = match kind {
                PatchKind::Apply => q.non_empty("fieldManager").map(str::to_string),
                _ => Some(ctx.update_manager()),
            };
            let force = q.flag("force");
            let existed = inner
                .lock()
                .store
                .get(&res.group, &res.plural, &ns, name)
                .is_some();
            let (out, owners) = write(inner, ctx.caller.as_ref(), dry_run, |st| {
                st.plan_patch(
                    &res,
                    &version,
                    &ns,
                    name,
                    status_only,
                    kind,
                    &ctx.body,
                    manager.as_deref(),
                    force,
                )
            })
            .await?;
            let code = if existed || kind != PatchKind::Apply {
                200
            } else {
                201
            };
            Ok(json_response(
                code,
                &shown(&out, &owners, &res, &api_version),
            ))
        }
        (&Method::DELETE, Some(name)) => {
            let opts = delete_options(q, &ctx.body)?;
            let (out, owners) = write(inner, ctx.caller.as_ref(), dry_run, |st| {
                st.plan_delete(&res, &version, &ns, name, &opts)
            })
            .await?;
            Ok(json_response(
                200,
                &shown(&out, &owners, &res, &api_version),
            ))
        }
        (&Method::DELETE, None) => {
            let opts = delete_options(q, &ctx.body)?;
            let (labels, fields) = selectors(q)?;
            let names: Vec<(String, String)> = inner
                .lock()
                .store
                .list(&res.group, &res.plural, p.namespace.as_deref())
                .filter(|s| labels.matches(&s.value) && fields.matches(&s.value))
                .map(|s| crate::store::ns_name(&s.value))
                .collect();
            let mut deleted = Vec::new();
            for (obj_ns, name) in names {
                match write(inner, ctx.caller.as_ref(), dry_run, |st| {
                    st.plan_delete(&res, &version, &obj_ns, &name, &opts)
                })
                .await
                {
                    Ok(v) => deleted.push(v),
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            let rv = inner.lock().store.resource_version().to_string();
            Ok(json_response(
                200,
                &ShownList {
                    api_version: &api_version,
                    kind: format!("{}List", res.kind),
                    metadata: json!({"resourceVersion": rv}),
                    items: deleted
                        .iter()
                        .map(|(v, o)| shown(v, o, &res, &api_version))
                        .collect(),
                },
            ))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {})",
            ctx.method, res.plural
        ))),
    }
}

/// RBAC for an impersonated caller: the verb itself, `create` too when an
/// apply would create the object, and the escalation check on RBAC writes.
fn authorize(
    inner: &Arc<Inner>,
    caller: &Caller,
    res: &ResourceInfo,
    ctx: &RequestCtx,
) -> Result<(), ApiError> {
    let p = &ctx.path;
    let namespace = p.namespace.as_deref().unwrap_or_default();
    let mut attrs = Attributes {
        verb: ctx.verb.rbac(),
        group: &res.group,
        resource: &res.plural,
        subresource: p.subresource.as_deref(),
        namespace,
        name: p.name.as_deref(),
    };
    let st = inner.lock();
    authz::authorize(&st, caller, &attrs)?;
    let creates = match ctx.verb {
        Verb::Create => true,
        Verb::Patch => {
            PatchKind::from_content_type(&ctx.content_type).ok() == Some(PatchKind::Apply)
                && p.name.as_deref().is_some_and(|name| {
                    st.store
                        .get(&res.group, &res.plural, namespace, name)
                        .is_none()
                })
        }
        _ => false,
    };
    if creates && ctx.verb != Verb::Create {
        attrs.verb = "create";
        authz::authorize(&st, caller, &attrs)?;
    }
    let writes = matches!(ctx.verb, Verb::Create | Verb::Update | Verb::Patch);
    if writes && p.subresource.is_none() && res.group == "rbac.authorization.k8s.io" {
        let object = parse_body(&ctx.body)?;
        authz::check_escalation(&st, caller, &res.plural, namespace, &object)?;
    }
    Ok(())
}

/// Plans, admits and commits a write, planning again if the object changed
/// in between. Returns the object and its field ownership.
pub async fn write(
    inner: &Arc<Inner>,
    caller: Option<&Caller>,
    dry_run: bool,
    plan: impl Fn(&State) -> Result<Planned, ApiError>,
) -> Result<(Value, Owners), ApiError> {
    for _ in 0..10 {
        let (planned, hooks) = {
            let st = inner.lock();
            let planned = plan(&st)?;
            let hooks = admission::matching_hooks(&st, &planned, caller);
            (planned, hooks)
        };
        if !hooks.is_empty() {
            admission::review(&planned, caller, &hooks, dry_run).await?;
        }
        let committed = inner.lock().commit_owned(planned, dry_run);
        match committed {
            Ok(v) => {
                if !dry_run {
                    inner.dirty.notify_one();
                }
                return Ok(v);
            }
            Err(CommitError::Stale) => continue,
            Err(CommitError::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        Subject {
            group: "",
            plural: "objects",
            name: "",
        },
        "the object kept changing while the request was processed; please retry",
    ))
}

/// The body of a POST or PUT: JSON, YAML, or protobuf for the kinds kubectl's
/// generators send that way.
pub(crate) fn request_body(ctx: &RequestCtx) -> Result<Value, ApiError> {
    if ctx.content_type.starts_with(crate::protobuf::CONTENT_TYPE) {
        return crate::protobuf::decode(&ctx.body);
    }
    parse_body(&ctx.body)
}

fn delete_options(q: &Query, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_body(body)?
    };
    delete_options_value(q, &body)
}

/// DeleteOptions from the query and a parsed body (also an Eviction's `deleteOptions`).
pub(crate) fn delete_options_value(q: &Query, body: &Value) -> Result<DeleteOptions, ApiError> {
    let policy = q
        .non_empty("propagationPolicy")
        .map(str::to_string)
        .or_else(|| body["propagationPolicy"].as_str().map(str::to_string));
    let mut propagation = match policy {
        Some(p) => Propagation::parse(&p)?,
        None => Propagation::Background,
    };
    if q.get("orphanDependents") == Some("true") || body["orphanDependents"] == json!(true) {
        propagation = Propagation::Orphan;
    }
    Ok(DeleteOptions {
        propagation,
        uid: body["preconditions"]["uid"].as_str().map(str::to_string),
        grace_period: q
            .non_empty("gracePeriodSeconds")
            .and_then(|g| g.parse().ok())
            .or_else(|| body["gracePeriodSeconds"].as_i64()),
        resource_version: body["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string),
    })
}

fn encode_continue(ns: &str, name: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ns}/{name}"))
}

fn decode_continue(token: &str) -> Result<(String, String), ApiError> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            ApiError::bad_request("invalid continue token; start the list again without it")
        })?;
    let (ns, name) = raw.split_once('/').unwrap_or(("", raw.as_str()));
    Ok((ns.to_string(), name.to_string()))
}

fn list(
    inner: &Arc<Inner>,
    res: &ResourceInfo,
    version: &str,
    ns: Option<&str>,
    q: &Query,
    table_mode: bool,
) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(q)?;
    let after = q.non_empty("continue").map(decode_continue).transpose()?;
    let limit = q
        .non_empty("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let st = inner.lock();
    let rv = st.store.resource_version().to_string();
    let mut matching = st
        .store
        .list_named(&res.group, &res.plural, ns, fields.pinned_name())
        .filter(|s| labels.matches(&s.value) && fields.matches(&s.value))
        .filter(|s| {
            after
                .as_ref()
                .is_none_or(|a| crate::store::ns_name(&s.value) > *a)
        })
        .map(|s| (s.value.clone(), s.owners.clone()))
        .collect::<Vec<_>>();
    drop(st);
    let mut meta = json!({"resourceVersion": rv});
    if let Some(limit) = limit
        && matching.len() > limit
    {
        let remaining = matching.len() - limit;
        matching.truncate(limit);
        if let Some((last, _)) = matching.last() {
            let (lns, lname) = crate::store::ns_name(last);
            meta["continue"] = json!(encode_continue(&lns, &lname));
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if table_mode {
        let mut t = table(res, matching.iter().map(|(v, _)| v.as_ref()), &rv, true);
        t["metadata"] = meta;
        return Ok(json_response(200, &t));
    }
    let api_version = res.api_version(version);
    Ok(json_response(
        200,
        &ShownList {
            api_version: &api_version,
            kind: format!("{}List", res.kind),
            metadata: meta,
            items: matching
                .iter()
                .map(|(v, o)| shown(v, o, res, &api_version))
                .collect(),
        },
    ))
}
