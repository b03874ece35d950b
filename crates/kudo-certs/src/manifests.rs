//! The other objects around the webhook that `kubectl kudo init` creates
//! and `deploy/` contains: the Service, the TLS Secret, and the
//! cert-manager Issuer + Certificate variant.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use super::{
    CERTIFICATE_NAME, CertificateAuthority, MANAGER_POD_LABELS, SECRET_NAME, SERVICE_NAME,
    SERVICE_PORT, ServingCertificate, VALIDITY_DAYS, WEBHOOK_PORT_NAME, service_sans,
};

/// Secret holding the CA certificate and key (`kubectl kudo init` mode).
pub const CA_SECRET_NAME: &str = "kudo-webhook-ca";
/// Issuer cert-manager uses to sign the webhook certificate.
pub const CERT_MANAGER_ISSUER_NAME: &str = "kudo-webhook-selfsigned-issuer";

fn part_of_kudo() -> BTreeMap<String, String> {
    BTreeMap::from([(
        "app.kubernetes.io/part-of".to_string(),
        "kudo-rs".to_string(),
    )])
}

/// The Service the API server calls: port 443 to the manager's
/// `webhook-server` container port.
pub fn webhook_service(namespace: &str) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(SERVICE_NAME.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(part_of_kudo()),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(
                MANAGER_POD_LABELS
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ports: Some(vec![ServicePort {
                name: Some("webhook".to_string()),
                port: SERVICE_PORT,
                protocol: Some("TCP".to_string()),
                target_port: Some(IntOrString::String(WEBHOOK_PORT_NAME.to_string())),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// The `kubernetes.io/tls` Secret the manager mounts: `tls.crt`, `tls.key`
/// and `ca.crt`.
pub fn tls_secret(
    namespace: &str,
    ca: &CertificateAuthority,
    serving: &ServingCertificate,
) -> Secret {
    let data = BTreeMap::from([
        ("tls.crt".to_string(), bytes(&serving.cert_pem)),
        ("tls.key".to_string(), bytes(&serving.key_pem)),
        ("ca.crt".to_string(), bytes(ca.cert_pem())),
    ]);
    Secret {
        metadata: ObjectMeta {
            name: Some(SECRET_NAME.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(part_of_kudo()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_string()),
        data: Some(data),
        ..Secret::default()
    }
}

/// The CA (`ca.crt`, `ca.key`) in its own Secret, not mounted anywhere, so
/// `kubectl kudo init --upgrade` can issue a new serving certificate without
/// changing `caBundle` (load it with [`CertificateAuthority::from_pem`]).
pub fn ca_secret(namespace: &str, ca: &CertificateAuthority) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(CA_SECRET_NAME.to_string()),
            namespace: Some(namespace.to_string()),
            labels: Some(part_of_kudo()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(BTreeMap::from([
            ("ca.crt".to_string(), bytes(ca.cert_pem())),
            ("ca.key".to_string(), bytes(ca.key_pem())),
        ])),
        ..Secret::default()
    }
}

fn bytes(text: &str) -> ByteString {
    ByteString(text.as_bytes().to_vec())
}

/// The cert-manager variant: a self-signed Issuer and a Certificate for the
/// Service names, written to [`SECRET_NAME`] and renewed by cert-manager a
/// month before it expires (the manager reloads the files).
pub fn cert_manager_objects(namespace: &str) -> Vec<Value> {
    let hours = VALIDITY_DAYS * 24;
    vec![
        json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {
                "name": CERT_MANAGER_ISSUER_NAME,
                "namespace": namespace,
                "labels": part_of_kudo(),
            },
            "spec": { "selfSigned": {} },
        }),
        json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {
                "name": CERTIFICATE_NAME,
                "namespace": namespace,
                "labels": part_of_kudo(),
            },
            "spec": {
                "secretName": SECRET_NAME,
                "commonName": format!("{SERVICE_NAME}.{namespace}.svc"),
                "dnsNames": service_sans(SERVICE_NAME, namespace),
                "duration": format!("{hours}h"),
                "renewBefore": "720h",
                "privateKey": { "algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always" },
                "usages": ["digital signature", "key encipherment", "server auth"],
                "issuerRef": { "kind": "Issuer", "name": CERT_MANAGER_ISSUER_NAME },
            },
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_selects_the_manager_pods_and_targets_the_named_port() {
        let service = webhook_service("kudo-system");
        let spec = service.spec.unwrap();
        assert_eq!(spec.selector.unwrap()["app"], "kudo-manager");
        let port = &spec.ports.unwrap()[0];
        assert_eq!(port.port, 443);
        assert_eq!(
            port.target_port,
            Some(IntOrString::String("webhook-server".to_string()))
        );
    }

    #[test]
    fn tls_secret_carries_the_pair_and_the_ca() {
        let ca = CertificateAuthority::generate().unwrap();
        let serving = ca
            .issue(&service_sans(SERVICE_NAME, "kudo-system"))
            .unwrap();
        let secret = tls_secret("kudo-system", &ca, &serving);
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        let data = secret.data.unwrap();
        assert_eq!(data["tls.crt"], bytes(&serving.cert_pem));
        assert_eq!(data["ca.crt"], bytes(ca.cert_pem()));
        assert!(data.contains_key("tls.key"));
        assert!(
            !data.contains_key("ca.key"),
            "the mounted Secret must not hold the CA key"
        );
        let ca_data = ca_secret("kudo-system", &ca).data.unwrap();
        let reloaded = CertificateAuthority::from_pem(
            std::str::from_utf8(&ca_data["ca.crt"].0).unwrap(),
            std::str::from_utf8(&ca_data["ca.key"].0).unwrap(),
        );
        assert!(reloaded.is_ok());
    }

    #[test]
    fn certificate_covers_every_service_name_for_a_year() {
        let objects = cert_manager_objects("ops");
        let certificate = &objects[1];
        assert_eq!(certificate["spec"]["duration"], "8760h");
        assert_eq!(
            certificate["spec"]["dnsNames"][3],
            "kudo-controller-manager-service.ops.svc.cluster.local"
        );
        assert_eq!(certificate["spec"]["secretName"], SECRET_NAME);
    }
}
