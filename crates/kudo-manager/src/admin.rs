//! The admin HTTP server on its own port: `/healthz`, `/readyz` (ready once
//! the caches have synced) and `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use warp::Filter;
use warp::http::StatusCode;

use crate::metrics::Metrics;

/// What `/readyz` reports: the parts of the manager that must be up before
/// the Service sends it admission reviews and the Deployment counts it.
///
/// A replica that does not lead is ready as soon as its webhook serves (it
/// answers reviews; the leader runs plans). The leader is ready once its
/// controller caches have synced. Each part is written by the task that
/// owns it, so nothing has to wait on another task's future.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<Parts>);

#[derive(Debug, Default)]
struct Parts {
    /// Where the admin server listens, once bound.
    admin_addr: std::sync::OnceLock<SocketAddr>,
    /// Whether this process serves the admission webhook at all.
    webhook_expected: AtomicBool,
    webhook_serving: AtomicBool,
    controller: AtomicU8,
    stopping: AtomicBool,
}

/// Where the controller of this process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ControllerState {
    /// Not running here (another replica leads, or no election yet).
    Standby = 0,
    /// Running, caches still listing.
    Syncing = 1,
    /// Running with synced caches.
    Synced = 2,
}

impl Readiness {
    /// Readiness of a process that serves the webhook (`true`) or not.
    pub fn new(webhook_expected: bool) -> Self {
        let r = Self::default();
        r.0.webhook_expected
            .store(webhook_expected, Ordering::SeqCst);
        r
    }

    /// The webhook listens with its certificate loaded (or stopped).
    pub fn set_webhook_serving(&self, serving: bool) {
        self.0.webhook_serving.store(serving, Ordering::SeqCst);
    }

    /// The controller's state.
    pub fn set_controller(&self, state: ControllerState) {
        self.0.controller.store(state as u8, Ordering::SeqCst);
    }

    /// The admin server listens at `addr`.
    pub fn set_admin_addr(&self, addr: SocketAddr) {
        let _ = self.0.admin_addr.set(addr);
    }

    /// Where the admin server listens, once bound.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.0.admin_addr.get().copied()
    }

    /// Whether everything of this process serves: the admin server, the
    /// webhook (when expected) and a controller with synced caches. What
    /// `kudo-manager dev` waits for before it says it is ready.
    pub fn all_serving(&self) -> bool {
        let p = &self.0;
        self.admin_addr().is_some()
            && !p.stopping.load(Ordering::SeqCst)
            && (!p.webhook_expected.load(Ordering::SeqCst)
                || p.webhook_serving.load(Ordering::SeqCst))
            && p.controller.load(Ordering::SeqCst) == ControllerState::Synced as u8
    }

    /// The process is shutting down: take it out of the Service at once.
    pub fn set_stopping(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
    }

    /// `Ok` when ready, otherwise what is still missing.
    pub fn check(&self) -> Result<(), &'static str> {
        let p = &self.0;
        if p.stopping.load(Ordering::SeqCst) {
            return Err("shutting down");
        }
        if p.webhook_expected.load(Ordering::SeqCst) && !p.webhook_serving.load(Ordering::SeqCst) {
            return Err("admission webhook not serving yet");
        }
        if p.controller.load(Ordering::SeqCst) == ControllerState::Syncing as u8 {
            return Err("controller caches not synced yet");
        }
        Ok(())
    }

    /// Whether ready.
    pub fn get(&self) -> bool {
        self.check().is_ok()
    }
}

/// The warp routes of the admin server.
pub fn routes(
    metrics: Metrics,
    ready: Readiness,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    let healthz = warp::path("healthz").and(warp::path::end()).map(|| "ok");
    let readyz = warp::path("readyz")
        .and(warp::path::end())
        .map(move || match ready.check() {
            Ok(()) => warp::reply::with_status("ready", StatusCode::OK),
            Err(why) => warp::reply::with_status(why, StatusCode::SERVICE_UNAVAILABLE),
        });
    let metrics = warp::path("metrics").and(warp::path::end()).map(move || {
        warp::reply::with_header(
            metrics.render(),
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )
    });
    warp::get().and(healthz.or(readyz).or(metrics))
}

/// Bind the admin server; returns the bound address and the serving future,
/// which stops when `shutdown` resolves.
pub async fn bind(
    addr: SocketAddr,
    metrics: Metrics,
    ready: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> crate::Result<(SocketAddr, impl Future<Output = ()>)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| crate::Error::Io {
            context: if source.kind() == std::io::ErrorKind::AddrInUse {
                format!(
                    "binding the admin server to {addr} (another process listens there; \
                     pick another address with --admin-addr, port 0 for any free one)"
                )
            } else {
                format!("binding the admin server to {addr}")
            },
            source,
        })?;
    let local = listener.local_addr().map_err(|source| crate::Error::Io {
        context: "reading the admin server address".into(),
        source,
    })?;
    let server = warp::serve(routes(metrics, ready))
        .incoming(listener)
        .graceful(shutdown)
        .run();
    Ok((local, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn readyz<F>(api: &F) -> (StatusCode, String)
    where
        F: Filter + 'static,
        F::Extract: warp::Reply + Send,
    {
        let res = warp::test::request().path("/readyz").reply(api).await;
        (
            res.status(),
            String::from_utf8_lossy(res.body()).into_owned(),
        )
    }

    #[tokio::test]
    async fn leader_is_ready_once_webhook_serves_and_caches_synced() {
        let ready = Readiness::new(true);
        let api = routes(Metrics::new(), ready.clone());
        ready.set_controller(ControllerState::Syncing);
        assert_eq!(
            readyz(&api).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "admission webhook not serving yet".into()
            )
        );
        ready.set_webhook_serving(true);
        assert_eq!(
            readyz(&api).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "controller caches not synced yet".into()
            )
        );
        ready.set_controller(ControllerState::Synced);
        assert_eq!(readyz(&api).await.0, StatusCode::OK);
        ready.set_stopping();
        assert_eq!(
            readyz(&api).await,
            (StatusCode::SERVICE_UNAVAILABLE, "shutting down".into())
        );
    }

    #[tokio::test]
    async fn standby_replica_is_ready_while_its_webhook_serves() {
        let ready = Readiness::new(true);
        let api = routes(Metrics::new(), ready.clone());
        ready.set_webhook_serving(true);
        assert_eq!(readyz(&api).await.0, StatusCode::OK);
        ready.set_webhook_serving(false);
        assert_eq!(readyz(&api).await.0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn without_a_webhook_only_the_controller_counts() {
        let ready = Readiness::new(false);
        let api = routes(Metrics::new(), ready.clone());
        assert_eq!(readyz(&api).await.0, StatusCode::OK);
        ready.set_controller(ControllerState::Syncing);
        assert_eq!(readyz(&api).await.0, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn metrics_endpoint_serves_openmetrics() {
        let m = Metrics::new();
        m.reconciles.inc();
        let api = routes(m, Readiness::new(false));
        let res = warp::test::request().path("/metrics").reply(&api).await;
        assert_eq!(res.status(), StatusCode::OK);
        let body = String::from_utf8_lossy(res.body()).to_string();
        assert!(body.contains("kudo_manager_reconciles_total 1"), "{body}");
        let res = warp::test::request().path("/healthz").reply(&api).await;
        assert_eq!(res.body().as_ref(), b"ok");
    }
}
