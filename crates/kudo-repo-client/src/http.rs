//! Bounded downloads over http, https and `file://`: rustls with the
//! system's roots (plus a repository's CA file), redirects only within the
//! rules, credentials only to the repository's own host, every body read
//! against a byte limit and a deadline.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use kudo_repo::Limits;
use kudo_repo::config::Credentials;
use kudo_repo::limits::human_bytes;
use kudo_repo::urls::{Url, same_origin, shown};

use crate::error::{ClientError, Result};

/// How to reach one repository or registry.
#[derive(Clone, Debug, Default)]
pub struct Transport {
    /// PEM CA certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// PEM CA certificates given in memory (the manager reads them from a
    /// Secret), trusted besides the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// Accept any certificate (only when the user asked for it).
    pub insecure_skip_tls_verify: bool,
    /// Sizes and times.
    pub limits: Limits,
}

/// Makes sure rustls uses ring, the provider the rest of kudo-rs uses
/// (reqwest is built without one, so no second crypto library is linked).
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A redirect the policy refused; found again in reqwest's error chain.
#[derive(Debug)]
struct RefusedRedirect(String);

impl std::fmt::Display for RefusedRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RefusedRedirect {}

/// The CA certificates of a PEM file, read within a limit.
pub fn read_ca_file(path: &std::path::Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| {
        ClientError::Tls(format!("cannot read the CA file {}: {e}", path.display()))
    })?;
    let mut pem = Vec::new();
    file.take(4 * 1024 * 1024)
        .read_to_end(&mut pem)
        .map_err(|e| {
            ClientError::Tls(format!("cannot read the CA file {}: {e}", path.display()))
        })?;
    Ok(pem)
}

/// An HTTP client for `transport`.
pub fn client(transport: &Transport) -> Result<reqwest::Client> {
    install_crypto_provider();
    let max = transport.limits.max_redirects;
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let from = attempt.previous().last().map(|u| u.scheme().to_string());
        let to = attempt.url().scheme().to_string();
        if attempt.previous().len() > max {
            return attempt.error(RefusedRedirect(format!("more than {max} redirects")));
        }
        if to != "http" && to != "https" {
            let msg = format!("a redirect to {to}: is never followed");
            return attempt.error(RefusedRedirect(msg));
        }
        if from.as_deref() == Some("https") && to == "http" {
            let msg = format!(
                "a redirect from https to plain http ({}) is never followed",
                shown(attempt.url())
            );
            return attempt.error(RefusedRedirect(msg));
        }
        attempt.follow()
    });
    let mut builder = reqwest::Client::builder()
        .redirect(policy)
        .connect_timeout(transport.limits.connect_timeout)
        .read_timeout(transport.limits.read_timeout)
        .user_agent(concat!("kudo-rs/", env!("CARGO_PKG_VERSION")));
    if let Some(path) = &transport.ca_file {
        let certs = reqwest::Certificate::from_pem_bundle(&read_ca_file(path)?).map_err(|e| {
            ClientError::Tls(format!(
                "the CA file {} holds no usable certificate: {e}",
                path.display()
            ))
        })?;
        if certs.is_empty() {
            return Err(ClientError::Tls(format!(
                "the CA file {} holds no PEM certificate",
                path.display()
            )));
        }
        builder = builder.tls_certs_merge(certs);
    }
    if let Some(pem) = &transport.ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| {
            ClientError::Tls(format!("the CA bundle holds no usable certificate: {e}"))
        })?;
        if certs.is_empty() {
            return Err(ClientError::Tls(
                "the CA bundle holds no PEM certificate".into(),
            ));
        }
        builder = builder.tls_certs_merge(certs);
    }
    if transport.insecure_skip_tls_verify {
        builder = builder.tls_danger_accept_invalid_certs(true);
    }
    builder
        .build()
        .map_err(|e| ClientError::Tls(format!("cannot set up the HTTP client: {}", chain(&e))))
}

/// The messages of an error and its sources, joined.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

fn find_refused(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<RefusedRedirect>() {
            return Some(r.0.clone());
        }
        source = s.source();
    }
    None
}

/// One download: `what` (`index`, `package`, ...) names it in messages.
pub struct Download<'a> {
    /// The URL.
    pub url: &'a Url,
    /// Limit of the body.
    pub max_bytes: u64,
    /// `index`, `package`, `manifest`.
    pub what: &'static str,
    /// Credentials, sent only when `url` is on `origin`'s host and port.
    pub credentials: Option<&'a Credentials>,
    /// The repository the credentials belong to.
    pub origin: Option<&'a Url>,
    /// Extra request headers (OCI `Accept`).
    pub accept: Option<&'a str>,
}

/// A fetched body and what the server said about it.
pub struct Fetched {
    /// The body.
    pub bytes: Vec<u8>,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// Response headers worth keeping (OCI's `Docker-Content-Digest`).
    pub digest_header: Option<String>,
}

