//! The HTTPS server: a tokio-rustls accept loop serving the small hyper
//! service of `handler.rs` (two routes, hand-written: warp's filter chain
//! cost more per request than the routing is worth). There is no plaintext
//! listener.
//!
//! Connections are capped (`max_connections`): one accepted beyond the
//! cap is closed at once, before TLS, so a flood costs neither memory nor
//! file descriptors past the cap, and the connections already open (the
//! API server's) go on being served.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use kudo_api::names::WEBHOOK_PATH;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::handler::Handler;
use super::idle_watch::{IDLE_PERIOD, RequestCount, watch_idle};
use super::limits::{Backoff, WarnLimiter};
use super::ov_source::OperatorVersionSource;
use super::review::Reviewer;
use super::{WebhookError, tls};
use crate::admin::Readiness;
use crate::metrics::Metrics;

/// Largest request body accepted (the API server's own limit for an object
/// is about 1.5 MiB; an AdmissionReview carries two of them).
pub const MAX_BODY_BYTES: u64 = 3 * 1024 * 1024;

/// Connections served at once by default: the API server keeps a few per
/// replica; each idle TLS connection costs about 11 KB.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Reviews in flight at once by default: each may hold a body of up to
/// [`MAX_BODY_BYTES`], so bodies take at most 192 MiB.
pub const DEFAULT_MAX_REVIEWS: usize = 64;

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
    /// Connections open at once (TLS handshakes included); a connection
    /// accepted beyond it is closed at once.
    pub max_connections: usize,
    /// Reviews in flight at once; one more is answered 503 with
    /// `Retry-After`.
    pub max_reviews: usize,
    /// A TLS handshake that takes longer is abandoned (its connection
    /// closed).
    pub handshake_timeout: Duration,
    /// PEM CA certificate(s) of the clients served: when set, a client must
    /// present a certificate signed by one of them (the API server's, see
    /// the README); when `None`, any client is served.
    pub client_ca_path: Option<PathBuf>,
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
    /// request, connections closed after 2-4 minutes without a request,
    /// [`DEFAULT_MAX_CONNECTIONS`] connections and [`DEFAULT_MAX_REVIEWS`]
    /// reviews at once, 10 s per TLS handshake, no client certificates.
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
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_reviews: DEFAULT_MAX_REVIEWS,
            handshake_timeout: Duration::from_secs(10),
            client_ca_path: None,
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

    /// Serve at most `max` connections at once (at least one).
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Serve only clients with a certificate signed by the CA in `path`.
    #[must_use]
    pub fn with_client_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.client_ca_path = Some(path.into());
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
    let acceptor = TlsAcceptor::from(tls::server_config(
        &config.cert_path,
        &config.key_path,
        config.client_ca_path.as_deref(),
    )?);
    let handler = Arc::new(Handler {
        reviewer: Reviewer::new(source, config.read_timeout)
            .with_render_limits(config.render_limits),
        max_body_bytes: config.max_body_bytes,
        request_timeout: config.request_timeout,
        reviews: Semaphore::new(config.max_reviews.max(1)),
        metrics: config.metrics.clone(),
    });
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(
            %addr,
            path = WEBHOOK_PATH,
            max_connections = config.max_connections,
            client_certificates = config.client_ca_path.is_some(),
            "admission webhook listening (HTTPS)"
        );
    }
    let _serving = Serving::start(config.readiness.clone());

    // One permit per open connection, held by its task until it ends.
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut accept_failures = WarnLimiter::new(Duration::from_secs(1));
    let mut refusals = WarnLimiter::new(Duration::from_secs(1));
    let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
    // No hyper timer: slow or idle connections are closed by `watch_idle`.
    let http = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => {
                backoff.succeeded();
                pair
            }
            Err(err) => {
                // Out of file descriptors and the like: pause (the error
                // would repeat at once), keep serving.
                if let Some(left_out) = accept_failures.note(Instant::now()) {
                    tracing::warn!(error = %err, left_out, "accepting a webhook connection failed");
                }
                let pause = backoff.failed();
                tokio::select! {
                    () = tokio::time::sleep(pause) => continue,
                    () = &mut shutdown => break,
                }
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Dropping the socket closes it: no TLS, no task, no memory.
            drop(tcp);
            if let Some(left_out) = refusals.note(Instant::now()) {
                tracing::warn!(
                    %peer,
                    max_connections = config.max_connections,
                    left_out,
                    "webhook connection limit reached; closing new connections"
                );
            }
            continue;
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
        let handshake_timeout = config.handshake_timeout;
        let connection = tokio::spawn(async move {
            let _slot = slot;
            let tls = match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await {
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
