//! Packages in OCI registries, as Helm keeps charts there: one artifact
//! per operator version at `HOST/NAMESPACE/<operator>:<operatorVersion>`,
//! a small JSON config and the package `.tgz` as its only layer.
//!
//! Pushing uses oci-client. Pulling reads the manifest (by tag or digest)
//! within a size limit, then the layer by its digest, checked against that
//! digest; the registry's token is negotiated within the same limits
//! (`token.rs`).

use std::collections::BTreeMap;

use kudo_repo::limits::human_bytes;
use kudo_repo::urls::Url;
use kudo_repo::version::Version;
use kudo_repo::{Digest, PackageVersion, Range, RepoError};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use serde::{Deserialize, Serialize};

use crate::error::{ClientError, Result};
use crate::http::{self, Download, Transport, read_ca_file};
use crate::repo::{Downloaded, check_identity};

mod reference;
mod token;
pub use reference::{OciRef, version_tag};
pub use token::MAX_TOKEN_BYTES;

/// Media type of the package layer.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.kudo.package.layer.v1.tar+gzip";
/// Media type of the config blob.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.kudo.package.config.v1+json";
const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// How to talk to a registry.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    /// TLS and limits.
    pub transport: Transport,
    /// Plain http instead of https (`--plain-http`, for a local registry).
    pub plain_http: bool,
    /// Basic-auth or bearer credentials.
    pub credentials: Option<kudo_repo::config::Credentials>,
}

/// What the config blob holds: the index entry's fields.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PackageConfig {
    name: String,
    operator_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    app_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

impl Registry {
    fn auth(&self) -> RegistryAuth {
        match &self.credentials {
            Some(kudo_repo::config::Credentials::Basic { username, password }) => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Some(kudo_repo::config::Credentials::Bearer { token }) => {
                RegistryAuth::Bearer(token.clone())
            }
            None => RegistryAuth::Anonymous,
        }
    }

