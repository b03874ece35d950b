//! TLS for the webhook: TLS 1.2 and 1.3 only, certificate and key read from
//! files and re-read when the files change (a rotated Secret, cert-manager
//! renewal) without a restart; optionally, client certificates required
//! and verified against a CA file (read once, at start).
//!
//! Every handshake compares the files' metadata (modification time, size,
//! inode) with what was loaded; a change triggers a reload. A reload that
//! fails (for example the certificate was replaced but the key not yet)
//! keeps serving the previous pair and is retried on the next change.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};

use super::WebhookError;

/// Builds the server configuration: TLS 1.2+, ALPN h2 and http/1.1, the
/// certificate resolved from the files on every handshake. With
/// `client_ca`, a client must present a certificate that the CA(s) in that
/// PEM file signed, valid for client authentication; without, any client
/// is served.
///
/// Fails when the files cannot be loaded now, so a misconfigured manager
/// stops at start instead of failing every API server call.
pub fn server_config(
    cert_path: &Path,
    key_path: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, WebhookError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let resolver = ReloadingCertResolver::new(cert_path, key_path, provider.clone())?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|source| WebhookError::Tls {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
            source,
        })?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => builder.with_client_cert_verifier(client_verifier(ca, provider)?),
    };
    let mut config = builder.with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Requires a client certificate signed by a CA of the PEM file `path`.
fn client_verifier(
    path: &Path,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, WebhookError> {
    let pem = std::fs::read(path).map_err(|source| WebhookError::File {
        what: "reading client CA",
        path: path.to_path_buf(),
        source,
    })?;
    let problem = |problem: String| WebhookError::Pem {
        path: path.to_path_buf(),
        problem,
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|err| problem(format!("not a PEM certificate: {err}")))?;
        roots
            .add(cert)
            .map_err(|err| problem(format!("not a usable CA certificate: {err}")))?;
    }
    if roots.is_empty() {
        return Err(problem("no CERTIFICATE block found".to_string()));
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|err| problem(format!("cannot verify clients with it: {err}")))
}

/// What identifies one version of a file on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Self {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode,
        })
    }
}

type Stamps = (Option<FileStamp>, Option<FileStamp>);

#[derive(Debug)]
struct Loaded {
    stamps: Stamps,
    key: Arc<CertifiedKey>,
    /// Stamps of the last reload that failed, so it is logged once.
    failed: Option<Stamps>,
}

/// Resolves the serving certificate from files, reloading on change.
#[derive(Debug)]
pub struct ReloadingCertResolver {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    loaded: RwLock<Loaded>,
}

impl ReloadingCertResolver {
    /// Loads the pair now; fails when it cannot be loaded.
    pub fn new(
        cert_path: &Path,
        key_path: &Path,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, WebhookError> {
        let stamps = (FileStamp::of(cert_path), FileStamp::of(key_path));
        let key = load_pair(cert_path, key_path, &provider)?;
        Ok(Self {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            provider,
            loaded: RwLock::new(Loaded {
                stamps,
                key: Arc::new(key),
                failed: None,
            }),
        })
    }

    /// The current pair, reloaded first if the files changed.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        let stamps = (
            FileStamp::of(&self.cert_path),
            FileStamp::of(&self.key_path),
        );
        {
            let loaded = self.loaded.read().ok()?;
            if loaded.stamps == stamps || loaded.failed.as_ref() == Some(&stamps) {
                return Some(loaded.key.clone());
            }
        }
        let mut loaded = self.loaded.write().ok()?;
        if loaded.stamps == stamps || loaded.failed.as_ref() == Some(&stamps) {
            return Some(loaded.key.clone());
        }
        match load_pair(&self.cert_path, &self.key_path, &self.provider) {
            Ok(key) => {
                tracing::info!(cert = %self.cert_path.display(), "webhook certificate reloaded");
                loaded.key = Arc::new(key);
                loaded.stamps = stamps;
                loaded.failed = None;
            }
            Err(err) => {
                tracing::warn!(error = %err, "webhook certificate changed but cannot be loaded; \
                    still serving the previous one");
                loaded.failed = Some(stamps);
            }
        }
        Some(loaded.key.clone())
    }
}

impl ResolvesServerCert for ReloadingCertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

