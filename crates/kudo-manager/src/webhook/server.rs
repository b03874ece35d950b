//! The HTTPS server: a tokio-rustls accept loop serving a small hyper
//! service (two routes, hand-written: warp's filter chain cost more per
//! request than the routing is worth). There is no plaintext listener.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use kudo_api::names::WEBHOOK_PATH;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::answer::ReviewVerdict;
use super::idle_watch::{IDLE_PERIOD, RequestCount, watch_idle};
use super::lazy_timeout::lazy_timeout;
use super::ov_source::OperatorVersionSource;
use super::review::Reviewer;
use super::{WebhookError, tls};
use crate::admin::Readiness;
use crate::metrics::Metrics;

/// Largest request body accepted (the API server's own limit for an object
/// is about 1.5 MiB; an AdmissionReview carries two of them).
pub const MAX_BODY_BYTES: u64 = 3 * 1024 * 1024;

/// How the webhook server runs.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Address to listen on, e.g. `0.0.0.0:9443` in a Pod, `127.0.0.1:P` locally.
    pub addr: SocketAddr,
    /// PEM certificate chain (`tls.crt` of the mounted Secret).
    pub cert_path: PathBuf,
    /// PEM private key (`tls.key`).
    pub key_path: PathBuf,
    /// Bodies larger than this are refused with 413.
    pub max_body_bytes: u64,
    /// Budget for reading OperatorVersions in one review.
    pub read_timeout: Duration,
    /// Budget for one whole request; well under the API server's wait
    /// (`timeoutSeconds: 5`, at most 10 s).
    pub request_timeout: Duration,
    /// How long open connections may finish after shutdown is requested.
    pub shutdown_grace: Duration,
    /// A connection that starts no request (completes no request head) for
    /// this long is closed, and at the latest after twice this long. Idle
    /// keep-alive time counts: keep it above the API server's 90 s.
    pub idle_period: Duration,
    /// Where reviews are counted and timed (the manager's `/metrics`).
    pub metrics: Option<Metrics>,
    /// Told when the server serves (certificate loaded, listening) and stops.
    pub readiness: Option<Readiness>,
    /// Budgets of the renders that check new parameter values (the
    /// manager's own).
    pub render_limits: kudo_package::render::RenderLimits,
}

/// Who watches the webhook server: metrics and `/readyz`.
#[derive(Clone, Default)]
pub struct Observers {
    /// Where reviews are counted and timed.
    pub metrics: Option<Metrics>,
    /// Told when the server serves and stops.
    pub readiness: Option<Readiness>,
}

impl WebhookConfig {
    /// Defaults: 3 MiB bodies, 3 s to read OperatorVersions, 4 s per
    /// request, connections closed after 2-4 minutes without a request.
    pub fn new(
        addr: SocketAddr,
        cert_path: impl Into<PathBuf>,
        key_path: impl Into<PathBuf>,
    ) -> Self {
        Self {
            addr,
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            max_body_bytes: MAX_BODY_BYTES,
            read_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(4),
            shutdown_grace: Duration::from_secs(5),
            idle_period: IDLE_PERIOD,
            metrics: None,
            readiness: None,
            render_limits: kudo_package::render::RenderLimits::default(),
        }
    }

    /// Check new parameter values within these render budgets.
    #[must_use]
    pub fn with_render_limits(mut self, limits: kudo_package::render::RenderLimits) -> Self {
        self.render_limits = limits;
        self
    }

    /// Count and time reviews in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Tell `readiness` when the server serves and when it stops.
    #[must_use]
    pub fn with_readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = Some(readiness);
        self
    }

    /// `tls.crt` and `tls.key` in `dir` (the layout of a mounted
    /// `kubernetes.io/tls` Secret).
    pub fn from_cert_dir(addr: SocketAddr, dir: &Path) -> Self {
        Self::new(addr, dir.join("tls.crt"), dir.join("tls.key"))
    }
}

/// Binds `config.addr` and serves until `shutdown` completes, then lets open
/// connections finish (up to `shutdown_grace`).
pub async fn serve<S: OperatorVersionSource>(
    config: WebhookConfig,
    source: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), WebhookError> {
    let listener = TcpListener::bind(config.addr)
        .await
        .map_err(|source| WebhookError::Bind {
            addr: config.addr,
            source,
        })?;
    serve_listener(listener, config, source, shutdown).await
}

/// Marks the webhook serving in `/readyz` for as long as it lives, so an
/// early return or a panic in the accept loop takes the replica out too.
struct Serving(Option<Readiness>);

impl Serving {
    fn start(readiness: Option<Readiness>) -> Self {
        if let Some(r) = &readiness {
            r.set_webhook_serving(true);
        }
        Self(readiness)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(r) = &self.0 {
            r.set_webhook_serving(false);
        }
    }
}

