//! `init` where a kudo-manager already serves the API server from outside
//! the cluster: `kudo-manager dev` (its own API server, kudo-sandbox), or
//! `kudo-manager run --local-webhook`. Both register the webhook
//! configuration named for local webhooks. A full `init` there would add
//! a second manager and a webhook behind a Service, which the dev server
//! cannot call (it runs no pods) and which would then refuse every
//! Instance write; so `init` is refused there, and `init --uninstall`
//! removes what an earlier `init` installed while keeping the CRDs and the
//! Instances the local manager runs.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Api;
use kudo_certs::LOCAL_WEBHOOK_CONFIGURATION_NAME;

use crate::context::KubeContext;
use crate::error::{CliError, Result};

/// A manager serving this API server from outside the cluster.
pub struct LocalManager {
    /// Whether the API server is kudo-manager dev's own.
    pub dev: bool,
    /// Where its webhook listens.
    pub url: String,
}

/// The local manager serving the API server of `ctx`, if any.
pub async fn local_manager(ctx: &KubeContext) -> Result<Option<LocalManager>> {
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(ctx.client.clone());
    let Some(config) = configs
        .get_opt(LOCAL_WEBHOOK_CONFIGURATION_NAME)
        .await
        .map_err(|e| {
            CliError::api(
                format!(
                    "reading ValidatingWebhookConfiguration {LOCAL_WEBHOOK_CONFIGURATION_NAME}"
                ),
                e,
            )
        })?
    else {
        return Ok(None);
    };
    let url = config
        .webhooks
        .iter()
        .flatten()
        .find_map(|w| w.client_config.url.clone())
        .unwrap_or_default();
    let dev = ctx
        .client
        .apiserver_version()
        .await
        .is_ok_and(|v| is_dev_server(&v.git_version));
    Ok(Some(LocalManager { dev, url }))
}

/// kudo-sandbox, the API server of `kudo-manager dev`, says so in its version.
pub fn is_dev_server(git_version: &str) -> bool {
    git_version.ends_with("-kudo-sandbox")
}

/// Why a full `init` is refused where a local manager serves.
pub fn refusal(local: &LocalManager) -> CliError {
    if local.dev {
        return CliError::Other(
            "this API server is kudo-manager dev's own (kudo-sandbox): kudo-rs already runs here, \
             its controller and webhook inside the dev process, so there is nothing to install. \
             `kubectl kudo init` installs kudo-rs into a real cluster; here, --crd-only and \
             --dry-run work"
                .into(),
        );
    }
    CliError::Other(format!(
        "a kudo-manager already serves this cluster from outside it (its webhook at {} is \
         registered as ValidatingWebhookConfiguration {LOCAL_WEBHOOK_CONFIGURATION_NAME}): \
         installing another one would run every plan twice. Stop that manager first (it \
         removes its webhook configuration when it stops), then run init",
        local.url
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_server_is_known_by_its_version() {
        assert!(is_dev_server("v1.32.0-kudo-sandbox"));
        assert!(!is_dev_server("v1.32.0"));
    }

    #[test]
    fn the_refusal_on_the_dev_server_says_nothing_needs_installing() {
        let text = refusal(&LocalManager {
            dev: true,
            url: String::new(),
        })
        .to_string();
        assert!(text.contains("kudo-rs already runs here"), "{text}");
        assert!(text.contains("--crd-only and --dry-run work"), "{text}");
    }
}