fn load_pair(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, WebhookError> {
    let cert_pem = std::fs::read(cert_path).map_err(|source| WebhookError::File {
        what: "reading certificate",
        path: cert_path.to_path_buf(),
        source,
    })?;
    let key_pem = std::fs::read(key_path).map_err(|source| WebhookError::File {
        what: "reading private key",
        path: key_path.to_path_buf(),
        source,
    })?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| WebhookError::Pem {
            path: cert_path.to_path_buf(),
            problem: format!("not a PEM certificate chain: {err}"),
        })?;
    if chain.is_empty() {
        return Err(WebhookError::Pem {
            path: cert_path.to_path_buf(),
            problem: "no CERTIFICATE block found".to_string(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|err| WebhookError::Pem {
        path: key_path.to_path_buf(),
        problem: format!("no usable PRIVATE KEY block: {err}"),
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| WebhookError::Tls {
        cert: cert_path.to_path_buf(),
        key: key_path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_certs::{CertificateAuthority, local_sans};

    fn write_pair(dir: &Path, ca: &CertificateAuthority) -> (PathBuf, PathBuf, String) {
        let leaf = ca.issue(&local_sans()).unwrap();
        let cert = dir.join("tls.crt");
        let key = dir.join("tls.key");
        // Write to a temporary name and rename, as the kubelet swaps Secret files.
        std::fs::write(dir.join("tmp.crt"), &leaf.cert_pem).unwrap();
        std::fs::write(dir.join("tmp.key"), &leaf.key_pem).unwrap();
        std::fs::rename(dir.join("tmp.crt"), &cert).unwrap();
        std::fs::rename(dir.join("tmp.key"), &key).unwrap();
        (cert, key, leaf.cert_pem)
    }

    fn der_of(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    #[test]
    fn reloads_when_the_files_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::generate().unwrap();
        let (cert, key, first) = write_pair(dir.path(), &ca);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let resolver = ReloadingCertResolver::new(&cert, &key, provider).unwrap();
        assert_eq!(resolver.current().unwrap().cert[0], der_of(&first));

        let (_, _, second) = write_pair(dir.path(), &ca);
        assert_ne!(first, second);
        assert_eq!(resolver.current().unwrap().cert[0], der_of(&second));
    }

    #[test]
    fn keeps_the_old_pair_when_the_new_files_are_broken() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::generate().unwrap();
        let (cert, key, first) = write_pair(dir.path(), &ca);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let resolver = ReloadingCertResolver::new(&cert, &key, provider).unwrap();
        std::fs::write(&cert, "garbage").unwrap();
        assert_eq!(resolver.current().unwrap().cert[0], der_of(&first));
    }

    #[test]
    fn refuses_to_start_without_files_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = server_config(
            &dir.path().join("tls.crt"),
            &dir.path().join("tls.key"),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("tls.crt"), "{err}");
    }

    #[test]
    fn refuses_a_key_that_does_not_match_the_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::generate().unwrap();
        let (cert, _, _) = write_pair(dir.path(), &ca);
        let other = ca.issue(&local_sans()).unwrap();
        let other_key = dir.path().join("other.key");
        std::fs::write(&other_key, other.key_pem).unwrap();
        let err = server_config(&cert, &other_key, None).unwrap_err();
        assert!(matches!(err, WebhookError::Tls { .. }), "{err}");
    }

    #[test]
    fn refuses_to_start_with_a_client_ca_file_that_holds_no_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::generate().unwrap();
        let (cert, key, _) = write_pair(dir.path(), &ca);
        let client_ca = dir.path().join("client-ca.crt");
        std::fs::write(&client_ca, ca.key_pem()).unwrap();
        let err = server_config(&cert, &key, Some(&client_ca)).unwrap_err();
        assert!(
            err.to_string()
                .contains("client-ca.crt: no CERTIFICATE block found"),
            "{err}"
        );
        let missing = dir.path().join("missing.crt");
        let err = server_config(&cert, &key, Some(&missing)).unwrap_err();
        assert!(err.to_string().contains("reading client CA"), "{err}");
        std::fs::write(&client_ca, ca.cert_pem()).unwrap();
        server_config(&cert, &key, Some(&client_ca)).unwrap();
    }
}