/// Reads `download.url` within its limits. `file://` URLs are read from
/// disk with the same byte limit.
pub async fn fetch(
    client: &reqwest::Client,
    limits: &Limits,
    download: &Download<'_>,
) -> Result<Fetched> {
    let url = download.url;
    if url.scheme() == "file" {
        return read_file(download).map(|bytes| Fetched {
            bytes,
            content_type: None,
            digest_header: None,
        });
    }
    let shown_url = shown(url);
    let deadline = limits.total_timeout;
    match tokio::time::timeout(deadline, fetch_http(client, download, &shown_url)).await {
        Ok(result) => result,
        Err(_) => Err(ClientError::Timeout {
            url: shown_url,
            detail: format!(
                "the {} did not arrive within {}; the server is too slow or stalls",
                download.what,
                seconds(deadline)
            ),
        }),
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

async fn fetch_http(
    client: &reqwest::Client,
    download: &Download<'_>,
    shown_url: &str,
) -> Result<Fetched> {
    let url = download.url;
    let mut request = client.get(url.clone());
    if let Some(accept) = download.accept {
        request = request.header(reqwest::header::ACCEPT, accept);
    }
    let same_host = download.origin.is_some_and(|o| same_origin(o, url));
    match download.credentials {
        Some(Credentials::Basic { username, password }) if same_host => {
            request = request.basic_auth(username, Some(password));
        }
        Some(Credentials::Bearer { token }) if same_host => {
            request = request.bearer_auth(token);
        }
        _ => {}
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| send_error(&e, shown_url))?;
    let status = response.status();
    if status.is_redirection() {
        // reqwest hands back redirects it will not follow (another scheme).
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        return Err(ClientError::Redirect {
            url: shown_url.to_string(),
            detail: format!("a redirect to {location:?} is never followed"),
        });
    }
    if !status.is_success() {
        return Err(status_error(status, shown_url, download));
    }
    if let Some(length) = response.content_length()
        && length > download.max_bytes
    {
        return Err(too_large(shown_url, download));
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header("content-type");
    let digest_header = header("docker-content-digest");
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| send_error(&e, shown_url))?
    {
        let total = u64::try_from(bytes.len() + chunk.len()).unwrap_or(u64::MAX);
        if total > download.max_bytes {
            return Err(too_large(shown_url, download));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        bytes,
        content_type,
        digest_header,
    })
}

fn too_large(url: &str, download: &Download<'_>) -> ClientError {
    ClientError::TooLarge {
        url: url.to_string(),
        what: download.what,
        limit: human_bytes(download.max_bytes),
    }
}

fn status_error(status: reqwest::StatusCode, url: &str, download: &Download<'_>) -> ClientError {
    let hint = match status.as_u16() {
        401 | 403 if download.credentials.is_none() => {
            "; the repository wants credentials: `kubectl kudo repo add` takes --username and \
             --password-stdin (or --token-stdin), an OperatorRepository names a Secret holding \
             them in spec.secretName"
                .to_string()
        }
        401 | 403 => "; the credentials were refused".to_string(),
        404 if download.what == "index" => {
            "; is this the URL of a repository (the folder holding index.yaml)?".to_string()
        }
        _ => String::new(),
    };
    ClientError::Status {
        url: url.to_string(),
        status: status.to_string(),
        server_error: status.is_server_error(),
        hint,
    }
}

fn send_error(error: &reqwest::Error, url: &str) -> ClientError {
    if let Some(detail) = find_refused(error) {
        return ClientError::Redirect {
            url: url.to_string(),
            detail,
        };
    }
    if error.is_redirect() {
        return ClientError::Redirect {
            url: url.to_string(),
            detail: chain(error),
        };
    }
    if error.is_timeout() {
        return ClientError::Timeout {
            url: url.to_string(),
            detail: format!("no answer in time ({})", chain(error)),
        };
    }
    let detail = match io_problem(error) {
        Some(problem) if error.is_connect() => format!("cannot connect: {problem}"),
        Some(problem) => format!("the connection failed: {problem}"),
        None => chain(error),
    };
    ClientError::Network {
        url: url.to_string(),
        detail,
    }
}

/// The innermost IO error: its kind (`connection refused`) when the OS
/// raised it, without the OS error number; otherwise its own words (a TLS
/// refusal such as "invalid peer certificate: UnknownIssuer" travels as an
/// IO error of kind Other).
fn io_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut found = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            found = Some(if io.raw_os_error().is_some() {
                io.kind().to_string()
            } else {
                io.to_string()
            });
        }
        source = s.source();
    }
    found
}

fn read_file(download: &Download<'_>) -> Result<Vec<u8>> {
    let url = download.url;
    let path = url.to_file_path().map_err(|()| ClientError::Network {
        url: url.to_string(),
        detail: "not a local path".into(),
    })?;
    let file = std::fs::File::open(&path).map_err(|e| {
        let detail = if e.kind() == std::io::ErrorKind::NotFound {
            format!("no such {} file", download.what)
        } else {
            e.to_string()
        };
        ClientError::file(&path, detail)
    })?;
    let mut bytes = Vec::new();
    file.take(download.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ClientError::file(&path, e))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > download.max_bytes {
        return Err(too_large(url.as_str(), download));
    }
    Ok(bytes)
}
