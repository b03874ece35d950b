//! The connection to the cluster: kubeconfig, context, namespace, timeouts.

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cli::GlobalArgs;
use crate::error::{CliError, Result};

/// A client plus what the command line and kubeconfig said about defaults.
#[derive(Clone)]
pub struct KubeContext {
    /// API client.
    pub client: Client,
    /// Namespace: `-n`, else the context's namespace, else `default`.
    pub namespace: String,
    /// The kubeconfig user of the context (recorded as `requestedBy`).
    pub user: Option<String>,
}

fn kubeconfig_error(e: impl std::fmt::Display) -> CliError {
    CliError::Kubeconfig {
        message: e.to_string(),
    }
}

/// Reads the kubeconfig (`--kubeconfig`, else `$KUBECONFIG`, else
/// `~/.kube/config`).
pub fn read_kubeconfig(global: &GlobalArgs) -> Result<Kubeconfig> {
    match &global.kubeconfig {
        Some(path) => Kubeconfig::read_from(path)
            .map_err(|e| kubeconfig_error(format!("{}: {e}", path.display()))),
        None => Kubeconfig::read().map_err(kubeconfig_error),
    }
}

/// The user named by the selected context.
fn context_user(kubeconfig: &Kubeconfig, context: Option<&str>) -> Option<String> {
    let name = context.or(kubeconfig.current_context.as_deref())?;
    kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone())
}

/// Connects as the flags say.
pub async fn connect(global: &GlobalArgs) -> Result<KubeContext> {
    let kubeconfig = read_kubeconfig(global)?;
    let user = context_user(&kubeconfig, global.context.as_deref());
    let options = KubeConfigOptions {
        context: global.context.clone(),
        ..Default::default()
    };
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(kubeconfig_error)?;
    if !global.request_timeout.is_zero() {
        config.connect_timeout = Some(global.request_timeout);
        config.read_timeout = Some(global.request_timeout);
        config.write_timeout = Some(global.request_timeout);
    }
    let namespace = global
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config)
        .map_err(|e| kubeconfig_error(format!("cannot create a client: {e}")))?;
    Ok(KubeContext {
        client,
        namespace,
        user,
    })
}

/// The namespace without connecting: `-n`, else the kubeconfig context's,
/// else `default` (for commands that need no cluster).
pub fn offline_namespace(global: &GlobalArgs) -> String {
    if let Some(ns) = &global.namespace {
        return ns.clone();
    }
    let Ok(kubeconfig) = read_kubeconfig(global) else {
        return "default".into();
    };
    let name = global
        .context
        .as_deref()
        .or(kubeconfig.current_context.as_deref());
    kubeconfig
        .contexts
        .iter()
        .find(|c| Some(c.name.as_str()) == name)
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.namespace.clone())
        .unwrap_or_else(|| "default".into())
}
