//! Validating admission webhooks (admissionregistration.k8s.io/v1,
//! AdmissionReview v1), called over HTTPS with caBundle verification.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::authz::{ADMIN_GROUPS, ADMIN_USER, Caller};
use crate::state::{Operation, Planned, State};
use crate::status::ApiError;

/// A webhook that matched a request.
#[derive(Debug, Clone)]
pub struct Hook {
    /// Webhook name (`validate.kudo.dev`).
    pub name: String,
    /// `clientConfig.url`.
    pub url: Option<String>,
    /// PEM certificates from `clientConfig.caBundle`.
    pub ca_bundle: Option<Vec<u8>>,
    /// Whether a failed call lets the request through (`failurePolicy: Ignore`).
    pub fail_open: bool,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// Why its `matchConditions` could not be evaluated: a failed call.
    pub condition_error: Option<String>,
}

fn contains(list: &Value, want: &str) -> bool {
    list.as_array().is_some_and(|a| {
        a.iter()
            .any(|x| x.as_str() == Some("*") || x.as_str() == Some(want))
    })
}

fn resource_matches(list: &Value, plural: &str, sub: Option<&str>) -> bool {
    let Some(items) = list.as_array() else {
        return false;
    };
    items
        .iter()
        .filter_map(Value::as_str)
        .any(|r| match (r.split_once('/'), sub) {
            (None, None) => r == "*" || r == plural,
            (Some((rp, rs)), Some(s)) => (rp == "*" || rp == plural) && (rs == "*" || rs == s),
            (Some(("*", "*")), None) => true,
            _ => false,
        })
}

/// Evaluates a metav1.LabelSelector against labels; a missing selector
/// matches (webhook configurations), unlike a PodDisruptionBudget's.
pub fn label_selector_matches(selector: &Value, labels: &Value) -> bool {
    !selector.is_object() || crate::selector::selector_matches(selector, labels)
}

/// The webhooks whose rules, selectors and match conditions match a
/// planned write by `caller`.
pub fn matching_hooks(state: &State, p: &Planned, caller: Option<&Caller>) -> Vec<Hook> {
    if p.res.group == "admissionregistration.k8s.io" {
        return Vec::new();
    }
    let configs: Vec<Arc<Value>> = state
        .store
        .list(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            None,
        )
        .map(|s| s.value.clone())
        .collect();
    if configs.is_empty() {
        return Vec::new();
    }
    let ns_labels = if p.res.group.is_empty() && p.res.plural == "namespaces" {
        p.new
            .as_ref()
            .or(p.old.as_deref())
            .map(|o| o["metadata"]["labels"].clone())
    } else if p.res.namespaced {
        state
            .store
            .get("", "namespaces", "", &p.namespace)
            .map(|n| n.value["metadata"]["labels"].clone())
    } else {
        None
    };
    let obj_labels = p
        .new
        .as_ref()
        .or(p.old.as_deref())
        .map(|o| o["metadata"]["labels"].clone())
        .unwrap_or(Value::Null);
    let mut hooks = Vec::new();
    for cfg in &configs {
        for wh in cfg["webhooks"].as_array().into_iter().flatten() {
            let rule_hit = wh["rules"].as_array().into_iter().flatten().any(|r| {
                let scope = r["scope"].as_str().unwrap_or("*");
                let scope_ok = match scope {
                    "Namespaced" => p.res.namespaced,
                    "Cluster" => !p.res.namespaced,
                    _ => true,
                };
                scope_ok
                    && contains(&r["operations"], p.op.as_str())
                    && contains(&r["apiGroups"], &p.res.group)
                    && contains(&r["apiVersions"], &p.version)
                    && resource_matches(&r["resources"], &p.res.plural, p.subresource.as_deref())
            });
            if !rule_hit {
                continue;
            }
            if let Some(labels) = &ns_labels
                && !label_selector_matches(&wh["namespaceSelector"], labels)
            {
                continue;
            }
            if !label_selector_matches(&wh["objectSelector"], &obj_labels) {
                continue;
            }
            let username = caller.map_or(ADMIN_USER, |c| c.user.as_str());
            let condition_error =
                match crate::match_conditions::webhook_applies(&wh["matchConditions"], username) {
                    Ok(true) => None,
                    Ok(false) => continue,
                    Err(why) => Some(why),
                };
            let cc = &wh["clientConfig"];
            hooks.push(Hook {
                name: wh["name"].as_str().unwrap_or("unnamed").to_string(),
                url: cc["url"].as_str().map(str::to_string),
                ca_bundle: cc["caBundle"].as_str().and_then(|b| {
                    base64::engine::general_purpose::STANDARD
                        .decode(b.trim())
                        .ok()
                }),
                fail_open: wh["failurePolicy"].as_str() == Some("Ignore"),
                timeout: Duration::from_secs(
                    wh["timeoutSeconds"].as_u64().unwrap_or(10).clamp(1, 30),
                ),
                condition_error,
            });
        }
    }
    hooks
}

