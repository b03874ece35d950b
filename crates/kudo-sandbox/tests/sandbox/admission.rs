use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::{configmap, start};

/// An HTTPS webhook on 127.0.0.1 that denies ConfigMaps with a `forbidden`
/// data key. Returns its URL, its CA bundle (PEM) and a call counter.
pub async fn webhook() -> (String, String, Arc<AtomicUsize>) {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_pem = key.cert.pem();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![key.cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let counter = counter.clone();
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap();
                        let request = &review["request"];
                        let deny = request["object"]["data"].get("forbidden").is_some();
                        let warn = request["object"]["data"].get("warn").cloned();
                        let mut answer = json!({
                            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                            "response": {"uid": request["uid"], "allowed": !deny,
                                         "status": {"code": 403, "message": "forbidden keys are not allowed"}}
                        });
                        if let Some(warn) = warn {
                            answer["response"]["warnings"] = json!([warn]);
                        }
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(
                            answer.to_string(),
                        ))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (
        format!("https://localhost:{port}/validate"),
        cert_pem,
        calls,
    )
}

pub fn hook_config(
    url: &str,
    ca_pem: &str,
    failure_policy: &str,
) -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({
        "metadata": {"name": "deny-forbidden"},
        "webhooks": [{
            "name": "deny.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": failure_policy, "timeoutSeconds": 2,
            "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem)},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]
        }]
    }))
    .unwrap()
}

#[tokio::test]
async fn webhook_denial_reaches_the_client() {
    let (_sb, client) = start().await;
    let (url, ca, calls) = webhook().await;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &hook_config(&url, &ca, "Fail"))
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("ok", "1"))
        .await
        .unwrap();
    let mut bad = configmap("bad", "1");
    bad.data
        .as_mut()
        .unwrap()
        .insert("forbidden".into(), "x".into());
    let err = api.create(&PostParams::default(), &bad).await.unwrap_err();
    let kube::Error::Api(s) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "admission webhook \"deny.example.com\" denied the request: forbidden keys are not allowed"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn wrong_ca_bundle_fails_closed_or_open_by_policy() {
    let (_sb, client) = start().await;
    let (url, _, calls) = webhook().await;
    let other_ca = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .unwrap()
        .cert
        .pem();
    let hooks: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    hooks
        .create(
            &PostParams::default(),
            &hook_config(&url, &other_ca, "Fail"),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 500);
    assert!(
        s.message
            .contains("failed calling webhook \"deny.example.com\""),
        "{}",
        s.message
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "an unverified server must not get the request"
    );
    hooks
        .delete("deny-forbidden", &Default::default())
        .await
        .unwrap();
    hooks
        .create(
            &PostParams::default(),
            &hook_config(&url, &other_ca, "Ignore"),
        )
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn unreachable_webhook_with_ignore_policy_lets_requests_through() {
    let (_sb, client) = start().await;
    let (_, ca, _) = webhook().await;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(
            &PostParams::default(),
            &hook_config("https://localhost:1/validate", &ca, "Ignore"),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn webhook_warnings_reach_the_client_as_warning_headers() {
    let (_sb, client) = start().await;
    let (url, ca, _) = webhook().await;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &hook_config(&url, &ca, "Fail"))
        .await
        .unwrap();
    let mut cm = configmap("warned", "1");
    cm.data
        .as_mut()
        .unwrap()
        .insert("warn".into(), "plan \"x\" will wait".into());
    let request = kube::core::Request::new("/api/v1/namespaces/default/configmaps")
        .create(&PostParams::default(), serde_json::to_vec(&cm).unwrap())
        .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let warnings: Vec<&str> = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(warnings, [r#"299 - "plan \"x\" will wait""#]);
}

/// `hook_config` whose webhook carries these `matchConditions`.
fn conditional_hook(
    url: &str,
    ca: &str,
    policy: &str,
    expression: &str,
) -> ValidatingWebhookConfiguration {
    let mut config = serde_json::to_value(hook_config(url, ca, policy)).unwrap();
    config["webhooks"][0]["matchConditions"] = json!([{"name": "who", "expression": expression}]);
    serde_json::from_value(config).unwrap()
}

fn forbidden_configmap(name: &str) -> ConfigMap {
    let mut cm = configmap(name, "1");
    cm.data
        .as_mut()
        .unwrap()
        .insert("forbidden".into(), "x".into());
    cm
}

#[tokio::test]
async fn a_false_match_condition_skips_the_webhook_and_a_true_one_calls_it() {
    let (_sb, client) = start().await;
    let (url, ca, calls) = webhook().await;
    let hooks = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    // The sandbox's administrator writes here.
    hooks
        .create(
            &PostParams::default(),
            &conditional_hook(
                &url,
                &ca,
                "Fail",
                "request.userInfo.username != 'kudo-sandbox-admin'",
            ),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &forbidden_configmap("skipped"))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    hooks
        .replace("deny-forbidden", &PostParams::default(), &{
            let mut c = conditional_hook(
                &url,
                &ca,
                "Fail",
                "request.userInfo.username == \"kudo-sandbox-admin\"",
            );
            c.metadata.resource_version = hooks
                .get("deny-forbidden")
                .await
                .unwrap()
                .metadata
                .resource_version;
            c
        })
        .await
        .unwrap();
    let err = api
        .create(&PostParams::default(), &forbidden_configmap("called"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("forbidden keys are not allowed"),
        "{err}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_match_condition_the_sandbox_cannot_evaluate_follows_the_failure_policy() {
    let (_sb, client) = start().await;
    let (url, ca, calls) = webhook().await;
    let hooks = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    hooks
        .create(
            &PostParams::default(),
            &conditional_hook(&url, &ca, "Fail", "has(request.userInfo.extra)"),
        )
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let err = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 403);
    assert!(
        status.message.starts_with(
            "configmaps \"a\" is forbidden: matchCondition \"who\": kudo-sandbox evaluates only"
        ),
        "{err}"
    );
    hooks
        .delete("deny-forbidden", &Default::default())
        .await
        .unwrap();
    hooks
        .create(
            &PostParams::default(),
            &conditional_hook(&url, &ca, "Ignore", "has(request.userInfo.extra)"),
        )
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("b", "1"))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