/// As [`serve`], on a listener the caller bound (port 0 in tests; the
/// caller reads the port before registering the webhook).
pub async fn serve_listener<S: OperatorVersionSource>(
    listener: TcpListener,
    config: WebhookConfig,
    source: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), WebhookError> {
    let acceptor = TlsAcceptor::from(tls::server_config(&config.cert_path, &config.key_path)?);
    let handler = Arc::new(Handler {
        reviewer: Reviewer::new(source, config.read_timeout)
            .with_render_limits(config.render_limits),
        max_body_bytes: config.max_body_bytes,
        request_timeout: config.request_timeout,
        metrics: config.metrics.clone(),
    });
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, path = WEBHOOK_PATH, "admission webhook listening (HTTPS)");
    }
    let _serving = Serving::start(config.readiness.clone());

    // No hyper timer: slow or idle connections are closed by `watch_idle`.
    let http = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %err, "accepting a webhook connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small request/response pairs: do not wait for Nagle.
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let handler = handler.clone();
        let requests = RequestCount::default();
        let counted = requests.clone();
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            counted.started();
            let handler = handler.clone();
            async move { Ok::<_, Infallible>(handler.respond(request).await) }
        });
        let http = http.clone();
        let watcher = graceful.watcher();
        let connection = tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(err)) => {
                        tracing::debug!(%peer, error = %err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
            let connection = http
                .serve_connection(TokioIo::new(tls), service)
                .into_owned();
            if let Err(err) = watcher.watch(connection).await {
                tracing::debug!(%peer, error = %err, "webhook connection ended with an error");
            }
        });
        watch_idle(connection, requests, config.idle_period);
    }
    drop(listener);
    tracing::info!("admission webhook stopping");
    if tokio::time::timeout(config.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("webhook connections still open after the shutdown grace period");
    }
    Ok(())
}

/// What the server does with each request: routing, limits and the review.
struct Handler<S> {
    reviewer: Reviewer<S>,
    max_body_bytes: u64,
    request_timeout: Duration,
    metrics: Option<Metrics>,
}

/// Where a request path leads. A trailing slash is accepted, as warp's
/// `path(..).and(path::end())` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Review,
    Health,
}

fn route(path: &str) -> Option<Route> {
    let path = path
        .strip_suffix('/')
        .filter(|p| !p.is_empty())
        .unwrap_or(path);
    if path == WEBHOOK_PATH {
        Some(Route::Review)
    } else if path == "/healthz" {
        Some(Route::Health)
    } else {
        None
    }
}

impl<S: OperatorVersionSource> Handler<S> {
    /// `POST /validate-kudo-dev-v1beta1-instance` and `GET /healthz`; 405
    /// for another method on either, 404 for any other path.
    async fn respond<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let method = request.method();
        match route(request.uri().path()) {
            None => status_only(StatusCode::NOT_FOUND),
            Some(Route::Review) if method == Method::POST => {
                let started = Instant::now();
                let (response, verdict) = match content_length(request.headers()) {
                    Err(()) => {
                        let response = plain(
                            StatusCode::BAD_REQUEST,
                            "Invalid request header \"content-length\"",
                        );
                        (response, ReviewVerdict::Invalid)
                    }
                    Ok(length) => {
                        let handled = self.review(length, request.into_body());
                        lazy_timeout(self.request_timeout, handled)
                            .await
                            .unwrap_or_else(|_| {
                                let response = plain(
                                    StatusCode::SERVICE_UNAVAILABLE,
                                    "the review took too long",
                                );
                                (response, ReviewVerdict::Failed)
                            })
                    }
                };
                if let Some(metrics) = &self.metrics {
                    metrics.observe_review(verdict, started.elapsed());
                }
                response
            }
            Some(Route::Health) if method == Method::GET => plain(StatusCode::OK, "ok"),
            Some(_) => plain(StatusCode::METHOD_NOT_ALLOWED, "HTTP method not allowed"),
        }
    }

    async fn review<B>(
        &self,
        length: Option<u64>,
        body: B,
    ) -> (Response<Full<Bytes>>, ReviewVerdict)
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let limit = self.max_body_bytes;
        if length.is_some_and(|length| length > limit) {
            return (too_large(limit), ReviewVerdict::Invalid);
        }
        let body = match collect_limited(body, limit).await {
            Ok(body) => body,
            Err(BodyError::TooLarge) => return (too_large(limit), ReviewVerdict::Invalid),
            Err(BodyError::Read(err)) => {
                let response = plain(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the body: {err}"),
                );
                return (response, ReviewVerdict::Invalid);
            }
        };
        let (json, verdict) = self.reviewer.review_with_verdict(&body).await;
        let mut response = Response::new(Full::new(Bytes::from(json)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        (response, verdict)
    }
}

/// `Ok(None)` without the header, `Err` when it is not a number.
fn content_length(headers: &http::HeaderMap) -> Result<Option<u64>, ()> {
    match headers.get(header::CONTENT_LENGTH) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or(()),
    }
}

