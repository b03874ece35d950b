//! How the webhook server runs: address, certificate files, limits and
//! budgets, with the manager's defaults.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::admin::Readiness;
use crate::metrics::Metrics;

/// Largest request body accepted (the API server's own limit for an object
/// is about 1.5 MiB; an AdmissionReview carries two of them).
pub const MAX_BODY_BYTES: u64 = 3 * 1024 * 1024;

/// Connections served at once by default: the API server keeps a few per
/// replica; each idle TLS connection costs about 11 KB.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Reviews in flight at once by default: each may hold a body of up to
/// [`MAX_BODY_BYTES`], so bodies take at most 192 MiB.
pub const DEFAULT_MAX_REVIEWS: usize = 64;

/// How the webhook server runs.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Address to listen on, e.g. `0.0.0.0:9443` in a Pod, `127.0.0.1:P` locally.
    pub addr: SocketAddr,
    /// PEM certificate chain (`tls.crt` of the mounted Secret).
    pub cert_path: PathBuf,
    /// PEM private key (`tls.key`).
    pub key_path: PathBuf,
    /// Bodies larger than this are refused with 413.
    pub max_body_bytes: u64,
    /// Budget for reading OperatorVersions in one review.
    pub read_timeout: Duration,
    /// Budget for one whole request; well under the API server's wait
    /// (`timeoutSeconds: 5`, at most 10 s).
    pub request_timeout: Duration,
    /// How long open connections may finish after shutdown is requested.
    pub shutdown_grace: Duration,
    /// A connection that starts no request (completes no request head) for
    /// this long is closed, and at the latest after twice this long. Idle
    /// keep-alive time counts: keep it above the API server's 90 s.
    pub idle_period: Duration,
    /// Connections open at once (TLS handshakes included); a connection
    /// accepted beyond it is closed at once.
    pub max_connections: usize,
    /// Reviews in flight at once; one more is answered 503 with
    /// `Retry-After`.
    pub max_reviews: usize,
    /// A TLS handshake that takes longer is abandoned (its connection
    /// closed).
    pub handshake_timeout: Duration,
    /// PEM CA certificate(s) of the clients served: when set, a client must
    /// present a certificate signed by one of them (the API server's, see
    /// the README); when `None`, any client is served.
    pub client_ca_path: Option<PathBuf>,
    /// Where reviews are counted and timed (the manager's `/metrics`).
    pub metrics: Option<Metrics>,
    /// Told when the server serves (certificate loaded, listening) and stops.
    pub readiness: Option<Readiness>,
    /// Budgets of the renders that check new parameter values (the
    /// manager's own).
    pub render_limits: kudo_package::render::RenderLimits,
    /// Whether whoever writes an Instance may act as the account it runs
    /// as; `None`: not checked.
    pub acting_as: Option<super::ActingAs>,
}

/// What reviews check besides the admission rules (the manager's settings).
#[derive(Clone, Debug, Default)]
pub struct ReviewChecks {
    /// Budgets of the renders that check new parameter values.
    pub render_limits: kudo_package::render::RenderLimits,
    /// Whom Instances that name no account run as; when set, whoever writes
    /// an Instance must be allowed to act as its account.
    pub write_as: Option<crate::identity::WriteAs>,
}

/// Who watches the webhook server: metrics and `/readyz`.
#[derive(Clone, Default)]
pub struct Observers {
    /// Where reviews are counted and timed.
    pub metrics: Option<Metrics>,
    /// Told when the server serves and stops.
    pub readiness: Option<Readiness>,
}

impl WebhookConfig {
    /// Defaults: 3 MiB bodies, 3 s to read OperatorVersions, 4 s per
    /// request, connections closed after 2-4 minutes without a request,
    /// [`DEFAULT_MAX_CONNECTIONS`] connections and [`DEFAULT_MAX_REVIEWS`]
    /// reviews at once, 10 s per TLS handshake, no client certificates.
    pub fn new(
        addr: SocketAddr,
        cert_path: impl Into<PathBuf>,
        key_path: impl Into<PathBuf>,
    ) -> Self {
        Self {
            addr,
            cert_path: cert_path.into(),
            key_path: key_path.into(),
            max_body_bytes: MAX_BODY_BYTES,
            read_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(4),
            shutdown_grace: Duration::from_secs(5),
            // Above the API server's own idle timeout (client-go closes idle
            // connections after 90 s): when the server closes first, a review
            // sent at that moment fails and its POST is not retried.
            idle_period: Duration::from_secs(120),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_reviews: DEFAULT_MAX_REVIEWS,
            handshake_timeout: Duration::from_secs(10),
            client_ca_path: None,
            metrics: None,
            readiness: None,
            render_limits: kudo_package::render::RenderLimits::default(),
            acting_as: None,
        }
    }

    /// Refuse Instance writes by users who may not act as the Instance's
    /// account, asking the API server with `client`.
    #[must_use]
    pub fn with_acting_as(
        mut self,
        client: kube::Client,
        write_as: crate::identity::WriteAs,
    ) -> Self {
        let reviews = std::sync::Arc::new(super::SubjectAccessReviews::new(client));
        self.acting_as = Some(super::ActingAs::new(write_as, reviews));
        self
    }

    /// Check new parameter values within these render budgets.
    #[must_use]
    pub fn with_render_limits(mut self, limits: kudo_package::render::RenderLimits) -> Self {
        self.render_limits = limits;
        self
    }

    /// Serve at most `max` connections at once (at least one).
    #[must_use]
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Serve only clients with a certificate signed by the CA in `path`.
    #[must_use]
    pub fn with_client_ca(mut self, path: impl Into<PathBuf>) -> Self {
        self.client_ca_path = Some(path.into());
        self
    }

    /// Count and time reviews in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Tell `readiness` when the server serves and when it stops.
    #[must_use]
    pub fn with_readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = Some(readiness);
        self
    }

    /// `tls.crt` and `tls.key` in `dir` (the layout of a mounted
    /// `kubernetes.io/tls` Secret).
    pub fn from_cert_dir(addr: SocketAddr, dir: &Path) -> Self {
        Self::new(addr, dir.join("tls.crt"), dir.join("tls.key"))
    }
}
