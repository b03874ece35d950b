//! # kudo-manager
//!
//! The kudo-rs manager: a kube-runtime controller that runs plans
//! (observe → `kudo_engine::decide` → execute), the executor (server-side
//! apply, delete, health), the validating admission webhook over TLS,
//! metrics and health endpoints, leader election, and `dev` mode (sandbox +
//! controller + webhook in one process).
//!
//! ```text
//!  kube-apiserver ──watch──► controller ──► engine::decide ──► executor (SSA apply / delete / health)
//!        │                                                          │
//!        └──AdmissionReview──► webhook ──► engine::admission::review │
//! ```

pub mod classify;
pub mod clock;
pub mod error;
pub mod identity;
pub mod webhook;

pub use error::{Error, Result};
pub mod admin;
mod bounded;
pub mod context;
pub mod controller;
pub mod dependencies;
#[cfg(feature = "dev")]
pub mod dev;
pub mod discovery;
pub mod executor;
pub mod install;
pub mod kubeconfig;
pub mod leader;
pub mod logging;
pub mod maintenance;
pub mod manager;
pub mod metrics;
pub mod namespace_hold;
pub mod ov_verify;
mod own_writes;
mod readiness;
pub mod reconcile;
pub mod recovery;
pub mod render_pool;
pub mod repositories;
pub mod retry;
pub mod settings;
pub mod status_patch;
pub mod upgrades;
