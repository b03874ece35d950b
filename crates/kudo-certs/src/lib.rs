//! Certificates and the ValidatingWebhookConfiguration for the kudo-rs
//! admission webhook, shared by `kubectl kudo init` (real clusters),
//! `kudo-manager run --local-webhook` and `kudo-manager dev` (a URL on
//! 127.0.0.1). A crate of its own so the CLI does not depend on the manager.
//!
//! A small CA signs one serving certificate; the CA certificate goes into
//! the configuration's `caBundle` so the API server trusts the webhook.
//! Everything is PEM text in and out, so callers can put it in a Secret,
//! write it to files or hand it to the manager's webhook server.

mod error;
mod generate;
mod manifests;
mod webhook_config;

pub use error::CertError;
pub use generate::{
    CertificateAuthority, ServingCertificate, VALIDITY_DAYS, local_sans, service_sans,
};
pub use manifests::{
    CA_SECRET_NAME, CERT_MANAGER_ISSUER_NAME, ca_secret, cert_manager_objects, tls_secret,
    webhook_service,
};
pub use webhook_config::{
    CERT_MANAGER_INJECT_ANNOTATION, LOCAL_WEBHOOK_CONFIGURATION_NAME, MANAGER_SERVICE_ACCOUNT,
    STATUS_WEBHOOK_NAME, WEBHOOK_CONFIGURATION_NAME, WEBHOOK_NAME, WEBHOOK_TIMEOUT_SECONDS,
    WebhookTarget, inject_ca_from_cert_manager, webhook_configuration,
};

/// Namespace kudo-rs is installed into by default (as in KUDO).
pub const DEFAULT_NAMESPACE: &str = "kudo-system";
/// Service in front of the manager's webhook port (KUDO's name).
pub const SERVICE_NAME: &str = "kudo-controller-manager-service";
/// Port the Service exposes (the API server calls it).
pub const SERVICE_PORT: i32 = 443;
/// Port the manager listens on for webhook calls inside the Pod (non-root).
pub const DEFAULT_WEBHOOK_PORT: u16 = 9443;
/// Name of the container port the Service targets.
pub const WEBHOOK_PORT_NAME: &str = "webhook-server";
/// Secret (type `kubernetes.io/tls`) holding `tls.crt`, `tls.key` and `ca.crt`
/// (KUDO's name).
pub const SECRET_NAME: &str = "kudo-webhook-server-secret";
/// cert-manager Certificate that fills [`SECRET_NAME`] in the cert-manager variant.
pub const CERTIFICATE_NAME: &str = "kudo-webhook-server-certificate";
/// Labels the manager Pods carry and the Service selects (KUDO's labels).
pub const MANAGER_POD_LABELS: [(&str, &str); 2] = [
    ("app", "kudo-manager"),
    ("control-plane", "controller-manager"),
];
