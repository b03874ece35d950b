//! The HTTPS side of the webhook bench: the bare rustls + hyper server
//! (the ceiling), and a concurrent hyper client measuring throughput
//! (closed loop) and latency at a fixed rate (open loop).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use kudo_manager::webhook::{LocalTls, Reviewer, StaticOperatorVersions};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::admission::review_request;

// ----- servers -----

pub(crate) fn bare_tls_config(tls: &LocalTls) -> Arc<rustls::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(&tls.cert_path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(&tls.key_path).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// What the bare server answers with.
#[derive(Clone)]
pub(crate) enum Answer {
    /// The same bytes every time: the transport alone (the ceiling).
    Fixed(Bytes),
    /// The webhook's `Reviewer` on the body: the review's cost under load
    /// through the bare transport (a diagnostic: the webhook's distance to
    /// it is what the webhook server's own machinery costs).
    Review(Arc<Reviewer<StaticOperatorVersions>>),
    /// `Work` on the body, then the fixed answer: a part of a review's
    /// cost under load.
    After(Work, Bytes),
}

/// Part of a review's work, done by a diagnostic server before it answers
/// the fixed bytes (and timed alone by criterion).
#[derive(Clone, Copy)]
pub(crate) enum Work {
    /// serde_json reads the body as JSON and keeps nothing: the floor
    /// under any review that reads the request.
    JsonSkip,
    /// kube's `AdmissionReview<DynamicObject>`: what a webhook built on
    /// kube-rs's types pays before its first rule.
    KubeDecode,
}

impl Work {
    /// Does the work; whether the body was read.
    pub(crate) fn run(self, body: &[u8]) -> bool {
        match self {
            Self::JsonSkip => serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok(),
            Self::KubeDecode => {
                serde_json::from_slice::<AdmissionReview<DynamicObject>>(body).is_ok()
            }
        }
    }
}

impl Answer {
    /// By value: the server clones its `Answer` per request, and the
    /// ceiling must not pay a second reference count.
    async fn reply(self, body: Bytes) -> Bytes {
        match self {
            Self::Fixed(reply) => reply,
            Self::Review(reviewer) => Bytes::from(reviewer.review_to_json(&body).await),
            Self::After(work, reply) => {
                std::hint::black_box(work.run(&body));
                reply
            }
        }
    }
}

/// rustls + hyper, reading the body and answering with `answer`.
pub(crate) async fn bare_server(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    answer: Answer,
) {
    let acceptor = TlsAcceptor::from(config);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let answer = answer.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let answer = answer.clone();
                    async move {
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let reply = answer.reply(body.unwrap_or_default()).await;
                        let mut response = http::Response::new(Full::new(reply));
                        response.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

// ----- client -----

/// A client connection: HTTP/1.1, one request at a time (how the API
/// server calls a webhook behind a Service), or HTTP/2 with requests
/// multiplexed as streams (how it calls one at a loopback URL).
pub(crate) enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// Another stream on the same HTTP/2 connection (`None` for HTTP/1.1).
    fn stream(&self) -> Option<Self> {
        match self {
            Self::H1(_) => None,
            Self::H2(send) => Some(Self::H2(send.clone())),
        }
    }
}

/// `WEBHOOK_BENCH_PROTOCOL=h2`: the client speaks HTTP/2.
pub(crate) fn use_h2() -> bool {
    std::env::var("WEBHOOK_BENCH_PROTOCOL").as_deref() == Ok("h2")
}

pub(crate) async fn connect(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Sender {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let h2 = use_h2();
    let mut config = (*config).clone();
    let protocol: &[u8] = if h2 { b"h2" } else { b"http/1.1" };
    config.alpn_protocols = vec![protocol.to_vec()];
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let io = TokioIo::new(tls);
    if h2 {
        let (send, conn) = http2::handshake(TokioExecutor::new(), io).await.unwrap();
        tokio::spawn(conn);
        Sender::H2(send)
    } else {
        let (send, conn) = http1::handshake(io).await.unwrap();
        tokio::spawn(conn);
        Sender::H1(send)
    }
}

pub(crate) async fn send(sender: &mut Sender, body: &Bytes) -> Bytes {
    let response = match sender {
        Sender::H1(send) => {
            send.ready().await.unwrap();
            send.send_request(review_request(body.clone())).await
        }
        Sender::H2(send) => {
            send.ready().await.unwrap();
            send.send_request(review_request(body.clone())).await
        }
    }
    .unwrap();
    assert_eq!(response.status(), 200);
    response.into_body().collect().await.unwrap().to_bytes()
}

/// Closed loop: every connection sends back to back; reviews per second.
pub(crate) async fn throughput(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    body: Bytes,
    connections: u64,
    duration: Duration,
) -> f64 {
    // HTTP/2: `WEBHOOK_BENCH_STREAMS` requests in flight per connection.
    let streams = crate::env_or("WEBHOOK_BENCH_STREAMS", 1).max(1);
    let mut senders = Vec::new();
    for _ in 0..connections {
        let sender = connect(addr, config.clone()).await;
        for _ in 1..streams {
            senders.extend(sender.stream());
        }
        senders.push(sender);
    }
    let done = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for mut sender in senders {
        let (done, counting, stop, body) =
            (done.clone(), counting.clone(), stop.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                send(&mut sender, &body).await;
                if counting.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // warm-up
    counting.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    let completed = done.load(Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    completed as f64 / elapsed.as_secs_f64()
}

pub(crate) struct Latencies {
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) p999: Duration,
    pub(crate) max: Duration,
    pub(crate) achieved_rate: f64,
}

/// Open loop at `rate` reviews/s over a pool of connections.
pub(crate) async fn latency_at_rate(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    body: Bytes,
    rate: u64,
    duration: Duration,
) -> Latencies {
    let pool: Vec<_> = {
        let mut pool = Vec::new();
        for _ in 0..16 {
            pool.push(Arc::new(Mutex::new(connect(addr, config.clone()).await)));
        }
        pool
    };
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let total = (duration.as_secs_f64() * rate as f64) as u64;
    let warmup = rate / 2;
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..(total + warmup) {
        let scheduled = start + interval.mul_f64(i as f64);
        tokio::time::sleep_until(scheduled).await;
        let connection = pool[(i as usize) % pool.len()].clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            // From the moment the request is issued: waiting for a busy
            // connection counts, the dispatcher's timer granularity does not.
            let issued = Instant::now();
            let mut sender = connection.lock().await;
            send(&mut sender, &body).await;
            (i, issued.elapsed())
        }));
    }
    let mut samples = Vec::with_capacity(total as usize);
    for task in tasks {
        let (i, latency) = task.await.unwrap();
        if i >= warmup {
            samples.push(latency);
        }
    }
    let measured = start.elapsed().as_secs_f64() - warmup as f64 / rate as f64;
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Latencies {
        p50: at(0.50),
        p99: at(0.99),
        p999: at(0.999),
        max: *samples.last().unwrap(),
        achieved_rate: samples.len() as f64 / measured,
    }
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}
