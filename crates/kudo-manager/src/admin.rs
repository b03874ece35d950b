//! The admin HTTP server on its own port: `/healthz`, `/readyz` (ready once
//! the caches have synced) and `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use warp::Filter;
use warp::http::StatusCode;

use crate::metrics::Metrics;

/// Readiness flag shared between the controller and `/readyz`.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    /// Mark ready (caches synced) or not.
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    /// Whether ready.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The warp routes of the admin server.
pub fn routes(
    metrics: Metrics,
    ready: Readiness,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    let healthz = warp::path("healthz").and(warp::path::end()).map(|| "ok");
    let readyz = warp::path("readyz").and(warp::path::end()).map(move || {
        if ready.get() {
            warp::reply::with_status("ready", StatusCode::OK)
        } else {
            warp::reply::with_status("caches not synced yet", StatusCode::SERVICE_UNAVAILABLE)
        }
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
            context: format!("binding the admin server to {addr}"),
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

    #[tokio::test]
    async fn readyz_turns_ready_after_sync() {
        let ready = Readiness::default();
        let api = routes(Metrics::new(), ready.clone());
        let res = warp::test::request().path("/readyz").reply(&api).await;
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        ready.set(true);
        let res = warp::test::request().path("/readyz").reply(&api).await;
        assert_eq!(res.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn metrics_endpoint_serves_openmetrics() {
        let m = Metrics::new();
        m.reconciles.inc();
        let api = routes(m, Readiness::default());
        let res = warp::test::request().path("/metrics").reply(&api).await;
        assert_eq!(res.status(), StatusCode::OK);
        let body = String::from_utf8_lossy(res.body()).to_string();
        assert!(body.contains("kudo_manager_reconciles_total 1"), "{body}");
        let res = warp::test::request().path("/healthz").reply(&api).await;
        assert_eq!(res.body().as_ref(), b"ok");
    }
}
