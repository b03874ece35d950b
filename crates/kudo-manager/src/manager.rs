//! The whole manager: admin server, leader election, controller and
//! webhook, stopped together by one shutdown signal.

use std::net::SocketAddr;
use std::path::PathBuf;

use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::admin::{self, Readiness};
use crate::controller::{self, ControllerConfig};
use crate::leader::{Elector, LeaderConfig};
use crate::metrics::Metrics;
use crate::{Error, Result};

/// How the webhook is served.
#[derive(Debug, Clone)]
pub enum WebhookMode {
    /// No webhook (the controller works without it).
    Off,
    /// In a Pod: TLS files from a mounted Secret, registered by `deploy/`.
    InCluster {
        /// Listen address.
        addr: SocketAddr,
        /// Directory with `tls.crt` and `tls.key`.
        cert_dir: PathBuf,
        /// PEM CA whose client certificates alone are served; `None`
        /// serves any client.
        client_ca: Option<PathBuf>,
        /// Connections open at once.
        max_connections: usize,
    },
    /// On 127.0.0.1 with a self-made CA, registered by URL (dev, `--local-webhook`).
    Local {
        /// Port (0 picks one).
        port: u16,
        /// Where the process makes its own private directory for the
        /// certificates (removed again on shutdown); see
        /// [`crate::webhook::PrivateCertDir`].
        cert_dir: PathBuf,
    },
}

/// Settings of [`run`].
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// Admin server address (`/healthz`, `/readyz`, `/metrics`).
    pub admin_addr: SocketAddr,
    /// Lease namespace and durations; `None` disables leader election
    /// (single replica).
    pub leader_election: Option<LeaderConfig>,
    /// Webhook.
    pub webhook: WebhookMode,
    /// Controller settings.
    pub controller: ControllerConfig,
}

/// Run until `shutdown` is cancelled. Returns an error when leadership is
/// lost (the process should exit and restart), when the leader-election
/// namespace does not exist (at once, rather than waiting for a leadership
/// that cannot come) or a server fails to start.
pub async fn run(
    client: Client,
    options: ManagerOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let ready = Readiness::new(!matches!(options.webhook, WebhookMode::Off));
    run_observed(client, options, shutdown, ready).await
}

/// [`run`], reporting to `ready` (made with [`Readiness::new`] for the
/// webhook mode of `options`): its caller sees when every part serves.
pub async fn run_observed(
    client: Client,
    options: ManagerOptions,
    shutdown: CancellationToken,
    ready: Readiness,
) -> Result<()> {
    let metrics = Metrics::new();
    let stop = shutdown.child_token();
    {
        let (ready, stop) = (ready.clone(), stop.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            ready.set_stopping();
        });
    }

    let (admin_addr, admin) = admin::bind(options.admin_addr, metrics.clone(), ready.clone(), {
        let stop = stop.clone();
        async move { stop.cancelled().await }
    })
    .await?;
    ready.set_admin_addr(admin_addr);
    tracing::info!(addr = %admin_addr, "admin server listening (/healthz, /readyz, /metrics)");
    let admin = tokio::spawn(admin);

    let checks = crate::webhook::ReviewChecks {
        render_limits: options.controller.render_limits,
        write_as: Some(options.controller.write_as.clone()),
    };
    let webhook = start_webhook(&client, &options.webhook, checks, &metrics, &ready, &stop);

    let mut lost_leadership = false;
    let mut election_error = None;
    if let Some(config) = options.leader_election.clone() {
        let elector = Elector::new(client.clone(), config);
        let mut leading = elector.leading();
        let mut election = {
            let stop = stop.clone();
            Some(tokio::spawn(
                elector.run_until(async move { stop.cancelled().await }),
            ))
        };
        tracing::info!("waiting for leadership");
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                changed = leading.changed() => {
                    if changed.is_err() {
                        // The election ended on its own: a problem no retry solves.
                        election_error = election_ended(election.take()).await;
                        stop.cancel();
                        break;
                    }
                    if *leading.borrow() { break; }
                }
            }
        }
        if !stop.is_cancelled() {
            tracing::info!("leading; starting the controller");
            let controller_stop = stop.child_token();
            let watch_stop = controller_stop.clone();
            let mut leading_watch = leading.clone();
            let lost = tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = watch_stop.cancelled() => return false,
                        changed = leading_watch.changed() => {
                            if changed.is_err() || !*leading_watch.borrow() {
                                watch_stop.cancel();
                                return true;
                            }
                        }
                    }
                }
            });
            let result = controller::run(
                client.clone(),
                options.controller.clone(),
                metrics.clone(),
                ready.clone(),
                {
                    let t = controller_stop.clone();
                    async move { t.cancelled().await }
                },
            )
            .await;
            controller_stop.cancel();
            lost_leadership = lost.await.unwrap_or(false);
            if let Err(e) = result {
                stop.cancel();
                let _ = election_ended(election.take()).await;
                return Err(e);
            }
        }
        stop.cancel();
        if let Some(e) = election_ended(election.take()).await {
            election_error = Some(e);
        }
    } else {
        let result = controller::run(
            client.clone(),
            options.controller.clone(),
            metrics.clone(),
            ready.clone(),
            {
                let t = stop.clone();
                async move { t.cancelled().await }
            },
        )
        .await;
        stop.cancel();
        result?;
    }
    stop.cancel();
    let _ = admin.await;
    if let Some(webhook) = webhook {
        match webhook.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "webhook server ended with an error"),
            Err(e) => tracing::warn!(error = %e, "webhook task failed"),
            Ok(Ok(())) => {}
        }
    }
    if let Some(e) = election_error {
        return Err(e);
    }
    if lost_leadership {
        return Err(Error::Server(
            "lost the leader Lease; exiting so a restart rejoins the election".into(),
        ));
    }
    Ok(())
}

