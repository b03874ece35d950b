//! The webhook over real TLS: a client that trusts only the generated CA,
//! certificate rotation without restart, no plaintext, body limit, the
//! connection cap, client certificates, shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use kudo_api::names::WEBHOOK_PATH;
use kudo_certs::{CertificateAuthority, local_sans};
use kudo_manager::webhook::{LocalTls, WebhookConfig, serve_listener, write_local_tls};
use rustls::pki_types::ServerName;
use serde_json::Value;
use support::admission::{fixture, operator_versions, review_request};
use support::tls_client::{ALL, client_config, client_config_with_cert};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), kudo_manager::webhook::WebhookError>>,
}

async fn start(tls: &LocalTls) -> Running {
    start_with(tls, |_| {}).await
}

async fn start_with(tls: &LocalTls, adjust: impl FnOnce(&mut WebhookConfig)) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = WebhookConfig::new(addr, &tls.cert_path, &tls.key_path);
    adjust(&mut config);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_listener(
        listener,
        config,
        operator_versions(),
        async {
            let _ = stopped.await;
        },
    ));
    Running { addr, stop, task }
}

async fn post(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<(u16, Bytes), String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let tls = TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let response = send
        .send_request(review_request(body))
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok((status, body.to_bytes()))
}

#[tokio::test]
async fn a_denial_travels_over_tls_to_a_client_trusting_only_the_generated_ca() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let (status, body) = post(
        server.addr,
        client_config(&tls.ca_pem, ALL),
        fixture("deny/create-operatorversion-not-found.json"),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let review: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(review["response"]["uid"], "d-01");
    assert_eq!(review["response"]["allowed"], false);
    let _ = server.stop.send(());
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn tls_1_2_clients_are_served_too() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let only_12 = client_config(&tls.ca_pem, &[&rustls::version::TLS12]);
    let (status, _) = post(server.addr, only_12, fixture("allow/create-valid.json"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let _ = server.stop.send(());
}

/// The API server speaks HTTP/2 to webhooks when ALPN offers it.
#[tokio::test]
async fn http2_clients_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let mut config = (*client_config(&tls.ca_pem, ALL)).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    // No content-length: the body arrives as h2 DATA frames only.
    let request = http::Request::post(format!("https://127.0.0.1{WEBHOOK_PATH}"))
        .body(http_body_util::StreamBody::new(futures::stream::iter([
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(fixture(
                "deny/create-operatorversion-not-found.json",
            )))),
        ])))
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(review["response"]["uid"], "d-01");
    let _ = server.stop.send(());
}

#[tokio::test]
async fn plaintext_http_gets_no_http_answer() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"POST /validate-kudo-dev-v1beta1-instance HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer)).await;
    assert!(
        !answer.starts_with(b"HTTP/"),
        "plaintext request was answered: {}",
        String::from_utf8_lossy(&answer)
    );
    let _ = server.stop.send(());
}

#[tokio::test]
async fn a_connection_that_starts_no_request_is_closed_and_a_busy_one_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let period = Duration::from_millis(200);
    let server = start_with(&tls, |config| config.idle_period = period).await;
    let config = client_config(&tls.ca_pem, ALL);

    // Handshake done, no request head: closed after one or two periods.
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let mut silent = TlsConnector::from(config.clone())
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut byte))
        .await
        .expect("an idle connection was still open after 10 s");
    assert!(matches!(read, Ok(0) | Err(_)), "got data: {read:?}");

    // One keep-alive connection with a request every half period, over
    // several periods: every request is answered on it.
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let busy = TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(busy))
        .await
        .unwrap();
    tokio::spawn(conn);
    for _ in 0..10 {
        let request = review_request(fixture("deny/param-update-while-plan-runs.json"));
        let response = send.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
        tokio::time::sleep(period / 2).await;
    }
    let _ = server.stop.send(());
}

