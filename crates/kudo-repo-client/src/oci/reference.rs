//! `oci://` references and the tags versions get.

use kudo_repo::{Digest, RepoError};
use oci_client::Reference;

use crate::error::{ClientError, Result};

/// `oci://HOST[:PORT]/PATH/NAME[:TAG][@sha256:...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OciRef {
    /// `HOST[:PORT]`.
    pub registry: String,
    /// `PATH/NAME` (without tag or digest).
    pub repository: String,
    /// The tag, if given.
    pub tag: Option<String>,
    /// The digest, if given.
    pub digest: Option<String>,
}

impl OciRef {
    /// Parses an `oci://` reference.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| {
            ClientError::Repo(RepoError::UrlRefused {
                url: text.to_string(),
                reason: format!("{why} (expected oci://HOST/NAMESPACE/NAME[:VERSION])"),
            })
        };
        let rest = text
            .strip_prefix("oci://")
            .ok_or_else(|| bad("not an oci:// reference"))?;
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => {
                Digest::parse(d).map_err(|e| bad(&e))?;
                (r, Some(d.to_string()))
            }
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("no repository after the host"))?;
        let (repository, tag) = match path.rsplit_once(':') {
            Some((p, t)) if !t.contains('/') => (p, Some(t.to_string())),
            _ => (path, None),
        };
        let valid_path = !repository.is_empty()
            && repository.split('/').all(|seg| {
                !seg.is_empty()
                    && seg.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
            });
        if registry.is_empty() || !valid_path {
            return Err(bad("a malformed registry or repository"));
        }
        if tag.as_deref().is_some_and(|t| !valid_tag(t)) {
            return Err(bad("a malformed tag"));
        }
        Ok(Self {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The last path segment: the operator's name.
    pub fn name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }

    pub(super) fn with_tag(&self, tag: &str) -> Reference {
        Reference::with_tag(
            self.registry.clone(),
            self.repository.clone(),
            tag.to_string(),
        )
    }
}

impl std::fmt::Display for OciRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

fn valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 128
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !tag.starts_with(['.', '-'])
}

/// The tag of a version: OCI tags cannot hold `+`, so it becomes `_` (as
/// Helm does).
pub fn version_tag(version: &str) -> String {
    version.replace('+', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_registry_repository_tag_and_digest() {
        let r = OciRef::parse("oci://127.0.0.1:5000/ops/first-operator:0.2.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "ops/first-operator");
        assert_eq!(r.tag.as_deref(), Some("0.2.0"));
        assert_eq!(r.name(), "first-operator");
        let d = format!("sha256:{}", "a".repeat(64));
        let r = OciRef::parse(&format!("oci://r.example/ops/kafka@{d}")).unwrap();
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert_eq!(r.tag, None);
        assert_eq!(r.to_string(), format!("oci://r.example/ops/kafka@{d}"));
    }

    #[test]
    fn malformed_references_are_refused() {
        for text in [
            "r.example/ops/k",
            "oci://r.example",
            "oci://r.example/Ops/k",
            "oci://r.example/ops/k:bad+tag",
            "oci://r.example/ops/k@sha256:zz",
            "oci://r.example//k",
        ] {
            assert!(OciRef::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn build_metadata_becomes_an_underscore_in_tags() {
        assert_eq!(version_tag("1.2.3+build.1"), "1.2.3_build.1");
    }
}
