//! One sync of one repository: read its Secret, fetch the index (one
//! request), compare digests, parse only a changed index, write status
//! only when it changes.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use kudo_api::OperatorRepository;
use kudo_repo::config::Credentials;
use kudo_repo::{Digest, IndexFile, Limits};
use kudo_repo_client::http::{self, Download, Transport};
use serde_json::json;

use super::{Indexes, Outcome, Synced, next_status};

/// What a repository's Secret gives.
#[derive(Default)]
struct Access {
    credentials: Option<Credentials>,
    ca_pem: Option<Vec<u8>>,
}

fn failed(reason: &'static str, message: impl Into<String>) -> Outcome {
    Outcome::Failed {
        reason,
        message: message.into(),
    }
}

/// Syncs `repo`, updating `indexes` and its status.
pub(super) async fn sync(
    client: &Client,
    repo: &OperatorRepository,
    indexes: &Indexes,
    secrets_namespace: Option<&str>,
) {
    let name = repo.name_any();
    let outcome = fetch(client, repo, indexes, secrets_namespace).await;
    if let Outcome::Failed { reason, message } = &outcome {
        tracing::warn!(repository = %name, reason, "repository sync failed: {message}");
    }
    let now = jiff::Timestamp::now();
    let Some(status) = next_status(
        repo.status.as_ref(),
        repo.metadata.generation,
        &outcome,
        now,
    ) else {
        return;
    };
    let api = Api::<OperatorRepository>::all(client.clone());
    let patch = json!({"status": status});
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::warn!(repository = %name, "cannot write the repository's status: {e}");
    }
}

async fn fetch(
    client: &Client,
    repo: &OperatorRepository,
    indexes: &Indexes,
    secrets_namespace: Option<&str>,
) -> Outcome {
    let name = repo.name_any();
    let problems = repo.spec.problems();
    if !problems.is_empty() {
        return failed("InvalidSpec", problems.join("; "));
    }
    let access = match &repo.spec.secret_name {
        None => Access::default(),
        Some(secret) => match read_secret(client, secrets_namespace, secret).await {
            Ok(access) => access,
            Err(message) => return failed("SecretUnreadable", message),
        },
    };
    let limits = Limits::default();
    let base = match kudo_repo::urls::repository_url(repo.spec.url.trim()) {
        Ok(u) => u,
        Err(e) => return failed("InvalidSpec", e.to_string()),
    };
    let url = match kudo_repo::urls::index_url(&base) {
        Ok(u) => u,
        Err(e) => return failed("InvalidSpec", e.to_string()),
    };
    let transport = Transport {
        ca_file: None,
        ca_pem: access.ca_pem.clone(),
        insecure_skip_tls_verify: false,
        limits,
    };
    let http_client = match http::client(&transport) {
        Ok(c) => c,
        Err(e) => return failed("SecretUnreadable", e.to_string()),
    };
    let download = Download {
        url: &url,
        max_bytes: limits.max_index_bytes,
        what: "index",
        credentials: access.credentials.as_ref(),
        origin: Some(&base),
        accept: None,
    };
    let bytes = match http::fetch(&http_client, &limits, &download).await {
        Ok(f) => f.bytes,
        Err(e) => return failed("FetchFailed", e.to_string()),
    };
    let digest = format!("sha256:{}", Digest::of(&bytes));
    if let Some(known) = indexes.get(&name)
        && known.digest == digest
        && known.url == repo.spec.url
    {
        // The same index; a changed Secret is used for downloads at once.
        if known.credentials != access.credentials || known.ca_pem != access.ca_pem {
            indexes.set(
                &name,
                Synced {
                    url: known.url.clone(),
                    digest: known.digest.clone(),
                    index: known.index.clone(),
                    base,
                    credentials: access.credentials,
                    ca_pem: access.ca_pem,
                },
            );
        }
        return read_outcome(&known.index, digest);
    }
    let shown = kudo_repo::urls::shown(&url);
    match IndexFile::parse(&bytes, &shown, &limits) {
        Ok(index) => {
            let outcome = read_outcome(&index, digest.clone());
            indexes.set(
                &name,
                Synced {
                    url: repo.spec.url.clone(),
                    digest,
                    index: Arc::new(index),
                    base,
                    credentials: access.credentials,
                    ca_pem: access.ca_pem,
                },
            );
            outcome
        }
        Err(e) => failed("InvalidIndex", e.to_string()),
    }
}

fn read_outcome(index: &IndexFile, digest: String) -> Outcome {
    Outcome::Read {
        digest,
        packages: i64::try_from(index.entries.len()).unwrap_or(i64::MAX),
        versions: i64::try_from(index.len()).unwrap_or(i64::MAX),
    }
}

/// The Secret's `username`/`password` or `token`, and `ca.crt`.
async fn read_secret(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> Result<Access, String> {
    let Some(ns) = namespace else {
        return Err(format!(
            "Secret {name}: this manager has no namespace for repository Secrets"
        ));
    };
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .map_err(|e| format!("Secret {ns}/{name} cannot be read: {e}"))?;
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| -> Result<Option<String>, String> {
        data.get(key)
            .map(|b| {
                String::from_utf8(b.0.clone())
                    .map(|s| s.trim().to_string())
                    .map_err(|_| format!("Secret {ns}/{name}: {key} is not UTF-8"))
            })
            .transpose()
    };
    let credentials = match (text("username")?, text("password")?, text("token")?) {
        (_, _, Some(token)) => Some(Credentials::Bearer { token }),
        (Some(username), Some(password), None) => Some(Credentials::Basic { username, password }),
        (Some(_), None, None) | (None, Some(_), None) => {
            return Err(format!(
                "Secret {ns}/{name} has only one of username and password"
            ));
        }
        (None, None, None) => None,
    };
    Ok(Access {
        credentials,
        ca_pem: data.get("ca.crt").map(|b| b.0.clone()),
    })
}