/// A completed TLS handshake that sends nothing: it holds a connection slot.
async fn idle_tls(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_while_open_ones_keep_answering_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start_with(&tls, |config| config.max_connections = 8).await;
    let config = client_config(&tls.ca_pem, ALL);
    let body = fixture("deny/param-update-while-plan-runs.json");

    // One keep-alive connection that reviews, and seven idle ones: the cap.
    let busy = idle_tls(server.addr, config.clone()).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(busy))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut idle = Vec::new();
    for _ in 0..7 {
        idle.push(idle_tls(server.addr, config.clone()).await.unwrap());
    }

    // The ninth is closed before its handshake.
    let ninth = post(server.addr, config.clone(), body.clone()).await;
    assert!(ninth.is_err(), "a ninth connection was served: {ninth:?}");

    // The open connection still gets its reviews answered.
    for _ in 0..3 {
        let response = send
            .send_request(review_request(body.clone()))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let answer = response.into_body().collect().await.unwrap().to_bytes();
        let review: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(review["response"]["allowed"], false, "{review}");
    }

    // Once the idle ones close, a new connection is served (the server
    // frees a slot when it sees the close; try until it has).
    drop(idle);
    let mut served = None;
    for _ in 0..200 {
        match post(server.addr, config.clone(), body.clone()).await {
            Ok(answer) => {
                served = Some(answer);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let (status, _) = served.expect("no connection was served after the idle ones closed");
    assert_eq!(status, 200);
    let _ = server.stop.send(());
}

#[tokio::test]
async fn with_a_client_ca_only_clients_with_a_certificate_it_signed_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let client_ca = CertificateAuthority::generate().unwrap();
    let client_ca_path = dir.path().join("client-ca.crt");
    std::fs::write(&client_ca_path, client_ca.cert_pem()).unwrap();
    let server = start_with(&tls, |config| {
        config.client_ca_path = Some(client_ca_path.clone());
    })
    .await;
    let body = fixture("deny/create-operatorversion-not-found.json");

    let anonymous = post(server.addr, client_config(&tls.ca_pem, ALL), body.clone()).await;
    assert!(
        anonymous.is_err(),
        "served without a certificate: {anonymous:?}"
    );

    let stranger = CertificateAuthority::generate()
        .unwrap()
        .issue_client("kube-apiserver")
        .unwrap();
    let config = client_config_with_cert(&tls.ca_pem, &stranger.cert_pem, &stranger.key_pem);
    let refused = post(server.addr, config, body.clone()).await;
    assert!(
        refused.is_err(),
        "served a certificate of another CA: {refused:?}"
    );

    let apiserver = client_ca.issue_client("kube-apiserver").unwrap();
    let config = client_config_with_cert(&tls.ca_pem, &apiserver.cert_pem, &apiserver.key_pem);
    let (status, answer) = post(server.addr, config, body).await.unwrap();
    assert_eq!(status, 200);
    let review: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(review["response"]["uid"], "d-01");
    let _ = server.stop.send(());
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let body = fixture("allow/create-valid.json");
    post(server.addr, client_config(&tls.ca_pem, ALL), body.clone())
        .await
        .unwrap();

    // A new CA and serving pair replace the files (as a renewed Secret does).
    let new_ca = CertificateAuthority::generate().unwrap();
    let serving = new_ca.issue(&local_sans()).unwrap();
    let staged = dir.path().join("staged");
    std::fs::create_dir(&staged).unwrap();
    std::fs::write(staged.join("tls.key"), &serving.key_pem).unwrap();
    std::fs::write(staged.join("tls.crt"), &serving.cert_pem).unwrap();
    std::fs::rename(staged.join("tls.key"), &tls.key_path).unwrap();
    std::fs::rename(staged.join("tls.crt"), &tls.cert_path).unwrap();

    let (status, _) = post(
        server.addr,
        client_config(new_ca.cert_pem(), ALL),
        body.clone(),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let old_trust = post(server.addr, client_config(&tls.ca_pem, ALL), body).await;
    assert!(
        old_trust.is_err(),
        "the old CA must no longer verify the server"
    );
    let _ = server.stop.send(());
}

#[tokio::test]
async fn bodies_over_3_mib_are_refused_with_413() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    let (status, _) = post(
        server.addr,
        client_config(&tls.ca_pem, ALL),
        vec![b' '; 3 * 1024 * 1024 + 1],
    )
    .await
    .unwrap();
    assert_eq!(status, 413);
    let _ = server.stop.send(());
}

#[tokio::test]
async fn serving_stops_when_shutdown_completes() {
    let dir = tempfile::tempdir().unwrap();
    let tls = write_local_tls(dir.path()).unwrap();
    let server = start(&tls).await;
    server.stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), server.task)
        .await
        .expect("serve did not return after shutdown");
    result.unwrap().unwrap();
    assert!(
        TcpStream::connect(server.addr).await.is_err(),
        "still listening"
    );
}
