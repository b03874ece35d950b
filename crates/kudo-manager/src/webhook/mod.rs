//! The validating admission webhook: `kudo_engine::admission::review`
//! (Instances) and `kudo_engine::maintenance::validate` (the
//! MaintenanceSchedule) behind an HTTPS endpoint at
//! [`kudo_api::names::WEBHOOK_PATH`].
//!
//! ```text
//! API server ──HTTPS POST AdmissionReview v1──► server (hyper + tokio-rustls, 512 connections, 3 MiB, 4 s)
//!                                                  └─► Reviewer: decode ─► OVs (cache, live on a miss) ─► engine::admission::review
//!                                                                                          └─► allowed / denied (403) / error (400, 500)
//! ```
//!
//! The handler is a thin layer: [`Reviewer`] turns bytes into an answer
//! using an [`OperatorVersionSource`] ([`CachedOperatorVersions`] in
//! production, fixtures in tests), the server only adds TLS (optionally
//! requiring client certificates), limits and routing.
//!
//! - [`serve`] / [`serve_listener`]: the server, until a shutdown future completes.
//! - [`register_local_webhook`], [`unregister_local_webhook`], [`serve_local`]:
//!   a webhook on 127.0.0.1 registered by URL (dev and `--local-webhook`).
//! - Certificates and the configuration object: the `kudo-certs` crate.

mod acting_as;
mod answer;
mod cert_files;
mod config;
mod decode;
mod error;
mod handler;
mod instance_uses;
mod limits;
mod ov_cache;
mod ov_source;
mod register;
mod repository;
mod review;
mod schedule;
mod server;
mod tls;

pub use acting_as::{ANSWER_TTL, AccessReviews, ActingAs, SubjectAccessReviews, UserInfo};
pub use answer::ReviewVerdict;
pub use cert_files::PrivateCertDir;
pub use config::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_REVIEWS, MAX_BODY_BYTES, Observers, ReviewChecks,
    WebhookConfig,
};
pub use error::WebhookError;
pub use instance_uses::InstanceUse;
pub use ov_cache::CachedOperatorVersions;
pub use ov_source::{
    FnSource, OperatorVersionReadError, OperatorVersionSource, PodLookup, StaticOperatorVersions,
};
pub use register::{
    LocalTls, apply_webhook_configuration, register_local_webhook, serve_local,
    unregister_local_webhook, write_local_tls,
};
pub use review::Reviewer;
pub use server::{serve, serve_listener};
pub use tls::{ReloadingCertResolver, server_config};