fn review_request(p: &Planned, caller: Option<&Caller>, dry_run: bool) -> Value {
    let (object, old) = match p.op {
        Operation::Create => (p.new.clone(), None),
        Operation::Update => (
            p.new.clone().or_else(|| p.old.as_deref().cloned()),
            p.old.as_deref().cloned(),
        ),
        Operation::Delete => (None, p.old.as_deref().cloned()),
    };
    let kind = json!({"group": p.res.group, "version": p.version, "kind": p.res.kind});
    let resource = json!({"group": p.res.group, "version": p.version, "resource": p.res.plural});
    let mut req = json!({
        "uid": uuid::Uuid::new_v4().to_string(),
        "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "name": p.name, "operation": p.op.as_str(),
        "userInfo": user_info(caller),
        "object": object, "oldObject": old, "dryRun": dry_run,
    });
    if !p.namespace.is_empty() {
        req["namespace"] = json!(p.namespace);
    }
    if let Some(sub) = &p.subresource {
        req["subResource"] = json!(sub);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// Who made the request, as kube-apiserver tells webhooks: the impersonated
/// user, or the sandbox's administrator for a plain request.
fn user_info(caller: Option<&Caller>) -> Value {
    match caller {
        Some(caller) => json!({"username": caller.user, "groups": caller.groups}),
        None => json!({"username": ADMIN_USER, "groups": ADMIN_GROUPS}),
    }
}

tokio::task_local! {
    /// Warnings the webhooks gave while the request being served was
    /// admitted; the server answers them as `Warning` headers, as
    /// kube-apiserver does.
    static WARNINGS: RefCell<Vec<String>>;
}

/// Most warnings one answer carries, and most bytes of each.
const MAX_WARNINGS: usize = 16;
const MAX_WARNING_BYTES: usize = 2048;

/// Runs `serve` (one request) and returns its result with the admission
/// warnings given meanwhile, each once.
pub async fn with_warnings<T>(serve: impl Future<Output = T>) -> (T, Vec<String>) {
    WARNINGS
        .scope(RefCell::new(Vec::new()), async move {
            let result = serve.await;
            let warnings = WARNINGS.try_with(RefCell::take).unwrap_or_default();
            (result, warnings)
        })
        .await
}

fn note_warnings(answer: &Value) {
    let Some(list) = answer["warnings"].as_array() else {
        return;
    };
    let _ = WARNINGS.try_with(|all| {
        let mut all = all.borrow_mut();
        for text in list.iter().filter_map(Value::as_str) {
            let mut end = text.len().min(MAX_WARNING_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let text = text.get(..end).unwrap_or_default();
            if all.len() < MAX_WARNINGS && !all.iter().any(|w| w == text) {
                all.push(text.to_string());
            }
        }
    });
}

/// A `Warning` header value: code 299, agent `-`, the text quoted with
/// `"` and `\` escaped and control characters as spaces.
pub fn warning_header(text: &str) -> String {
    let mut value = String::with_capacity(text.len() + 8);
    value.push_str("299 - \"");
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                value.push('\\');
                value.push(c);
            }
            c if c.is_control() => value.push(' '),
            c => value.push(c),
        }
    }
    value.push('"');
    value
}

/// Calls every matching webhook; the first denial or failure (under
/// failurePolicy Fail) refuses the request. Warnings of the answers are
/// kept for the response (see [`with_warnings`]).
pub async fn review(
    p: &Planned,
    caller: Option<&Caller>,
    hooks: &[Hook],
    dry_run: bool,
) -> Result<(), ApiError> {
    // Match conditions that cannot be evaluated refuse the request before
    // any webhook is called (kube-apiserver evaluates them all first);
    // under failurePolicy Ignore that webhook is skipped.
    let unevaluated: Vec<&str> = hooks
        .iter()
        .filter(|h| !h.fail_open)
        .filter_map(|h| h.condition_error.as_deref())
        .collect();
    if !unevaluated.is_empty() {
        return Err(ApiError::forbidden(format!(
            "{} {:?} is forbidden: {}",
            crate::status::qualified(&p.res.plural, &p.res.group),
            p.name,
            unevaluated.join("; ")
        )));
    }
    let body = review_request(p, caller, dry_run);
    for hook in hooks.iter().filter(|h| h.condition_error.is_none()) {
        let answer = match &hook.url {
            Some(url) => call(url, hook.ca_bundle.as_deref(), &body, hook.timeout).await,
            None => Err("the webhook's service has no endpoints: kudo-sandbox runs no pods, so it calls only clientConfig.url webhooks (as an API server calls a service with no ready pods, it fails)".to_string()),
        };
        match answer {
            Ok(resp) => {
                let r = &resp["response"];
                note_warnings(r);
                if r["allowed"].as_bool() == Some(true) {
                    continue;
                }
                let message = r["status"]["message"].as_str().unwrap_or("no reason given");
                let code = r["status"]["code"]
                    .as_u64()
                    .and_then(|c| u16::try_from(c).ok())
                    .unwrap_or(403);
                let mut e = ApiError::forbidden(format!(
                    "admission webhook \"{}\" denied the request: {message}",
                    hook.name
                ));
                if (400..600).contains(&code) {
                    e.code = code;
                }
                if let Some(reason) = r["status"]["reason"].as_str().filter(|r| !r.is_empty()) {
                    e.reason = match reason {
                        "Invalid" => "Invalid",
                        "BadRequest" => "BadRequest",
                        _ => "Forbidden",
                    };
                }
                return Err(e);
            }
            Err(why) if hook.fail_open => {
                tracing::warn!(webhook = %hook.name, error = %why, "webhook failed; ignored by failurePolicy");
            }
            Err(why) => return Err(ApiError::webhook_failed(&hook.name, &why)),
        }
    }
    Ok(())
}

