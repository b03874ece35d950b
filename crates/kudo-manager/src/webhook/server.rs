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
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use kudo_api::names::WEBHOOK_PATH;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::config::WebhookConfig;
use super::handler::Handler;
use super::limits::{Backoff, WarnLimiter};
use super::ov_source::OperatorVersionSource;
use super::review::Reviewer;
use super::{WebhookError, tls};
use crate::admin::Readiness;

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
            .with_render_limits(config.render_limits)
            .with_acting_as(config.acting_as.clone()),
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
    // No hyper timer: slow and idle connections are closed by `until_idle`.
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
        let http = http.clone();
        let watcher = graceful.watcher();
        let (handshake_timeout, idle_period) = (config.handshake_timeout, config.idle_period);
        tokio::spawn(async move {
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
            let started = Arc::new(AtomicU64::new(0));
            let counted = started.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                counted.fetch_add(1, Ordering::Relaxed);
                let handler = handler.clone();
                async move { Ok::<_, Infallible>(handler.respond(request).await) }
            });
            let connection = watcher.watch(http.serve_connection(TokioIo::new(tls), service));
            match until_idle(connection, &started, idle_period).await {
                Some(Err(err)) => {
                    tracing::debug!(%peer, error = %err, "webhook connection ended with an error");
                }
                None => tracing::debug!(%peer, "closing an idle webhook connection"),
                Some(Ok(())) => {}
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

/// Runs `connection` until it ends, or until a whole `idle_period` passes in
/// which no request head arrived (`started` counts them): this closes
/// connections that never finish a request head (slowloris) and idle
/// keep-alive ones, on HTTP/1.1 and HTTP/2 alike, after one to two periods.
/// Dropping the connection closes its socket. hyper's own header timeout
/// would not do: it covers neither HTTP/2 nor the read of the first bytes
/// that tells the two protocols apart.
async fn until_idle<F: Future>(
    connection: F,
    started: &AtomicU64,
    idle_period: Duration,
) -> Option<F::Output> {
    let mut connection = std::pin::pin!(connection);
    let mut seen = 0;
    loop {
        match tokio::time::timeout(idle_period, connection.as_mut()).await {
            Ok(output) => return Some(output),
            Err(_) => {
                let now = started.load(Ordering::Relaxed);
                if now == seen {
                    return None;
                }
                seen = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_secs(120);

    /// A connection that never ends by itself, served under `until_idle`
    /// on a task that has armed its timer; `started` is its request count.
    async fn serve_forever() -> (tokio::task::JoinHandle<Option<()>>, Arc<AtomicU64>) {
        let started = Arc::new(AtomicU64::new(0));
        let counted = started.clone();
        let task = tokio::spawn(async move {
            until_idle(std::future::pending::<()>(), &counted, PERIOD).await
        });
        settle().await;
        (task, started)
    }

    /// Lets the spawned task run.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    /// Moves the paused clock and lets the task see it.
    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        settle().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_starts_a_request_is_closed_after_one_period() {
        let (task, _started) = serve_forever().await;
        advance(PERIOD - Duration::from_secs(1)).await;
        assert!(!task.is_finished());
        advance(Duration::from_secs(2)).await;
        assert!(task.is_finished());
        assert_eq!(task.await.unwrap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_with_a_request_every_period_stays_open_until_it_goes_idle() {
        let (task, started) = serve_forever().await;
        for _ in 0..5 {
            started.fetch_add(1, Ordering::Relaxed);
            advance(PERIOD).await;
            assert!(!task.is_finished());
        }
        // No request since the last check: the next one closes it.
        advance(PERIOD).await;
        assert!(task.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_ends_is_done_at_once() {
        let started = AtomicU64::new(0);
        let output = until_idle(async { 7 }, &started, PERIOD).await;
        assert_eq!(output, Some(7));
    }
}
