//! `search`: the cached indexes (fetched when not cached), newest shown
//! version of each operator or all of them, with why versions are hidden.

use kudo_repo::cache::CachedIndex;
use kudo_repo::channels::hidden_reason;
use kudo_repo::config::RepositoryConfig;
use kudo_repo::resolve::matches_search;
use kudo_repo::{PackageVersion, RepoError};

use super::Repositories;
use crate::error::Result;

/// One line of `search`.
#[derive(Clone, Debug)]
pub struct SearchHit {
    /// Repository name.
    pub repository: String,
    /// The version.
    pub entry: PackageVersion,
    /// Why it or a newer version is hidden (recalled, needs another
    /// Kubernetes version); empty when nothing is.
    pub note: String,
}

/// What `search` lists.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchQuery<'a> {
    /// This repository only (default: all).
    pub repo: Option<&'a str>,
    /// Text in names and descriptions.
    pub text: &'a str,
    /// Every version rather than the newest shown one of each operator.
    pub all_versions: bool,
    /// Pre-releases too.
    pub include_prereleases: bool,
    /// Hide versions that do not run on this Kubernetes version.
    pub kubernetes: Option<&'a kudo_repo::Version>,
}

impl Repositories {
    /// Searches the cached indexes (fetching those not cached). Without
    /// `all_versions`, the newest version of each operator that is not
    /// hidden, with a note naming newer hidden ones and why.
    pub async fn search(&self, query: &SearchQuery<'_>) -> Result<Vec<SearchHit>> {
        let repos: Vec<RepositoryConfig> = match query.repo {
            Some(name) => vec![self.config.choose(Some(name))?.clone()],
            None if self.config.repositories.is_empty() => {
                return Err(RepoError::Config(kudo_repo::config::NO_REPOSITORY.into()).into());
            }
            None => self.config.repositories.clone(),
        };
        let mut hits = Vec::new();
        for repo in repos {
            let index = match self
                .cached_bytes(&repo)
                .and_then(|b| CachedIndex::open(&b).and_then(|c| c.to_index()).ok())
            {
                Some(index) => index,
                None => {
                    self.fetch_index(&repo, self.credentials_of(&repo.name))
                        .await?
                }
            };
            for (name, versions) in &index.entries {
                let recalls = index.recalls(name);
                let shown: Vec<(&PackageVersion, Option<String>)> = versions
                    .iter()
                    .filter(|v| !v.removed && (query.include_prereleases || !v.is_prerelease()))
                    .filter(|v| matches_search(v, query.text))
                    .map(|v| (v, hidden_reason(v, &recalls, query.kubernetes)))
                    .collect();
                let hit = |entry: &PackageVersion, note: String| SearchHit {
                    repository: repo.name.clone(),
                    entry: entry.clone(),
                    note,
                };
                if query.all_versions {
                    hits.extend(
                        shown
                            .iter()
                            .map(|(v, why)| hit(v, why.clone().unwrap_or_default())),
                    );
                    continue;
                }
                let newer_hidden: Vec<String> = shown
                    .iter()
                    .take_while(|(_, why)| why.is_some())
                    .map(|(v, why)| {
                        format!(
                            "{} hidden: {}",
                            v.operator_version,
                            why.as_deref().unwrap_or_default()
                        )
                    })
                    .collect();
                match shown.iter().find(|(_, why)| why.is_none()) {
                    Some((v, _)) => hits.push(hit(v, newer_hidden.join("; "))),
                    // Everything is hidden: show the newest and why.
                    None => {
                        if let Some((v, why)) = shown.first() {
                            hits.push(hit(v, why.clone().unwrap_or_default()));
                        }
                    }
                }
            }
        }
        Ok(hits)
    }
}
