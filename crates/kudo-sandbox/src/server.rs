//! The HTTP server: accept loop, shared state and request dispatch.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http::{Method, Request, Response, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::discovery;
use crate::faults::{FaultCounter, Faults, Verb, roll};
use crate::handlers;
use crate::http::{Body, Query, Route, error_response, json_response, route};
use crate::openapi;
use crate::request_log::{ObjectIdentity, RequestLog, RequestRecord, body_name};
use crate::state::State;
use crate::status::ApiError;

/// Options fixed at start.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Delay before simulated workloads report readiness.
    pub ready_delay: Duration,
    /// Interval of BOOKMARK events on watches that ask for them.
    pub bookmark_interval: Duration,
}

/// State shared by the server tasks and the [`crate::Sandbox`] handle.
pub struct Inner {
    state: Mutex<State>,
    /// Latest resourceVersion, readable without the lock.
    pub rv: Arc<AtomicU64>,
    faults: Mutex<Faults>,
    /// Start options.
    pub settings: Settings,
    /// Address the server listens on.
    pub addr: SocketAddr,
    /// Signalled after every committed write (persistence).
    pub dirty: Notify,
    /// Becomes true when the sandbox stops.
    pub shutdown: watch::Receiver<bool>,
    /// Files the fake `pods/exec` answers from.
    pub exec_files: crate::exec::PodFiles,
    /// The opt-in request log.
    pub requests: RequestLog,
    /// What fault injection did.
    pub injected: FaultCounter,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Wraps a state.
    pub fn new(
        state: State,
        faults: Faults,
        settings: Settings,
        addr: SocketAddr,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        let rv = state.store.rv_counter();
        Self {
            state: Mutex::new(state),
            rv,
            faults: Mutex::new(faults),
            settings,
            addr,
            dirty: Notify::new(),
            shutdown,
            exec_files: crate::exec::PodFiles::default(),
            requests: RequestLog::default(),
            injected: FaultCounter::default(),
        }
    }

