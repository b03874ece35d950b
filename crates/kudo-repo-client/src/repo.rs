//! The configured repositories and what is done with them: adding one
//! (its index fetched and checked first), refreshing cached indexes,
//! resolving a name and range from the cache (fetching again once on a
//! miss), searching, and downloading a package with its digest checked.

use kudo_package::Located;
use kudo_repo::cache::{CacheHeader, CachedIndex};
use kudo_repo::config::{Credentials, CredentialsFile, RepositoriesFile, RepositoryConfig};
use kudo_repo::resolve::{NotFound, no_such_package, select};
use kudo_repo::urls::{Url, index_url, package_url, shown};
use kudo_repo::{Digest, IndexFile, Limits, PackageVersion, Query, RepoError};

use crate::error::{ClientError, Result};
use crate::home::{Home, read_capped, write_atomic};
use crate::http::{self, Download, Transport};

mod search;
pub use search::{SearchHit, SearchQuery};

/// A name resolved in a repository.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The repository it was found in.
    pub repository: RepositoryConfig,
    /// Its index entry.
    pub entry: PackageVersion,
}

/// A downloaded, verified package.
#[derive(Debug)]
pub struct Downloaded {
    /// The package, loaded from the archive.
    pub located: Located,
    /// The URL it came from (without query).
    pub url: String,
    /// Its sha256.
    pub digest: Digest,
}

