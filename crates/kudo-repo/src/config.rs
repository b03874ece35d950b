//! The client's repositories, in KUDO's file and shape:
//! `$KUDO_HOME/repository/repositories.yaml` (`repoVersion`, `context` —
//! the default repository — and `repositories` of `name` and `url`), so a
//! KUDO setup keeps working. kudo-rs adds optional per-repository TLS and
//! host settings there; credentials live apart, in
//! `credentials.yaml` beside it, written 0600 and never printed.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::RepoError;
use crate::urls::repository_url;

/// `repoVersion` KUDO writes.
pub const REPO_VERSION: &str = "v1";

/// `repositories.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoriesFile {
    /// `v1`.
    #[serde(default)]
    pub repo_version: String,
    /// The default repository's name (KUDO's "context").
    #[serde(default)]
    pub context: String,
    /// Configured repositories, in the order they were added.
    #[serde(default)]
    pub repositories: Vec<RepositoryConfig>,
}

/// One repository.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryConfig {
    /// Name used with `--repo`.
    pub name: String,
    /// Where its `index.yaml` is (http, https or file).
    pub url: String,
    /// A PEM file of CA certificates trusted for this repository besides
    /// the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Skip TLS verification (only when asked for).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
    /// Accept package URLs on other hosts than the index's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_other_hosts: bool,
}

impl RepositoriesFile {
    /// The repository called `name`.
    pub fn get(&self, name: &str) -> Option<&RepositoryConfig> {
        self.repositories.iter().find(|r| r.name == name)
    }

    /// Adds a repository. The URL is checked and stored normalized; a name
    /// already configured is refused. The first repository becomes the
    /// default.
    pub fn add(&mut self, mut repo: RepositoryConfig) -> Result<(), RepoError> {
        check_repo_name(&repo.name)?;
        if let Some(existing) = self.get(&repo.name) {
            return Err(RepoError::Config(format!(
                "repository {} already exists ({}); remove it first with `kubectl kudo repo remove {}`",
                repo.name, existing.url, repo.name
            )));
        }
        repo.url = repository_url(&repo.url)?.to_string();
        if self.repo_version.is_empty() {
            self.repo_version = REPO_VERSION.to_string();
        }
        if self.context.is_empty() || self.get(&self.context).is_none() {
            self.context = repo.name.clone();
        }
        self.repositories.push(repo);
        Ok(())
    }

    /// Removes a repository; removing the default leaves no default.
    pub fn remove(&mut self, name: &str) -> Result<RepositoryConfig, RepoError> {
        let at = self
            .repositories
            .iter()
            .position(|r| r.name == name)
            .ok_or_else(|| self.unknown(name))?;
        if self.context == name {
            self.context.clear();
        }
        Ok(self.repositories.remove(at))
    }

    /// Makes `name` the default repository.
    pub fn set_context(&mut self, name: &str) -> Result<(), RepoError> {
        if self.get(name).is_none() {
            return Err(self.unknown(name));
        }
        self.context = name.to_string();
        Ok(())
    }

    /// The repository `--repo` names, or else the default.
    pub fn choose(&self, asked: Option<&str>) -> Result<&RepositoryConfig, RepoError> {
        if let Some(name) = asked {
            return self.get(name).ok_or_else(|| self.unknown(name));
        }
        if self.repositories.is_empty() {
            return Err(RepoError::Config(NO_REPOSITORY.to_string()));
        }
        self.get(&self.context).ok_or_else(|| {
            RepoError::Config(format!(
                "no default repository{}: choose one with `kubectl kudo repo context NAME` or \
                 pass --repo NAME (configured: {})",
                if self.context.is_empty() {
                    String::new()
                } else {
                    format!(" ({} is not configured)", self.context)
                },
                self.names()
            ))
        })
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.repositories.iter().map(|r| r.name.as_str()).collect();
        names.join(", ")
    }

    fn unknown(&self, name: &str) -> RepoError {
        if self.repositories.is_empty() {
            return RepoError::Config(format!(
                "repository {name} is not configured; {NO_REPOSITORY}"
            ));
        }
        RepoError::Config(format!(
            "repository {name} is not configured (configured: {}); add it with \
             `kubectl kudo repo add {name} URL`",
            self.names()
        ))
    }
}

