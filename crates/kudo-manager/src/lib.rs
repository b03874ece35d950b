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

pub mod webhook;
