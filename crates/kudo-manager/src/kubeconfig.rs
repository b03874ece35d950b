//! Which cluster `kudo-manager run` talks to: `--kubeconfig` and
//! `--context` as kubectl and controller-runtime managers take them, else
//! `$KUBECONFIG`, `~/.kube/config` or the in-cluster config.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::{Error, Result};

/// The client configuration for these flags:
///
/// - neither: kube's inference (`$KUBECONFIG`, `~/.kube/config`, then the
///   in-cluster service account);
/// - `--kubeconfig PATH`: that file, at its current context or `--context`;
/// - `--context NAME` alone: that context of `$KUBECONFIG` / `~/.kube/config`.
///
/// A context that is not in the file is an error listing the ones that are.
pub async fn client_config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config> {
    if kubeconfig.is_none() && context.is_none() {
        return kube::Config::infer().await.map_err(|e| {
            Error::Config(format!(
                "no usable kubeconfig or in-cluster config: {e}; \
                 pass --kubeconfig PATH (and --context NAME) or set KUBECONFIG"
            ))
        });
    }
    let (file, shown) = match kubeconfig {
        Some(path) => (
            Kubeconfig::read_from(path)
                .map_err(|e| Error::Config(format!("--kubeconfig {}: {e}", path.display())))?,
            path.display().to_string(),
        ),
        None => (
            Kubeconfig::read().map_err(|e| {
                Error::Config(format!(
                    "--context needs a kubeconfig, and none could be read from KUBECONFIG \
                     or ~/.kube/config: {e}; pass --kubeconfig PATH"
                ))
            })?,
            "the kubeconfig (KUBECONFIG or ~/.kube/config)".to_string(),
        ),
    };
    if let Some(name) = context
        && !file.contexts.iter().any(|c| c.name == name)
    {
        let known: Vec<&str> = file.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(Error::Config(format!(
            "--context {name}: no such context in {shown}; its contexts are: {}",
            if known.is_empty() {
                "(none)".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        cluster: None,
        user: None,
    };
    kube::Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|e| {
            let at = context.map_or_else(String::new, |c| format!(" (context {c})"));
            Error::Config(format!("kubeconfig {shown}{at}: {e}"))
        })
}

/// A client for [`client_config`].
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<kube::Client> {
    let config = client_config(kubeconfig, context).await?;
    kube::Client::try_from(config)
        .map_err(|e| Error::Config(format!("cannot build a client from the kubeconfig: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = "\
apiVersion: v1
kind: Config
current-context: first
clusters:
  - name: one
    cluster: {server: 'https://one.example:6443'}
  - name: two
    cluster: {server: 'https://two.example:6443'}
users:
  - name: u
    user: {token: abc}
contexts:
  - name: first
    context: {cluster: one, user: u, namespace: ns1}
  - name: second
    context: {cluster: two, user: u, namespace: ns2}
";

    fn file() -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), KUBECONFIG).unwrap();
        f
    }

    #[tokio::test]
    async fn kubeconfig_flag_uses_the_files_current_context() {
        let f = file();
        let config = client_config(Some(f.path()), None).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://one.example:6443/");
        assert_eq!(config.default_namespace, "ns1");
    }

    #[tokio::test]
    async fn context_flag_picks_another_context_of_the_file() {
        let f = file();
        let config = client_config(Some(f.path()), Some("second")).await.unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://two.example:6443/");
        assert_eq!(config.default_namespace, "ns2");
    }

    #[tokio::test]
    async fn an_unknown_context_is_refused_listing_the_known_ones() {
        let f = file();
        let err = client_config(Some(f.path()), Some("third"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("--context third: no such context"), "{err}");
        assert!(err.contains("its contexts are: first, second"), "{err}");
    }

    #[tokio::test]
    async fn a_missing_kubeconfig_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.yaml");
        let err = client_config(Some(&path), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("--kubeconfig {}", path.display())),
            "{err}"
        );
    }
}
