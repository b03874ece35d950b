//! deploy/webhook.yaml, deploy/service.yaml and deploy/certificate.yaml must
//! say exactly what the builders in `kudo_certs` produce (which
//! `kubectl kudo init` uses), so the two ways to install cannot drift.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Service;
use kudo_certs::{
    DEFAULT_NAMESPACE, WebhookTarget, cert_manager_objects, inject_ca_from_cert_manager,
    webhook_configuration, webhook_service,
};
use pretty_assertions::assert_eq;
use serde_json::Value;

fn deploy_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compared as JSON values so formatting and key order do not matter.
fn as_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn webhook_yaml_matches_the_builder_apart_from_the_ca_bundle() {
    let mut from_file: ValidatingWebhookConfiguration =
        serde_saphyr::from_str(&deploy_file("webhook.yaml")).unwrap();
    for hook in from_file.webhooks.iter_mut().flatten() {
        // cert-manager's CA injector (or kubectl kudo init) fills it.
        hook.client_config.ca_bundle = None;
    }
    let mut built = webhook_configuration(None, &WebhookTarget::in_cluster(DEFAULT_NAMESPACE));
    inject_ca_from_cert_manager(&mut built, DEFAULT_NAMESPACE);
    assert_eq!(as_json(&from_file), as_json(&built));
}

#[test]
fn service_yaml_matches_the_builder() {
    let from_file: Service = serde_saphyr::from_str(&deploy_file("service.yaml")).unwrap();
    assert_eq!(
        as_json(&from_file),
        as_json(&webhook_service(DEFAULT_NAMESPACE))
    );
}

#[test]
fn certificate_yaml_matches_the_builder() {
    let from_file: Vec<Value> =
        serde_saphyr::from_str_multiple(&deploy_file("certificate.yaml")).unwrap();
    assert_eq!(from_file, cert_manager_objects(DEFAULT_NAMESPACE));
}
