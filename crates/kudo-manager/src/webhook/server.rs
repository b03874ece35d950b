//! The HTTPS server: warp 0.4 routes served by a tokio-rustls accept loop
//! (warp 0.4 has no TLS of its own). There is no plaintext listener.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use kudo_api::names::WEBHOOK_PATH;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use warp::Filter;
use warp::http::{StatusCode, header};
use warp::reply::Response;

use super::ov_source::OperatorVersionSource;
use super::review::Reviewer;
use super::{WebhookError, tls};

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
}

impl WebhookConfig {
    /// Defaults: 3 MiB bodies, 3 s to read OperatorVersions, 4 s per request.
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
        }
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

/// As [`serve`], on a listener the caller bound (port 0 in tests; the
/// caller reads the port before registering the webhook).
pub async fn serve_listener<S: OperatorVersionSource>(
    listener: TcpListener,
    config: WebhookConfig,
    source: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), WebhookError> {
    let acceptor = TlsAcceptor::from(tls::server_config(&config.cert_path, &config.key_path)?);
    let reviewer = Arc::new(Reviewer::new(source, config.read_timeout));
    let service = warp::service(routes(
        reviewer,
        config.max_body_bytes,
        config.request_timeout,
    ));
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, path = WEBHOOK_PATH, "admission webhook listening (HTTPS)");
    }

    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
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
        let service = TowerToHyperService::new(service.clone());
        let http = http.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
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

/// `POST /validate-kudo-dev-v1beta1-instance` and `GET /healthz`.
fn routes<S: OperatorVersionSource>(
    reviewer: Arc<Reviewer<S>>,
    max_body_bytes: u64,
    request_timeout: Duration,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone + Send + Sync + 'static {
    let review = warp::path(WEBHOOK_PATH.trim_start_matches('/'))
        .and(warp::path::end())
        .and(warp::post())
        .and(warp::header::optional::<u64>(
            header::CONTENT_LENGTH.as_str(),
        ))
        .and(warp::body::stream())
        .and_then(move |length: Option<u64>, body| {
            let reviewer = reviewer.clone();
            async move {
                let handled = handle(&reviewer, length, body, max_body_bytes);
                let response = tokio::time::timeout(request_timeout, handled)
                    .await
                    .unwrap_or_else(|_| {
                        plain(StatusCode::SERVICE_UNAVAILABLE, "the review took too long")
                    });
                Ok::<_, Infallible>(response)
            }
        });
    let health = warp::path("healthz")
        .and(warp::path::end())
        .and(warp::get())
        .map(|| plain(StatusCode::OK, "ok"));
    review.or(health).unify()
}

async fn handle<S: OperatorVersionSource>(
    reviewer: &Reviewer<S>,
    length: Option<u64>,
    body: impl Stream<Item = Result<impl Buf, warp::Error>> + Unpin,
    max_body_bytes: u64,
) -> Response {
    if length.is_some_and(|length| length > max_body_bytes) {
        return too_large(max_body_bytes);
    }
    let body = match collect_limited(body, max_body_bytes).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => return too_large(max_body_bytes),
        Err(BodyError::Read(err)) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the body: {err}"),
            );
        }
    };
    let json = reviewer.review_to_json(&body).await;
    let mut response = Response::new(json.into());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

enum BodyError {
    TooLarge,
    Read(warp::Error),
}

/// Reads the body, giving up as soon as it exceeds the limit (a chunked
/// body has no Content-Length to check up front).
async fn collect_limited(
    mut body: impl Stream<Item = Result<impl Buf, warp::Error>> + Unpin,
    limit: u64,
) -> Result<Bytes, BodyError> {
    let mut collected = BytesMut::new();
    while let Some(chunk) = body.next().await {
        let mut chunk = chunk.map_err(BodyError::Read)?;
        if (collected.len() + chunk.remaining()) as u64 > limit {
            return Err(BodyError::TooLarge);
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            collected.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Ok(collected.freeze())
}

fn too_large(limit: u64) -> Response {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("AdmissionReview bodies are limited to {limit} bytes"),
    )
}

fn plain(status: StatusCode, text: &str) -> Response {
    let mut response = Response::new(text.to_string().into());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};
    use tower::ServiceExt;

    use super::*;
    use crate::webhook::ov_source::StaticOperatorVersions;

    async fn call(method: &str, path: &str, body: Vec<u8>) -> (StatusCode, Bytes) {
        let reviewer = Arc::new(Reviewer::new(
            StaticOperatorVersions::new(),
            Duration::from_secs(1),
        ));
        let service = warp::service(routes(reviewer, 1024, Duration::from_secs(1)));
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = service.oneshot(request).await.unwrap();
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
}