/// The client side of package repositories.
pub struct Repositories {
    home: Home,
    config: RepositoriesFile,
    credentials: CredentialsFile,
    limits: Limits,
    /// Repositories whose index a miss of this value fetched: a later miss
    /// in them is answered from that fetch (a command resolving many
    /// dependencies fetches each index at most once).
    fetched: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Repositories {
    /// Reads the configuration under `home`.
    pub fn open(home: Home, limits: Limits) -> Result<Self> {
        let config = home.load_repositories()?;
        let credentials = home.load_credentials()?;
        Ok(Self {
            home,
            config,
            credentials,
            limits,
            fetched: std::sync::Mutex::default(),
        })
    }

    /// The configured repositories.
    pub fn config(&self) -> &RepositoriesFile {
        &self.config
    }

    /// Where things are kept.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Whether credentials are stored for a repository.
    pub fn has_credentials(&self, name: &str) -> bool {
        self.credentials.credentials.contains_key(name)
    }

    /// Adds a repository. Unless `force`, its index is fetched and checked
    /// first (and cached) and nothing is written when that fails. Returns
    /// the number of versions the index lists (`None` with `force`).
    pub async fn add(
        &mut self,
        repo: RepositoryConfig,
        credentials: Option<Credentials>,
        force: bool,
    ) -> Result<Option<usize>> {
        let mut config = self.config.clone();
        config.add(repo.clone())?;
        let added = config.get(&repo.name).cloned().unwrap_or(repo);
        let _ = std::fs::remove_file(self.home.cache_file(&added.name));
        let count = if force {
            None
        } else {
            let index = self.fetch_index(&added, credentials.as_ref()).await?;
            Some(index.len())
        };
        let mut stored = self.credentials.clone();
        match credentials {
            Some(c) => {
                stored.credentials.insert(added.name.clone(), c);
            }
            None => {
                stored.credentials.remove(&added.name);
            }
        }
        if stored != self.credentials {
            self.home.save_credentials(&stored)?;
            self.credentials = stored;
        }
        self.home.save_repositories(&config)?;
        self.config = config;
        Ok(count)
    }

    /// Removes repositories, with their credentials and cached indexes.
    pub fn remove(&mut self, names: &[String]) -> Result<()> {
        let mut config = self.config.clone();
        for name in names {
            config.remove(name)?;
        }
        let mut stored = self.credentials.clone();
        for name in names {
            stored.credentials.remove(name);
            let _ = std::fs::remove_file(self.home.cache_file(name));
        }
        if stored != self.credentials {
            self.home.save_credentials(&stored)?;
            self.credentials = stored;
        }
        self.home.save_repositories(&config)?;
        self.config = config;
        Ok(())
    }

    /// Makes a repository the default.
    pub fn set_context(&mut self, name: &str) -> Result<()> {
        let mut config = self.config.clone();
        config.set_context(name)?;
        self.home.save_repositories(&config)?;
        self.config = config;
        Ok(())
    }

    /// Fetches the indexes of `names` (all when empty) again. One result
    /// per repository: the number of versions, or why it failed (the old
    /// cache is kept then).
    pub async fn update(&self, names: &[String]) -> Result<Vec<(String, Result<usize>)>> {
        let chosen: Vec<&RepositoryConfig> = if names.is_empty() {
            self.config.repositories.iter().collect()
        } else {
            names
                .iter()
                .map(|n| self.config.choose(Some(n)))
                .collect::<Result<_, RepoError>>()?
        };
        if chosen.is_empty() {
            return Err(RepoError::Config(kudo_repo::config::NO_REPOSITORY.into()).into());
        }
        let mut results = Vec::new();
        for repo in chosen {
            let result = self
                .fetch_index(repo, self.credentials_of(&repo.name))
                .await
                .map(|i| i.len());
            results.push((repo.name.clone(), result));
        }
        Ok(results)
    }

    fn credentials_of(&self, name: &str) -> Option<&Credentials> {
        self.credentials.credentials.get(name)
    }

    /// How to reach a repository.
    pub fn transport(&self, repo: &RepositoryConfig) -> Transport {
        Transport {
            ca_file: repo.ca_file.as_ref().map(Into::into),
            ca_pem: None,
            insecure_skip_tls_verify: repo.insecure_skip_tls_verify,
            limits: self.limits,
        }
    }

    fn repo_url(repo: &RepositoryConfig) -> Result<Url> {
        Ok(kudo_repo::urls::repository_url(&repo.url)?)
    }

    /// Fetches, checks and caches a repository's index.
    async fn fetch_index(
        &self,
        repo: &RepositoryConfig,
        credentials: Option<&Credentials>,
    ) -> Result<IndexFile> {
        let base = Self::repo_url(repo)?;
        let url = index_url(&base)?;
        let client = http::client(&self.transport(repo))?;
        let fetched = http::fetch(
            &client,
            &self.limits,
            &Download {
                url: &url,
                max_bytes: self.limits.max_index_bytes,
                what: "index",
                credentials,
                origin: Some(&base),
                accept: None,
            },
        )
        .await?;
        let index = IndexFile::parse(&fetched.bytes, &shown(&url), &self.limits)?;
        let header = CacheHeader {
            url: repo.url.clone(),
            fetched: jiff::Timestamp::now().to_string(),
            generated: index.generated.clone(),
            annotations: index.annotations.clone(),
        };
        let bytes = kudo_repo::cache::encode(&index, &header)?;
        write_atomic(&self.home.cache_file(&repo.name), &bytes, 0o644)?;
        Ok(index)
    }

    /// The index as a miss of this value last fetched it, when one did:
    /// `cached`, the cache that fetch wrote.
    fn fetched_before(&self, repo: &RepositoryConfig, cached: Option<&[u8]>) -> Option<IndexFile> {
        let fetched = self.fetched.lock().ok()?.contains(&repo.name);
        if !fetched {
            return None;
        }
        CachedIndex::open(cached?).and_then(|c| c.to_index()).ok()
    }

    /// The cached index bytes of a repository, when they are for its
    /// current URL and readable.
    fn cached_bytes(&self, repo: &RepositoryConfig) -> Option<Vec<u8>> {
        let bytes = read_capped(
            &self.home.cache_file(&repo.name),
            self.limits.max_index_bytes * 2,
        )
        .ok()??;
        let fits = CachedIndex::open(&bytes).is_ok_and(|c| c.header().url == repo.url);
        fits.then_some(bytes)
    }

    /// Resolves `query` in the repository `--repo` names (or the default),
    /// from the cache; on a miss (no cache, no such name or version) the
    /// index is fetched once more and asked again, unless this value
    /// fetched it already.
    pub async fn resolve(&self, repo: Option<&str>, query: &Query<'_>) -> Result<Resolution> {
        let repo = self.config.choose(repo)?.clone();
        let cached_bytes = self.cached_bytes(&repo);
        if let Some(bytes) = &cached_bytes
            && let Ok(cached) = CachedIndex::open(bytes)
            && let Ok(Some(versions)) = cached.versions(query.name)
            && let Ok(entry) = select(
                &versions,
                &kudo_repo::channels::recalls_in(&cached.header().annotations, query.name),
                &repo.name,
                query,
            )
        {
            return Ok(Resolution {
                entry: entry.clone(),
                repository: repo,
            });
        }
        let index = match self.fetched_before(&repo, cached_bytes.as_deref()) {
            Some(index) => index,
            None => {
                let index = self
                    .fetch_index(&repo, self.credentials_of(&repo.name))
                    .await?;
                if let Ok(mut fetched) = self.fetched.lock() {
                    fetched.insert(repo.name.clone());
                }
                index
            }
        };
        let result = match index.entries.get(query.name) {
            Some(versions) => {
                select(versions, &index.recalls(query.name), &repo.name, query).cloned()
            }
            None => Err(self
                .elsewhere(
                    no_such_package(
                        query.name,
                        &repo.name,
                        index.entries.keys().map(String::as_str),
                    ),
                    &repo.name,
                    query.name,
                )
                .into()),
        };
        Ok(Resolution {
            entry: result?,
            repository: repo,
        })
    }

    /// Adds "repository X has it" to a not-found message, from the caches
    /// of the other repositories.
    fn elsewhere(&self, mut not_found: NotFound, searched: &str, name: &str) -> NotFound {
        let others: Vec<&str> = self
            .config
            .repositories
            .iter()
            .filter(|r| r.name != searched)
            .filter(|r| {
                self.cached_bytes(r).is_some_and(|b| {
                    CachedIndex::open(&b).is_ok_and(|c| matches!(c.versions(name), Ok(Some(_))))
                })
            })
            .map(|r| r.name.as_str())
            .collect();
        if let Some(first) = others.first() {
            not_found.message.push_str(&format!(
                "; repository {} has it: pass --repo {first}",
                others.join(", ")
            ));
        }
        not_found
    }

    /// Downloads the package of a resolution: its URLs in order (a network
    /// failure moves on to the next), the sha256 checked against the index
    /// (a mismatch refuses the package at once), and the archive checked to
    /// hold the name and versions the index promised.
    pub async fn download(&self, resolution: &Resolution) -> Result<Downloaded> {
        let repo = &resolution.repository;
        let entry = &resolution.entry;
        let expected = match entry.digest.as_deref() {
            Some(d) => Digest::parse(d).map_err(|detail| RepoError::IndexInvalid {
                source_name: repo.name.clone(),
                detail,
            })?,
            None => {
                return Err(RepoError::MissingDigest {
                    package: entry.label(),
                    repository: repo.name.clone(),
                }
                .into());
            }
        };
        if entry.urls.is_empty() {
            return Err(RepoError::IndexInvalid {
                source_name: repo.name.clone(),
                detail: format!("{} lists no URL to download it from", entry.label()),
            }
            .into());
        }
        let base = Self::repo_url(repo)?;
        let client = http::client(&self.transport(repo))?;
        let mut last = None;
        for text in &entry.urls {
            let url = package_url(&base, text, repo.allow_other_hosts)?;
            let shown_url = shown(&url);
            let fetched = http::fetch(
                &client,
                &self.limits,
                &Download {
                    url: &url,
                    max_bytes: self.limits.max_package_bytes,
                    what: "package",
                    credentials: self.credentials_of(&repo.name),
                    origin: Some(&base),
                    accept: None,
                },
            )
            .await;
            let bytes = match fetched {
                Ok(f) => f.bytes,
                Err(e) if e.is_transient() || matches!(e, ClientError::Status { .. }) => {
                    tracing::info!("{e}; trying the next URL");
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            expected.verify(&bytes, &shown_url)?;
            let located = kudo_package::load_archive(&bytes, &shown_url)?;
            check_identity(&located, entry, &shown_url)?;
            return Ok(Downloaded {
                located,
                url: shown_url,
                digest: expected,
            });
        }
        Err(last.unwrap_or_else(|| ClientError::Network {
            url: entry.label(),
            detail: "no URL could be downloaded".into(),
        }))
    }
}

/// The archive must hold the operator and versions its entry names.
pub fn check_identity(located: &Located, entry: &PackageVersion, url: &str) -> Result<()> {
    let op = &located.package.operator;
    let app = op.app_version.as_deref().filter(|a| !a.is_empty());
    let want_app = entry.app_version.as_deref().filter(|a| !a.is_empty());
    if op.name != entry.name || op.operator_version != entry.operator_version || app != want_app {
        return Err(RepoError::PackageMismatch {
            url: url.to_string(),
            detail: format!(
                "the index promised {} but the archive holds {}",
                entry.label(),
                PackageVersion {
                    name: op.name.clone(),
                    operator_version: op.operator_version.clone(),
                    app_version: app.map(str::to_string),
                    ..PackageVersion::default()
                }
                .label()
            ),
        }
        .into());
    }
    // A channel move is judged by the requirements the index lists: the
    // archive must declare the same ones.
    let mut declared: Vec<_> = op
        .dependencies
        .iter()
        .map(|r| (r.operator.clone(), r.range().to_string()))
        .collect();
    let mut promised: Vec<_> = entry
        .dependencies
        .iter()
        .map(|d| d.requirement())
        .map(|r| (r.operator.clone(), r.range().to_string()))
        .collect();
    declared.sort();
    promised.sort();
    if declared != promised {
        return Err(RepoError::PackageMismatch {
            url: url.to_string(),
            detail: format!(
                "the index lists the requirements {promised:?} for {} but the archive declares {declared:?}",
                entry.label()
            ),
        }
        .into());
    }
    Ok(())
}