/// What to say when no repository is configured.
pub const NO_REPOSITORY: &str = "no package repository is configured: add one with \
    `kubectl kudo repo add NAME URL` (a folder of packages becomes one with \
    `kubectl kudo package create` and `kubectl kudo repo index`)";

/// Repository names: letters, digits, `-`, `_`, `.`; at most 63.
pub fn check_repo_name(name: &str) -> Result<(), RepoError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(RepoError::Config(format!(
            "{name:?} is not a repository name (1 to 63 letters, digits, '-', '_' and '.')"
        )))
    }
}

/// `credentials.yaml`: repository name → credentials.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CredentialsFile {
    /// By repository name (or `oci://HOST` for a registry).
    #[serde(default)]
    pub credentials: BTreeMap<String, Credentials>,
}

/// Basic-auth or bearer credentials. `Debug` and `Display` never show
/// the secret.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Credentials {
    /// HTTP basic authentication.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// The token.
        token: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Basic { username, .. } => write!(f, "basic auth as {username} (password hidden)"),
            Self::Bearer { .. } => f.write_str("bearer token (hidden)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(name: &str, url: &str) -> RepositoryConfig {
        RepositoryConfig {
            name: name.into(),
            url: url.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_kudo_repositories_file_reads_and_its_context_is_the_default() {
        let text = "repoVersion: v1\ncontext: community\nrepositories:\n- name: community\n  url: https://kudo-repository.storage.googleapis.com/0.10.0\n";
        let file: RepositoriesFile = serde_saphyr::from_str(text).unwrap();
        assert_eq!(file.choose(None).unwrap().name, "community");
        assert!(
            file.choose(Some("other"))
                .unwrap_err()
                .to_string()
                .contains("configured: community")
        );
    }

    #[test]
    fn the_first_repository_added_becomes_the_default_and_names_are_unique() {
        let mut file = RepositoriesFile::default();
        file.add(repo("a", "http://127.0.0.1:1")).unwrap();
        file.add(repo("b", "http://127.0.0.1:2/x")).unwrap();
        assert_eq!(file.context, "a");
        assert_eq!(file.get("b").unwrap().url, "http://127.0.0.1:2/x/");
        let err = file
            .add(repo("a", "http://elsewhere"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("repository a already exists (http://127.0.0.1:1/)"),
            "{err}"
        );
        assert!(err.contains("kubectl kudo repo remove a"), "{err}");
        assert!(file.add(repo("bad/name", "http://x")).is_err());
        assert!(file.add(repo("c", "ftp://x")).is_err());
    }

    #[test]
    fn removing_the_default_leaves_none_and_says_how_to_choose() {
        let mut file = RepositoriesFile::default();
        file.add(repo("a", "http://127.0.0.1:1")).unwrap();
        file.add(repo("b", "http://127.0.0.1:2")).unwrap();
        file.remove("a").unwrap();
        let err = file.choose(None).unwrap_err().to_string();
        assert!(err.contains("kubectl kudo repo context NAME"), "{err}");
        file.set_context("b").unwrap();
        assert_eq!(file.choose(None).unwrap().name, "b");
        assert!(file.remove("zzz").is_err());
        assert!(file.set_context("zzz").is_err());
    }

    #[test]
    fn with_no_repository_the_error_says_how_to_add_one() {
        let err = RepositoriesFile::default()
            .choose(None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("kubectl kudo repo add NAME URL"), "{err}");
    }

    #[test]
    fn credentials_never_print_their_secret() {
        let basic = Credentials::Basic {
            username: "me".into(),
            password: "s3cret".into(),
        };
        let bearer = Credentials::Bearer {
            token: "t0ken".into(),
        };
        for text in [
            format!("{basic}"),
            format!("{basic:?}"),
            format!("{bearer:?}"),
        ] {
            assert!(
                !text.contains("s3cret") && !text.contains("t0ken"),
                "{text}"
            );
        }
        let file = CredentialsFile {
            credentials: BTreeMap::from([("r".to_string(), basic)]),
        };
        let yaml = serde_saphyr::to_string(&file).unwrap();
        let back: CredentialsFile = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, file);
    }
}
