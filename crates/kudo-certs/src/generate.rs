//! A small CA and the serving certificate it signs (rcgen, ECDSA P-256).

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, date_time_ymd,
};

use crate::CertError;

/// How long generated certificates are valid, from today (KUDO's
/// self-signed mode used 7 days, after which every Instance write failed).
pub const VALIDITY_DAYS: i64 = 365;

/// Subject of every CA this module creates; reloading a CA from PEM relies
/// on it (rcgen cannot read the subject back without an X.509 parser).
const CA_COMMON_NAME: &str = "kudo-rs webhook CA";

/// A CA certificate and its private key, both PEM.
#[derive(Clone)]
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: String,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the private key.
        f.debug_struct("CertificateAuthority")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// A serving certificate (leaf) and its private key, both PEM.
#[derive(Clone)]
pub struct ServingCertificate {
    /// The certificate, PEM (`tls.crt`).
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM (`tls.key`).
    pub key_pem: String,
}

impl std::fmt::Debug for ServingCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCertificate")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// The DNS names the API server may use for the webhook Service:
/// `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`.
pub fn service_sans(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The names a webhook on this machine is reached by (local and dev mode).
pub fn local_sans() -> Vec<String> {
    vec!["127.0.0.1".to_string(), "localhost".to_string()]
}

impl CertificateAuthority {
    /// Creates a new CA valid for [`VALIDITY_DAYS`] from today.
    pub fn generate() -> Result<Self, CertError> {
        let key = KeyPair::generate().map_err(|source| generate_error("CA key", source))?;
        let cert = ca_params()
            .self_signed(&key)
            .map_err(|source| generate_error("CA certificate", source))?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Loads a CA created by [`CertificateAuthority::generate`] (for
    /// example from the Secret written by `kubectl kudo init`), to issue a
    /// new serving certificate without changing the `caBundle`.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CertError> {
        if !cert_pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(CertError::Pem {
                what: "CA certificate",
                problem: "no CERTIFICATE block found".to_string(),
            });
        }
        KeyPair::from_pem(key_pem).map_err(|source| CertError::Pem {
            what: "CA private key",
            problem: format!("not a usable private key: {source}"),
        })?;
        Ok(Self {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
        })
    }

    /// The CA certificate, PEM: what goes into `caBundle` and `ca.crt`.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key, PEM.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// Issues a serving certificate for these names (DNS names or IP
    /// addresses), valid for [`VALIDITY_DAYS`] from today.
    pub fn issue(&self, names: &[String]) -> Result<ServingCertificate, CertError> {
        let ca_key = KeyPair::from_pem(&self.key_pem).map_err(|source| CertError::Pem {
            what: "CA private key",
            problem: format!("not a usable private key: {source}"),
        })?;
        let issuer = Issuer::new(ca_params(), ca_key);
        let key = KeyPair::generate().map_err(|source| generate_error("serving key", source))?;
        let cert = serving_params(names)?
            .signed_by(&key, &issuer)
            .map_err(|source| generate_error("serving certificate", source))?;
        Ok(ServingCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

impl CertificateAuthority {
    /// Issues a client certificate (`clientAuth`) with this common name,
    /// valid for [`VALIDITY_DAYS`]: what the API server presents to a
    /// webhook that verifies its callers (`--webhook-client-ca`).
    pub fn issue_client(&self, common_name: &str) -> Result<ServingCertificate, CertError> {
        let ca_key = KeyPair::from_pem(&self.key_pem).map_err(|source| CertError::Pem {
            what: "CA private key",
            problem: format!("not a usable private key: {source}"),
        })?;
        let issuer = Issuer::new(ca_params(), ca_key);
        let key = KeyPair::generate().map_err(|source| generate_error("client key", source))?;
        let mut params = CertificateParams::default();
        set_validity(&mut params);
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|source| generate_error("client certificate", source))?;
        Ok(ServingCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

fn generate_error(what: &'static str, source: rcgen::Error) -> CertError {
    CertError::Generate { what, source }
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    set_validity(&mut params);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    dn.push(DnType::OrganizationName, "kudo-rs");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn serving_params(names: &[String]) -> Result<CertificateParams, CertError> {
    let Some(first) = names.first() else {
        return Err(CertError::Names(
            "a serving certificate needs at least one DNS name or IP address".to_string(),
        ));
    };
    let mut params = CertificateParams::default();
    set_validity(&mut params);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, first.as_str());
    params.distinguished_name = dn;
    params.subject_alt_names = names
        .iter()
        .map(|name| san(name))
        .collect::<Result<_, _>>()?;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    Ok(params)
}

fn san(name: &str) -> Result<SanType, CertError> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    let dns = name
        .to_string()
        .try_into()
        .map_err(|source| generate_error("serving certificate name", source))?;
    Ok(SanType::DnsName(dns))
}

/// Valid from yesterday (tolerates clock skew between machines) for
/// [`VALIDITY_DAYS`] from today, in UTC.
fn set_validity(params: &mut CertificateParams) {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let from = today.yesterday().unwrap_or(today);
    let until = today
        .checked_add(jiff::Span::new().days(VALIDITY_DAYS))
        .unwrap_or(today);
    params.not_before = date_time_ymd(i32::from(from.year()), month(from), day(from));
    params.not_after = date_time_ymd(i32::from(until.year()), month(until), day(until));
}

fn month(date: jiff::civil::Date) -> u8 {
    u8::try_from(date.month()).unwrap_or(1)
}

fn day(date: jiff::civil::Date) -> u8 {
    u8::try_from(date.day()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

    fn verifier(ca: &CertificateAuthority) -> Arc<WebPkiServerVerifier> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der(ca.cert_pem())).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap()
    }

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    fn server_name(name: &str) -> ServerName<'static> {
        ServerName::try_from(name.to_string()).unwrap()
    }

    fn verify(
        ca: &CertificateAuthority,
        leaf: &ServingCertificate,
        name: &str,
        at: UnixTime,
    ) -> Result<(), rustls::Error> {
        verifier(ca)
            .verify_server_cert(&der(&leaf.cert_pem), &[], &server_name(name), &[], at)
            .map(|_| ())
    }

    fn days_from_now(days: u64) -> UnixTime {
        UnixTime::since_unix_epoch(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                + Duration::from_secs(days * 86_400),
        )
    }

    #[test]
    fn serving_certificate_is_trusted_for_every_service_name() {
        let ca = CertificateAuthority::generate().unwrap();
        let names = service_sans("kudo-svc", "kudo-system");
        let leaf = ca.issue(&names).unwrap();
        for name in &names {
            verify(&ca, &leaf, name, UnixTime::now()).unwrap();
        }
        assert!(verify(&ca, &leaf, "other.kudo-system.svc", UnixTime::now()).is_err());
    }

    #[test]
    fn local_certificate_is_trusted_for_loopback_ip_and_localhost() {
        let ca = CertificateAuthority::generate().unwrap();
        let leaf = ca.issue(&local_sans()).unwrap();
        verify(&ca, &leaf, "127.0.0.1", UnixTime::now()).unwrap();
        verify(&ca, &leaf, "localhost", UnixTime::now()).unwrap();
    }

    #[test]
    fn certificates_are_valid_for_a_year_and_not_longer() {
        let ca = CertificateAuthority::generate().unwrap();
        let leaf = ca.issue(&local_sans()).unwrap();
        verify(&ca, &leaf, "localhost", days_from_now(363)).unwrap();
        let expired = verify(&ca, &leaf, "localhost", days_from_now(367)).unwrap_err();
        assert!(format!("{expired:?}").contains("Expired"), "{expired:?}");
    }

    #[test]
    fn ca_reloaded_from_pem_issues_certificates_the_original_bundle_trusts() {
        let ca = CertificateAuthority::generate().unwrap();
        let reloaded = CertificateAuthority::from_pem(ca.cert_pem(), ca.key_pem()).unwrap();
        let leaf = reloaded.issue(&local_sans()).unwrap();
        verify(&ca, &leaf, "127.0.0.1", UnixTime::now()).unwrap();
    }

    #[test]
    fn a_certificate_from_another_ca_is_not_trusted() {
        let ca = CertificateAuthority::generate().unwrap();
        let other = CertificateAuthority::generate().unwrap();
        let leaf = other.issue(&local_sans()).unwrap();
        assert!(verify(&ca, &leaf, "127.0.0.1", UnixTime::now()).is_err());
    }

    #[test]
    fn rejects_garbage_ca_pem_with_a_message() {
        let err = CertificateAuthority::from_pem("not pem", "not a key").unwrap_err();
        assert!(err.to_string().contains("no CERTIFICATE block"), "{err}");
        let ca = CertificateAuthority::generate().unwrap();
        let err = CertificateAuthority::from_pem(ca.cert_pem(), "junk").unwrap_err();
        assert!(err.to_string().contains("CA private key"), "{err}");
    }

    #[test]
    fn a_client_certificate_is_trusted_for_client_auth_by_its_ca_only() {
        use rustls::server::WebPkiClientVerifier;
        let client_verifier = |ca: &CertificateAuthority| {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(der(ca.cert_pem())).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap()
        };
        let ca = CertificateAuthority::generate().unwrap();
        let client = ca.issue_client("kube-apiserver").unwrap();
        client_verifier(&ca)
            .verify_client_cert(&der(&client.cert_pem), &[], UnixTime::now())
            .unwrap();
        let other = CertificateAuthority::generate().unwrap();
        assert!(
            client_verifier(&other)
                .verify_client_cert(&der(&client.cert_pem), &[], UnixTime::now())
                .is_err()
        );
        // A serving certificate is not one for client auth.
        let serving = ca.issue(&local_sans()).unwrap();
        assert!(
            client_verifier(&ca)
                .verify_client_cert(&der(&serving.cert_pem), &[], UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn issuing_without_names_is_an_error() {
        let ca = CertificateAuthority::generate().unwrap();
        let err = ca.issue(&[]).unwrap_err();
        assert!(err.to_string().contains("at least one DNS name"), "{err}");
    }

    #[test]
    fn debug_output_hides_private_keys() {
        let ca = CertificateAuthority::generate().unwrap();
        let leaf = ca.issue(&local_sans()).unwrap();
        assert!(!format!("{ca:?}").contains("PRIVATE KEY"));
        assert!(!format!("{leaf:?}").contains("PRIVATE KEY"));
    }
}