fn tls_config(ca_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = ca_pem.ok_or(
        "no caBundle in clientConfig: the sandbox cannot verify the webhook's certificate",
    )?;
    let mut reader = std::io::BufReader::new(pem);
    for cert in rustls_pemfile::certs(&mut reader) {
        let cert = cert.map_err(|e| format!("caBundle is not valid PEM: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("caBundle certificate rejected: {e}"))?;
    }
    if roots.is_empty() {
        return Err("caBundle contains no certificates".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// POSTs a JSON body and returns the JSON answer.
pub async fn call(
    url: &str,
    ca_pem: Option<&[u8]>,
    body: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    match tokio::time::timeout(timeout, call_inner(url, ca_pem, body)).await {
        Ok(r) => r.map_err(|e| format!("failed to call webhook: Post \"{url}\": {e}")),
        Err(_) => Err(format!(
            "failed to call webhook: Post \"{url}\": context deadline exceeded (timeout {}s)",
            timeout.as_secs()
        )),
    }
}

async fn call_inner(url: &str, ca_pem: Option<&[u8]>, body: &Value) -> Result<Value, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    let host = uri.host().ok_or("URL has no host")?.to_string();
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        other => return Err(format!("unsupported URL scheme {other:?}")),
    };
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    let req = Request::post(path)
        .header(header::HOST, format!("{host}:{port}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .map_err(|e| e.to_string())?;
    let resp = if https {
        let config = tls_config(ca_pem)?;
        let name = rustls_pki_types::ServerName::try_from(host.clone())
            .map_err(|e| format!("invalid server name: {e}"))?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("tls: {e}"))?;
        send(TokioIo::new(tls), req).await?
    } else {
        send(TokioIo::new(tcp), req).await?
    };
    serde_json::from_slice(&resp)
        .map_err(|e| format!("the webhook's answer is not an AdmissionReview: {e}"))
}

async fn send<IO>(io: IO, req: Request<Full<Bytes>>) -> Result<Bytes, String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if !status.is_success() {
        return Err(format!("the webhook answered HTTP {status}"));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_rules_distinguish_subresources() {
        let rules = json!(["instances"]);
        assert!(resource_matches(&rules, "instances", None));
        assert!(!resource_matches(&rules, "instances", Some("status")));
        assert!(resource_matches(
            &json!(["*/*"]),
            "instances",
            Some("status")
        ));
        assert!(resource_matches(
            &json!(["instances/status"]),
            "instances",
            Some("status")
        ));
    }

    #[test]
    fn warning_headers_quote_the_text_as_kube_apiserver_does() {
        assert_eq!(
            warning_header("plan \"update\" will wait\nat 22:00 \\o/"),
            "299 - \"plan \\\"update\\\" will wait at 22:00 \\\\o/\""
        );
    }

    #[tokio::test]
    async fn warnings_are_kept_once_each_and_bounded() {
        let (_, warnings) = with_warnings(async {
            for _ in 0..3 {
                note_warnings(&json!({"warnings": ["a", "a", "b"]}));
            }
            note_warnings(&json!({"warnings": ["é".repeat(MAX_WARNING_BYTES)]}));
            for i in 0..100 {
                note_warnings(&json!({"warnings": [format!("w{i}")]}));
            }
        })
        .await;
        assert_eq!(warnings.len(), MAX_WARNINGS);
        assert_eq!(warnings[..2], ["a", "b"]);
        assert_eq!(warnings[2].len(), MAX_WARNING_BYTES);
    }

    #[test]
    fn label_selectors_support_expressions() {
        let labels = json!({"env": "dev"});
        assert!(label_selector_matches(
            &json!({"matchLabels": {"env": "dev"}}),
            &labels
        ));
        assert!(!label_selector_matches(
            &json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}),
            &labels
        ));
        assert!(label_selector_matches(&Value::Null, &labels));
    }
}