/// Waits for the election task; its error, if it ended with one.
async fn election_ended(election: Option<tokio::task::JoinHandle<Result<()>>>) -> Option<Error> {
    match election?.await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(Error::Server(format!("leader election task: {e}"))),
    }
}

/// The switch between webhook modes; the webhook itself lives in [`crate::webhook`].
fn start_webhook(
    client: &Client,
    mode: &WebhookMode,
    checks: crate::webhook::ReviewChecks,
    metrics: &Metrics,
    ready: &Readiness,
    stop: &CancellationToken,
) -> Option<tokio::task::JoinHandle<Result<(), crate::webhook::WebhookError>>> {
    let stopped = {
        let stop = stop.clone();
        async move { stop.cancelled().await }
    };
    match mode.clone() {
        WebhookMode::Off => None,
        WebhookMode::InCluster {
            addr,
            cert_dir,
            client_ca,
            max_connections,
        } => {
            let mut config = crate::webhook::WebhookConfig::from_cert_dir(addr, &cert_dir)
                .with_max_connections(max_connections)
                .with_metrics(metrics.clone())
                .with_readiness(ready.clone())
                .with_render_limits(checks.render_limits);
            if let Some(write_as) = checks.write_as {
                config = config.with_acting_as(client.clone(), write_as);
            }
            if let Some(ca) = client_ca {
                config = config.with_client_ca(ca);
            }
            Some(tokio::spawn(crate::webhook::serve(
                config,
                crate::webhook::CachedOperatorVersions::start(client.clone()),
                stopped,
            )))
        }
        WebhookMode::Local { port, cert_dir } => {
            let (client, metrics, ready) = (client.clone(), metrics.clone(), ready.clone());
            Some(tokio::spawn(async move {
                let observe = crate::webhook::Observers {
                    metrics: Some(metrics),
                    readiness: Some(ready),
                };
                crate::webhook::serve_local(
                    client,
                    port,
                    &cert_dir,
                    observe,
                    checks,
                    stopped,
                    |addr| {
                        tracing::info!(%addr, "local admission webhook registered");
                    },
                )
                .await
            }))
        }
    }
}

/// A token cancelled on Ctrl-C or SIGTERM.
pub fn shutdown_on_signals() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for SIGTERM; Ctrl-C only");
                        let _ = tokio::signal::ctrl_c().await;
                        t.cancel();
                        return;
                    }
                };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutting down");
        t.cancel();
    });
    token
}