enum BodyError {
    TooLarge,
    Read(Box<dyn std::error::Error + Send + Sync>),
}

/// Reads the body, giving up as soon as it exceeds the limit (a chunked
/// body has no Content-Length to check up front). A body that arrives in
/// one frame (the usual case) comes back as it is, without a copy.
async fn collect_limited<B>(body: B, limit: u64) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(err) => Err(BodyError::Read(err)),
    }
}

fn too_large(limit: u64) -> Response<Full<Bytes>> {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("AdmissionReview bodies are limited to {limit} bytes"),
    )
}

fn status_only(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::copy_from_slice(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::ov_source::StaticOperatorVersions;

    fn test_handler(metrics: Option<Metrics>) -> Handler<StaticOperatorVersions> {
        Handler {
            reviewer: Reviewer::new(StaticOperatorVersions::new(), Duration::from_secs(1)),
            max_body_bytes: 1024,
            request_timeout: Duration::from_secs(1),
            metrics,
        }
    }

    async fn call(method: &str, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
        call_counted(method, path, body, None).await
    }

    async fn call_counted(
        method: &str,
        path: &str,
        body: Vec<u8>,
        metrics: Option<Metrics>,
    ) -> (StatusCode, Bytes) {
        let handler = test_handler(metrics);
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = handler.respond(request).await;
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    }

    #[tokio::test]
    async fn bodies_over_the_limit_get_413() {
        let (status, _) = call("POST", WEBHOOK_PATH, vec![b' '; 2048]).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn garbage_gets_an_admission_review_error_not_a_crash() {
        let (status, body) = call("POST", WEBHOOK_PATH, b"{not json".to_vec()).await;
        assert_eq!(status, StatusCode::OK);
        let review: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(review["response"]["allowed"], false);
        assert_eq!(review["response"]["status"]["code"], 400);
    }

    #[tokio::test]
    async fn reviews_are_counted_by_verdict_and_other_routes_are_not() {
        let metrics = Metrics::new();
        let counted =
            |body: Vec<u8>| call_counted("POST", WEBHOOK_PATH, body, Some(metrics.clone()));
        counted(b"{not json".to_vec()).await;
        counted(vec![b' '; 2048]).await;
        // A create whose OperatorVersion is not known: denied by the rules.
        let create = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "operation": "CREATE", "resource": {}, "userInfo": {},
                "kind": {"group": "kudo.dev", "version": "v1beta1", "kind": "Instance"},
                "object": {"metadata": {"name": "zk"},
                           "spec": {"operatorVersion": {"name": "zk-9"}}}}
        });
        counted(serde_json::to_vec(&create).unwrap()).await;
        call_counted("GET", "/healthz", vec![], Some(metrics.clone())).await;
        let handler = test_handler(Some(metrics.clone()));
        let bad_length = http::Request::builder()
            .method("POST")
            .uri(WEBHOOK_PATH)
            .header(header::CONTENT_LENGTH, "lots")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = handler.respond(bad_length).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let text = metrics.render();
        for expected in [
            "kudo_manager_webhook_reviews_total{verdict=\"invalid\"} 3",
            "kudo_manager_webhook_reviews_total{verdict=\"denied\"} 1",
            "kudo_manager_webhook_review_duration_seconds_count 4",
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }

    #[tokio::test]
    async fn other_paths_and_methods_are_not_served() {
        let (wrong_path, _) = call("POST", "/mutate", vec![]).await;
        assert_eq!(wrong_path, StatusCode::NOT_FOUND);
        let (wrong_method, _) = call("GET", WEBHOOK_PATH, vec![]).await;
        assert_eq!(wrong_method, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn health_endpoint_answers_ok() {
        let (status, body) = call("GET", "/healthz", vec![]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "ok");
    }

    #[tokio::test]
    async fn trailing_slash_is_the_same_route_and_post_on_health_is_405() {
        let (status, body) = call("GET", "/healthz/", vec![]).await;
        assert_eq!((status, body.as_ref()), (StatusCode::OK, b"ok".as_ref()));
        let (status, _) = call("POST", "/healthz", vec![]).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let (status, _) = call("GET", "/healthz//", vec![]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    fn chunks(parts: Vec<&'static [u8]>) -> impl Body<Data = Bytes, Error = Infallible> + Unpin {
        let frames = parts
            .into_iter()
            .map(|p| Ok(hyper::body::Frame::data(Bytes::from_static(p))));
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn a_body_in_several_frames_is_joined_in_order() {
        let body = collect_limited(chunks(vec![b"ab", b"", b"cd", b"e"]), 5).await;
        assert!(matches!(body, Ok(ref b) if b == "abcde"));
    }

    #[tokio::test]
    async fn a_streamed_body_over_the_limit_is_refused_while_reading() {
        let body = collect_limited(chunks(vec![b"abc", b"def"]), 5).await;
        assert!(matches!(body, Err(BodyError::TooLarge)));
    }
}