    fn oci_client(&self) -> Result<oci_client::Client> {
        http::install_crypto_provider();
        let mut extra = Vec::new();
        if let Some(path) = &self.transport.ca_file {
            extra.push(oci_client::client::Certificate {
                encoding: oci_client::client::CertificateEncoding::Pem,
                data: read_ca_file(path)?,
            });
        }
        let config = ClientConfig {
            protocol: if self.plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            accept_invalid_certificates: self.transport.insecure_skip_tls_verify,
            extra_root_certificates: extra,
            connect_timeout: Some(self.transport.limits.connect_timeout),
            read_timeout: Some(self.transport.limits.read_timeout),
            user_agent: concat!("kudo-rs/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        oci_client::Client::try_from(config).map_err(|e| ClientError::Tls(http::chain(&e)))
    }

    fn base(&self, reference: &OciRef) -> Result<Url> {
        let scheme = if self.plain_http { "http" } else { "https" };
        let text = format!(
            "{scheme}://{}/v2/{}/",
            reference.registry, reference.repository
        );
        Url::parse(&text).map_err(|e| oci_err(reference, format!("not a registry URL: {e}"), false))
    }

    /// Pushes a package archive to `oci://HOST/NAMESPACE` as
    /// `HOST/NAMESPACE/<operator>:<operatorVersion>`; returns the reference
    /// and the manifest digest the registry serves.
    pub async fn push(
        &self,
        archive: &[u8],
        source: &str,
        namespace: &str,
    ) -> Result<(OciRef, Digest)> {
        let limit = self.transport.limits.max_package_bytes;
        if u64::try_from(archive.len()).unwrap_or(u64::MAX) > limit {
            return Err(ClientError::TooLarge {
                url: source.to_string(),
                what: "package",
                limit: human_bytes(limit),
            });
        }
        let package = kudo_package::load_archive(archive, source)?.package;
        package.verified()?;
        let op = &package.operator;
        let target = OciRef::parse(&format!("{}/{}", namespace.trim_end_matches('/'), op.name))?;
        let tag = version_tag(&op.operator_version);
        let config = PackageConfig {
            name: op.name.clone(),
            operator_version: op.operator_version.clone(),
            app_version: op.app_version.clone().filter(|a| !a.is_empty()),
            description: op.description.clone(),
        };
        let config_bytes =
            serde_json::to_vec(&config).map_err(|e| oci_err(&target, e.to_string(), false))?;
        let layers = [ImageLayer::new(
            archive.to_vec(),
            LAYER_MEDIA_TYPE.to_string(),
            None,
        )];
        let config = Config::new(config_bytes, CONFIG_MEDIA_TYPE.to_string(), None);
        let annotations = BTreeMap::from([
            (
                "org.opencontainers.image.title".to_string(),
                op.name.clone(),
            ),
            (
                "org.opencontainers.image.version".to_string(),
                op.operator_version.clone(),
            ),
        ]);
        let manifest = OciImageManifest::build(&layers, &config, Some(annotations));
        let client = self.oci_client()?;
        let reference = target.with_tag(&tag);
        // The token negotiated here (bounded, no http realm) rather than
        // by oci-client, which is handed it as it is.
        let auth = match self
            .token(&http::client(&self.transport)?, &target, "pull,push")
            .await?
        {
            Some(token) => RegistryAuth::Bearer(token),
            None => self.auth(),
        };
        client
            .push(&reference, &layers, config, &auth, Some(manifest))
            .await
            .map_err(|e| oci_err(&target, http::chain(&e), true))?;
        let pushed = OciRef {
            tag: Some(tag),
            ..target
        };
        let (_, digest) = self.manifest(&pushed).await?;
        Ok((pushed, digest))
    }

    fn pull_credentials(&self, token: Option<String>) -> Option<kudo_repo::config::Credentials> {
        match token {
            Some(token) => Some(kudo_repo::config::Credentials::Bearer { token }),
            None => self.credentials.clone(),
        }
    }

    async fn get(
        &self,
        reference: &OciRef,
        url: &Url,
        max_bytes: u64,
        what: &'static str,
        accept: Option<&str>,
    ) -> Result<http::Fetched> {
        let http_client = http::client(&self.transport)?;
        let token = self.token(&http_client, reference, "pull").await?;
        let credentials = self.pull_credentials(token);
        let base = self.base(reference)?;
        http::fetch(
            &http_client,
            &self.transport.limits,
            &Download {
                url,
                max_bytes,
                what,
                credentials: credentials.as_ref(),
                origin: Some(&base),
                accept,
            },
        )
        .await
    }

    async fn manifest(&self, reference: &OciRef) -> Result<(OciImageManifest, Digest)> {
        let at = reference
            .digest
            .clone()
            .or_else(|| reference.tag.clone())
            .ok_or_else(|| oci_err(reference, "no tag or digest to pull".into(), false))?;
        let url = self
            .base(reference)?
            .join(&format!("manifests/{at}"))
            .map_err(|e| oci_err(reference, e.to_string(), false))?;
        let fetched = self
            .get(
                reference,
                &url,
                self.transport.limits.max_manifest_bytes,
                "manifest",
                Some(MANIFEST_MEDIA_TYPE),
            )
            .await?;
        let digest = Digest::of(&fetched.bytes);
        if let Some(asked) = &reference.digest {
            Digest::parse(asked)
                .map_err(|e| oci_err(reference, e, false))?
                .verify_digest(&digest, url.as_ref())?;
        }
        let manifest: OciImageManifest = serde_json::from_slice(&fetched.bytes).map_err(|e| {
            oci_err(
                reference,
                format!("the manifest is not an OCI image manifest: {e}"),
                false,
            )
        })?;
        Ok((manifest, digest))
    }

    /// The version tags of a repository, read within the manifest limit.
    pub async fn tags(&self, reference: &OciRef) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Tags {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let url = self
            .base(reference)?
            .join("tags/list")
            .map_err(|e| oci_err(reference, e.to_string(), false))?;
        let fetched = self
            .get(
                reference,
                &url,
                self.transport.limits.max_manifest_bytes,
                "tag list",
                None,
            )
            .await?;
        let tags: Tags = serde_json::from_slice(&fetched.bytes)
            .map_err(|e| oci_err(reference, format!("the tag list is malformed: {e}"), false))?;
        Ok(tags.tags.unwrap_or_default())
    }

    /// Pulls a package: the reference's digest or tag, else the newest tag
    /// that fits `version` (a version or range; pre-releases only with
    /// `include_prereleases` or when named). The layer is checked against
    /// the digest the manifest gives, and the package against the name and
    /// version the reference asked for.
    pub async fn pull(
        &self,
        reference: &OciRef,
        version: Option<&str>,
        include_prereleases: bool,
    ) -> Result<(OciRef, Downloaded)> {
        let mut reference = reference.clone();
        if reference.digest.is_none() && reference.tag.is_none() {
            reference.tag = Some(
                self.choose_tag(&reference, version, include_prereleases)
                    .await?,
            );
        }
        let (manifest, manifest_digest) = self.manifest(&reference).await?;
        if manifest.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(oci_err(
                &reference,
                format!(
                    "not a KUDO package (config media type {:?})",
                    manifest.config.media_type
                ),
                false,
            ));
        }
        let [layer] = manifest.layers.as_slice() else {
            return Err(oci_err(
                &reference,
                format!(
                    "a KUDO package has one layer, this artifact has {}",
                    manifest.layers.len()
                ),
                false,
            ));
        };
        if layer.media_type != LAYER_MEDIA_TYPE {
            return Err(oci_err(
                &reference,
                format!(
                    "the layer is not a KUDO package (media type {:?})",
                    layer.media_type
                ),
                false,
            ));
        }
        let limit = self.transport.limits.max_package_bytes;
        if u64::try_from(layer.size).unwrap_or(u64::MAX) > limit {
            return Err(ClientError::TooLarge {
                url: reference.to_string(),
                what: "package",
                limit: human_bytes(limit),
            });
        }
        let expected = Digest::parse(&layer.digest).map_err(|e| oci_err(&reference, e, false))?;
        let url = self
            .base(&reference)?
            .join(&format!("blobs/{}", expected.oci()))
            .map_err(|e| oci_err(&reference, e.to_string(), false))?;
        let blob = self.get(&reference, &url, limit, "package", None).await?;
        let shown = format!("{reference}@{}", manifest_digest.oci());
        expected.verify(&blob.bytes, &shown)?;
        let located = kudo_package::load_archive(&blob.bytes, &shown)?;
        let op = &located.package.operator;
        let promised = PackageVersion {
            name: reference.name().to_string(),
            operator_version: op.operator_version.clone(),
            app_version: op.app_version.clone(),
            ..PackageVersion::default()
        };
        check_identity(&located, &promised, &shown)?;
        if let Some(tag) = &reference.tag
            && version_tag(&op.operator_version) != *tag
        {
            return Err(RepoError::PackageMismatch {
                url: shown,
                detail: format!(
                    "the tag {tag} holds operator version {}",
                    op.operator_version
                ),
            }
            .into());
        }
        let pinned = OciRef {
            digest: Some(manifest_digest.oci()),
            ..reference
        };
        Ok((
            pinned,
            Downloaded {
                located,
                url: shown,
                digest: expected,
            },
        ))
    }

    async fn choose_tag(
        &self,
        reference: &OciRef,
        version: Option<&str>,
        include_pre: bool,
    ) -> Result<String> {
        let range = match version {
            Some(v) => {
                let range = Range::parse(v).map_err(RepoError::Range)?;
                if let Some(exact) = range.exact() {
                    return Ok(version_tag(&exact.to_string()));
                }
                Some(range)
            }
            None => None,
        };
        let tags = self.tags(reference).await?;
        let fits = |v: &Version, pre: bool| match &range {
            Some(r) => r.matches(v, pre),
            None => pre || !v.is_prerelease(),
        };
        let versions: Vec<(Version, &String)> = tags
            .iter()
            .filter_map(|t| Version::parse(&t.replace('_', "+")).ok().map(|v| (v, t)))
            .collect();
        if let Some((_, tag)) = versions
            .iter()
            .filter(|(v, _)| fits(v, include_pre))
            .max_by(|a, b| a.0.cmp(&b.0))
        {
            return Ok((*tag).clone());
        }
        let newest = versions
            .iter()
            .filter(|(v, _)| !v.is_prerelease())
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, t)| format!("; newest is {t}"))
            .unwrap_or_else(|| "; it has no version tags".into());
        Err(RepoError::NotFound(Box::new(kudo_repo::NotFound {
            no_such_package: tags.is_empty(),
            message: format!(
                "{reference} {}: no such version in the registry{newest}",
                version.unwrap_or("(newest)")
            ),
        }))
        .into())
    }
}

fn oci_err(reference: &OciRef, detail: String, transient: bool) -> ClientError {
    ClientError::Oci {
        reference: reference.to_string(),
        detail,
        transient,
    }
}
