//! Local mode: a webhook on 127.0.0.1 with its own CA, registered with the
//! API server by URL (`kudo-manager run --local-webhook`, `kudo-manager dev`)
//! and removed again on clean shutdown.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tokio::net::TcpListener;

use super::WebhookError;
use super::cert_files::{PrivateCertDir, write_new_private_file};
use super::config::{Observers, WebhookConfig};
use super::server::serve_listener;
use kudo_certs::{
    CertificateAuthority, LOCAL_WEBHOOK_CONFIGURATION_NAME, WebhookTarget, local_sans,
    webhook_configuration,
};

/// Certificate files for a local webhook and the CA that signed them.
#[derive(Clone, Debug)]
pub struct LocalTls {
    /// PEM of the CA: the `caBundle` to register.
    pub ca_pem: String,
    /// Serving certificate file.
    pub cert_path: PathBuf,
    /// Private key file (mode 0600).
    pub key_path: PathBuf,
}

/// Generates a CA and a serving certificate for 127.0.0.1/localhost and
/// writes `tls.crt`, `tls.key` and `ca.crt` into `dir`, which must be the
/// caller's own: each file is created new with mode 0600 and an existing
/// one (a symlink included) is refused, never overwritten or followed.
/// [`serve_local`] writes into a fresh [`PrivateCertDir`].
pub fn write_local_tls(dir: &Path) -> Result<LocalTls, WebhookError> {
    let ca = CertificateAuthority::generate()?;
    let serving = ca.issue(&local_sans())?;
    let cert_path = write_new_private_file(dir, "tls.crt", &serving.cert_pem)?;
    let key_path = write_new_private_file(dir, "tls.key", &serving.key_pem)?;
    write_new_private_file(dir, "ca.crt", ca.cert_pem())?;
    Ok(LocalTls {
        ca_pem: ca.cert_pem().to_string(),
        cert_path,
        key_path,
    })
}

/// Creates or updates the ValidatingWebhookConfiguration
/// [`LOCAL_WEBHOOK_CONFIGURATION_NAME`] with clientConfig.url
/// `https://127.0.0.1:<port>/validate-kudo-dev-v1beta1-instance` and this
/// `caBundle`.
pub async fn register_local_webhook(
    client: &kube::Client,
    port: u16,
    ca_pem: &str,
) -> Result<ValidatingWebhookConfiguration, WebhookError> {
    let desired = webhook_configuration(Some(ca_pem), &WebhookTarget::local(port));
    apply_webhook_configuration(client, desired).await
}

/// Creates the configuration, or replaces the existing one of that name.
pub async fn apply_webhook_configuration(
    client: &kube::Client,
    mut desired: ValidatingWebhookConfiguration,
) -> Result<ValidatingWebhookConfiguration, WebhookError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let name = desired.metadata.name.clone().unwrap_or_default();
    let context = |verb: &str| format!("{verb} ValidatingWebhookConfiguration {name}");
    // Create first; on a conflict with an existing object replace it. Two
    // attempts cover a concurrent writer between our read and write.
    for _ in 0..2 {
        match api.create(&PostParams::default(), &desired).await {
            Ok(created) => return Ok(created),
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => {
                return Err(WebhookError::Kube {
                    context: context("creating"),
                    source,
                });
            }
        }
        let Some(existing) = api
            .get_opt(&name)
            .await
            .map_err(|source| WebhookError::Kube {
                context: context("reading"),
                source,
            })?
        else {
            continue;
        };
        desired.metadata.resource_version = existing.metadata.resource_version;
        match api.replace(&name, &PostParams::default(), &desired).await {
            Ok(replaced) => return Ok(replaced),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(source) => {
                return Err(WebhookError::Kube {
                    context: context("updating"),
                    source,
                });
            }
        }
    }
    Err(WebhookError::Config(format!(
        "ValidatingWebhookConfiguration {name} kept changing while being updated; try again"
    )))
}

/// Removes the local configuration; a missing one is fine.
pub async fn unregister_local_webhook(client: &kube::Client) -> Result<(), WebhookError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    match api
        .delete(LOCAL_WEBHOOK_CONFIGURATION_NAME, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(WebhookError::Kube {
            context: format!(
                "deleting ValidatingWebhookConfiguration {LOCAL_WEBHOOK_CONFIGURATION_NAME}"
            ),
            source,
        }),
    }
}

/// Everything local mode needs in one call: certificates into a fresh
/// private directory made inside `cert_dir` (see [`PrivateCertDir`]; it is
/// removed again when this returns), listen on 127.0.0.1:`port` (0 picks a free port), register the
/// configuration with that port, serve until `shutdown`, unregister, and
/// only then stop serving.
///
/// `on_ready` is called with the bound address once the configuration is
/// registered (dev mode prints it). OperatorVersions come from a cache fed
/// by a watch, read live when it does not have one yet.
pub async fn serve_local(
    client: kube::Client,
    port: u16,
    cert_dir: &Path,
    observe: Observers,
    checks: super::ReviewChecks,
    shutdown: impl Future<Output = ()> + Send,
    on_ready: impl FnOnce(SocketAddr) + Send,
) -> Result<(), WebhookError> {
    let private = PrivateCertDir::create_in(cert_dir)?;
    let tls = write_local_tls(private.path())?;
    tracing::info!(dir = %private.path().display(), "local webhook certificates written");
    let requested = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = TcpListener::bind(requested)
        .await
        .map_err(|source| WebhookError::Bind {
            addr: requested,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| WebhookError::Bind {
        addr: requested,
        source,
    })?;
    let mut config = WebhookConfig {
        metrics: observe.metrics,
        readiness: observe.readiness,
        render_limits: checks.render_limits,
        ..WebhookConfig::new(addr, &tls.cert_path, &tls.key_path)
    };
    if let Some(write_as) = checks.write_as {
        config = config.with_acting_as(client.clone(), write_as);
    }
    // Its watches start before the configuration sends reviews.
    let source = super::CachedOperatorVersions::start(client.clone());
    register_local_webhook(&client, addr.port(), &tls.ca_pem).await?;
    on_ready(addr);
    // Unregistered before the server stops: writes reviewed until then
    // (the controller's last status writes among them) are still answered.
    let (unregistered_tx, unregistered_rx) = tokio::sync::oneshot::channel();
    let unregistering = client.clone();
    let shutdown = async move {
        shutdown.await;
        let _ = unregistered_tx.send(unregister_local_webhook(&unregistering).await);
    };
    let served = serve_listener(listener, config, source, shutdown).await;
    let unregistered = match unregistered_rx.await {
        Ok(unregistered) => unregistered,
        // The server ended on its own: unregister now.
        Err(_) => unregister_local_webhook(&client).await,
    };
    served.and(unregistered)
}