    /// Locks the state. A panic while holding the lock cannot leave the
    /// store half-written (writes are single inserts), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The active faults.
    pub fn faults(&self) -> Faults {
        self.faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the active faults.
    pub fn set_faults(&self, faults: Faults) {
        *self.faults.lock().unwrap_or_else(|p| p.into_inner()) = faults;
    }
}

/// Accepts connections until shutdown.
pub async fn serve(listener: TcpListener, inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown.clone();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => break,
        };
        let (stream, _) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Without this, small request/response pairs wait for delayed ACKs.
        let _ = stream.set_nodelay(true);
        let inner = inner.clone();
        let mut conn_shutdown = inner.shutdown.clone();
        tokio::spawn(async move {
            let svc_inner = inner.clone();
            let svc = service_fn(move |req| {
                let inner = svc_inner.clone();
                async move { Ok::<_, Infallible>(handle(inner, req).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
            tokio::select! {
                r = conn => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                _ = conn_shutdown.changed() => {}
            }
        });
    }
}

fn verb_of(method: &Method, has_name: bool, watch: bool) -> Verb {
    match (method.as_str(), has_name) {
        ("GET", _) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) => Verb::List,
        ("POST", _) => Verb::Create,
        ("PUT", _) => Verb::Update,
        ("PATCH", _) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        _ => Verb::DeleteCollection,
    }
}

/// What [`dispatch`] learnt that the request log needs.
#[derive(Default)]
struct Seen {
    injected: bool,
    body_name: Option<String>,
}

async fn handle(inner: Arc<Inner>, req: Request<Incoming>) -> Response<Body> {
    if !inner.requests.enabled() {
        return dispatch(inner, req, &mut Seen::default()).await;
    }
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = Query::parse(req.uri().query());
    let impersonated_user = req
        .headers()
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut seen = Seen::default();
    let resp = dispatch(inner.clone(), req, &mut seen).await;
    let object = match route(&path) {
        Some(Route::Object(p)) => Some(p),
        _ => None,
    };
    inner.requests.push(RequestRecord {
        seq: 0,
        verb: object
            .as_ref()
            .map(|p| verb_of(&method, p.name.is_some(), query.flag("watch"))),
        object: object.map(|p| ObjectIdentity {
            name: p.name.or(seen.body_name),
            group: p.group,
            version: p.version,
            resource: p.plural,
            namespace: p.namespace,
            subresource: p.subresource,
        }),
        method: method.to_string(),
        path,
        field_manager: query.non_empty("fieldManager").map(str::to_string),
        dry_run: query.non_empty("dryRun").is_some(),
        impersonated_user,
        code: resp.status().as_u16(),
        injected: seen.injected,
    });
    resp
}

async fn dispatch(inner: Arc<Inner>, req: Request<Incoming>, seen: &mut Seen) -> Response<Body> {
    let path = req.uri().path().to_string();
    let query = Query::parse(req.uri().query());
    let method = req.method().clone();
    tracing::debug!(%method, %path, query = ?req.uri().query(), "request");
    let Some(route) = route(&path) else {
        return error_response(&ApiError::no_route(&path));
    };
    if let Route::Object(p) = &route
        && crate::exec::is_exec(p)
    {
        let faults = inner.faults();
        if !faults.latency.is_zero() {
            tokio::time::sleep(faults.latency).await;
        }
        // A real API server authorizes exec as `create pods/exec`.
        if let Some(e) = faults.error_for(Verb::Create, roll()) {
            seen.injected = true;
            inner.injected.error(e.code);
            return error_response(&e);
        }
        // Over a WebSocket (a GET), Kubernetes 1.32 asks for `get` and
        // `create` on pods/exec of an impersonated caller.
        if let Some(caller) = crate::authz::Caller::from_headers(req.headers()) {
            for verb in ["get", "create"] {
                let attrs = crate::authz::Attributes {
                    verb,
                    group: "",
                    resource: "pods",
                    subresource: Some("exec"),
                    namespace: p.namespace.as_deref().unwrap_or_default(),
                    name: p.name.as_deref(),
                };
                if let Err(e) = crate::authz::authorize(&inner.lock(), &caller, &attrs) {
                    return error_response(&e);
                }
            }
        }
        return crate::exec::serve(inner, req, p).await;
    }
    let result = match route {
        Route::Version => Ok(json_response(200, &discovery::version())),
        Route::Health => Ok(Response::new(http_body_util::BodyExt::boxed(
            http_body_util::Full::new(bytes::Bytes::from_static(b"ok")),
        ))),
        Route::CoreVersions => Ok(json_response(
            200,
            &discovery::core_versions(&inner.addr.to_string()),
        )),
        Route::Groups => Ok(json_response(
            200,
            &discovery::groups(&inner.lock().registry),
        )),
        Route::Group(g) => discovery::group(&inner.lock().registry, &g)
            .map(|d| json_response(200, &d))
            .ok_or_else(|| ApiError::no_route(&path)),
        Route::Resources { group, version } => {
            discovery::resources(&inner.lock().registry, &group, &version)
                .map(|d| json_response(200, &d))
                .ok_or_else(|| ApiError::no_route(&path))
        }
        Route::OpenApi(rest) => openapi::serve(&inner, &rest),
        Route::Object(p) => {
            let faults = inner.faults();
            if !faults.latency.is_zero() {
                tokio::time::sleep(faults.latency).await;
            }
            let verb = verb_of(&method, p.name.is_some(), query.flag("watch"));
            match faults.error_for(verb, roll()) {
                Some(e) => {
                    seen.injected = true;
                    inner.injected.error(e.code);
                    Err(e)
                }
                None => {
                    let accept = req
                        .headers()
                        .get(header::ACCEPT)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let content_type = req
                        .headers()
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let user_agent = req
                        .headers()
                        .get(header::USER_AGENT)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let caller = crate::authz::Caller::from_headers(req.headers());
                    let body = crate::http::read_body(req.into_body()).await;
                    match body {
                        Ok(body) => {
                            if method == Method::POST && inner.requests.enabled() {
                                seen.body_name = body_name(&body);
                            }
                            let ctx = handlers::RequestCtx {
                                verb,
                                caller,
                                method,
                                path: p,
                                query,
                                accept,
                                content_type,
                                body,
                                user_agent,
                            };
                            let (result, warnings) =
                                crate::admission::with_warnings(handlers::handle(&inner, ctx))
                                    .await;
                            if warnings.is_empty() {
                                result
                            } else {
                                let mut resp = result.unwrap_or_else(|e| error_response(&e));
                                for text in warnings {
                                    let value = crate::admission::warning_header(&text);
                                    if let Ok(value) =
                                        header::HeaderValue::from_bytes(value.as_bytes())
                                    {
                                        resp.headers_mut().append(header::WARNING, value);
                                    }
                                }
                                Ok(resp)
                            }
                        }
                        Err(e) => Err(e),
                    }
                }
            }
        }
    };
    result.unwrap_or_else(|e| {
        if e.code >= 500 {
            tracing::warn!(%path, error = %e, "request failed");
        }
        error_response(&e)
    })
}
