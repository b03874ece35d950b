//! A real HTTP/1.1 server on loopback for tests (feature `test-support`):
//! each connection's request is handed to a handler that answers with a
//! body, a status, a redirect, a trickle or an endless stream, over plain
//! TCP or TLS with a CA the test trusts. It runs on its own thread and
//! runtime, so synchronous tests (the CLI's) can use it too. Not for
//! production: it reads one request per connection and closes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How to answer.
pub enum Reply {
    /// A status and a body (Content-Length set).
    Body(u16, Vec<u8>),
    /// Extra headers, then as `Body`.
    WithHeaders(u16, Vec<(String, String)>, Vec<u8>),
    /// A redirect (302) to the location.
    Redirect(String),
    /// `body` one byte every `pause`, with its Content-Length.
    Trickle(Vec<u8>, Duration),
    /// Zeros without end and without Content-Length.
    Endless,
    /// Claims `n` bytes of Content-Length, sends them.
    Sized(u64),
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A running server; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub tls: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// `http://127.0.0.1:PORT` (or https).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Plain HTTP with `handler`.
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::spawn(Arc::new(handler), None)
    }

    /// HTTPS with a certificate for 127.0.0.1 and localhost issued by a
    /// fresh CA, whose PEM is returned.
    pub fn start_tls(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> (Self, String) {
        let ca = kudo_certs::CertificateAuthority::generate().unwrap();
        let serving = ca.issue(&kudo_certs::local_sans()).unwrap();
        use rustls::pki_types::pem::PemObject;
        let certs: Vec<_> =
            rustls::pki_types::CertificateDer::pem_slice_iter(serving.cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .unwrap();
        let key =
            rustls::pki_types::PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        (
            Self::spawn(Arc::new(handler), Some(acceptor)),
            ca.cert_pem().to_string(),
        )
    }

    /// Serves the files of `dir` (404 for anything else).
    pub fn serve_dir(dir: &Path) -> Self {
        let dir = dir.to_path_buf();
        Self::start(move |seen| file_reply(&dir, &seen.path))
    }

    fn spawn(handler: Arc<Handler>, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let is_tls = tls.is_some();
        let seen_in = seen.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let (handler, seen, tls) = (handler.clone(), seen_in.clone(), tls.clone());
                            tokio::spawn(async move {
                                match tls {
                                    Some(acceptor) => {
                                        if let Ok(stream) = acceptor.accept(stream).await {
                                            serve(stream, &*handler, &seen).await;
                                        }
                                    }
                                    None => serve(stream, &*handler, &seen).await,
                                }
                            });
                        }
                    }
                }
            });
        });
        Self {
            addr,
            tls: is_tls,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A file of `dir` named by a request path, or 404.
pub fn file_reply(dir: &Path, path: &str) -> Reply {
    let rel = path
        .split('?')
        .next()
        .unwrap_or_default()
        .trim_start_matches('/');
    if rel.split('/').any(|p| p == "..") {
        return Reply::Body(400, Vec::new());
    }
    let file: PathBuf = dir.join(rel);
    match std::fs::read(&file) {
        Ok(bytes) => Reply::Body(200, bytes),
        Err(_) => Reply::Body(404, b"not found".to_vec()),
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    handler: &Handler,
    seen: &Mutex<Vec<Seen>>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let request = Seen {
        method: first.next().unwrap_or_default().to_string(),
        path: first.next().unwrap_or_default().to_string(),
        headers: lines
            .take_while(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
    };
    seen.lock().unwrap().push(request.clone());
    let reply = handler(&request);
    let _ = write_reply(&mut stream, reply).await;
    let _ = stream.shutdown().await;
}

async fn write_reply<S: AsyncWrite + Unpin>(stream: &mut S, reply: Reply) -> std::io::Result<()> {
    let head = |status: u16, length: Option<u64>, extra: &[(String, String)]| {
        let mut h = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
        if let Some(n) = length {
            h.push_str(&format!("Content-Length: {n}\r\n"));
        }
        for (k, v) in extra {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        h.into_bytes()
    };
    match reply {
        Reply::Body(status, body) => {
            stream
                .write_all(&head(status, Some(body.len() as u64), &[]))
                .await?;
            stream.write_all(&body).await
        }
        Reply::WithHeaders(status, extra, body) => {
            stream
                .write_all(&head(status, Some(body.len() as u64), &extra))
                .await?;
            stream.write_all(&body).await
        }
        Reply::Redirect(location) => {
            stream
                .write_all(&head(302, Some(0), &[("Location".into(), location)]))
                .await
        }
        Reply::Trickle(body, pause) => {
            stream
                .write_all(&head(200, Some(body.len() as u64), &[]))
                .await?;
            for byte in body {
                stream.write_all(&[byte]).await?;
                stream.flush().await?;
                tokio::time::sleep(pause).await;
            }
            Ok(())
        }
        Reply::Endless => {
            stream.write_all(&head(200, None, &[])).await?;
            let chunk = vec![0u8; 64 * 1024];
            loop {
                stream.write_all(&chunk).await?;
            }
        }
        Reply::Sized(n) => {
            stream.write_all(&head(200, Some(n), &[])).await?;
            let chunk = vec![0u8; 64 * 1024];
            let mut left = n;
            while left > 0 {
                let take = left.min(chunk.len() as u64) as usize;
                stream.write_all(&chunk[..take]).await?;
                left -= take as u64;
            }
            Ok(())
        }
    }
}

/// Debian's `docker-registry` (the distribution registry) on a free
/// loopback port with its storage in a temporary folder; killed when
/// dropped. Panics, saying how to install it, when the binary is missing.
pub struct DockerRegistry {
    pub addr: SocketAddr,
    pub storage: tempfile::TempDir,
    child: std::process::Child,
}

/// Where Debian installs the registry.
pub const DOCKER_REGISTRY: &str = "/usr/bin/docker-registry";

impl DockerRegistry {
    pub fn start() -> Self {
        let binary =
            std::env::var("KUDO_DOCKER_REGISTRY").unwrap_or_else(|_| DOCKER_REGISTRY.to_string());
        if !Path::new(&binary).exists() {
            panic!(
                "{binary} not found: the OCI tests need Debian's docker-registry package \
                 (`apt-get update && apt-get install -y docker-registry`; `make test` installs it)"
            );
        }
        let storage = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let config = storage.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                storage.path().join("data").display()
            ),
        )
        .unwrap();
        let child = std::process::Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let registry = Self {
            addr,
            storage,
            child,
        };
        for _ in 0..200 {
            if std::net::TcpStream::connect(addr).is_ok() {
                return registry;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not listen on {addr} within 10 s");
    }

    /// `oci://127.0.0.1:PORT/NAMESPACE`.
    pub fn namespace(&self, ns: &str) -> String {
        format!("oci://{}/{ns}", self.addr)
    }

    /// The files of every stored blob (to tamper with in tests).
    pub fn blob_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.storage.path().join("data")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.file_name().is_some_and(|n| n == "data")
                    && path.to_string_lossy().contains("/blobs/")
                {
                    out.push(path);
                }
            }
        }
        out
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
