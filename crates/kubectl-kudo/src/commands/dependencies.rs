//! A package and the packages its KudoOperator tasks need, ready to install
//! the way KUDO's CLI installs them: dependencies first (their Operator and
//! OperatorVersion, no Instance), each task pointed at the exact
//! OperatorVersion it will find. A task's `package` is looked up as a path
//! beside the package, then in the package repositories (downloaded, its
//! digest checked), then among the OperatorVersions installed in the
//! namespace.

use std::collections::BTreeSet;

use kube::{Api, ResourceExt};
use kudo_api::OperatorVersion;
use kudo_package::{ExternalDependency, Located, Package, Resolved};
use kudo_repo::Query;
use kudo_repo_client::Repositories;

use super::source::{repo_error, repositories};
use crate::cli::SourceArgs;
use crate::context::KubeContext;
use crate::error::{CliError, Result};

/// A verified package and its verified dependencies, in install order.
pub struct WithDependencies {
    pub package: Package,
    pub dependencies: Vec<Package>,
}

fn package_error(e: kudo_package::PackageError) -> CliError {
    CliError::Package(e.to_string())
}

/// Dependencies are followed at most this deep (a repository could serve
/// an endless chain of new names).
const MAX_DEPTH: usize = 16;

/// The package's dependencies loaded from beside it, without a cluster or
/// repository: tasks naming an operator are left as they are.
pub fn resolve_offline(located: Located) -> Result<Resolved> {
    let resolved = kudo_package::resolve_dependencies(located).map_err(package_error)?;
    for warning in &resolved.warnings {
        errln!("warning: {warning}");
    }
    Ok(resolved)
}

/// Loads the dependencies of `located`, points tasks naming an operator at
/// a repository's package (downloaded with its own dependencies) or else
/// at the newest fitting OperatorVersion in the namespace, and verifies
/// every package (errors refuse, warnings are printed).
pub async fn load_with_dependencies(
    ctx: &KubeContext,
    located: Located,
    source: &SourceArgs,
) -> Result<WithDependencies> {
    let resolved = resolve_offline(located)?;
    let repos = if resolved.external.is_empty() {
        None
    } else {
        Some(repositories()?).filter(|r| !r.config().repositories.is_empty())
    };
    let mut settle = Settle {
        ctx,
        repos: repos.as_ref(),
        source,
        installed: None,
        path: Vec::new(),
        seen: BTreeSet::new(),
    };
    let mut packages = settle.settle(resolved).await?;
    for package in &packages {
        let report = package.verified().map_err(package_error)?;
        if !report.is_clean() {
            crate::output::write_stderr(format_args!("{report}"));
        }
    }
    let package = packages
        .pop()
        .ok_or_else(|| CliError::Package("no package to install".into()))?;
    Ok(WithDependencies {
        package,
        dependencies: packages,
    })
}

/// The walk over dependencies named by operator.
struct Settle<'a> {
    ctx: &'a KubeContext,
    repos: Option<&'a Repositories>,
    source: &'a SourceArgs,
    /// The namespace's OperatorVersions, read once when first needed.
    installed: Option<Vec<OperatorVersion>>,
    /// OperatorVersion names from the root to the package being settled.
    path: Vec<String>,
    /// Repository packages already included.
    seen: BTreeSet<String>,
}

impl Settle<'_> {
    /// Pins the external tasks of `resolved`; returns every package to
    /// install, in order, `resolved`'s root last.
    async fn settle(&mut self, mut resolved: Resolved) -> Result<Vec<Package>> {
        if self.path.len() > MAX_DEPTH {
            return Err(CliError::Package(format!(
                "dependencies nest deeper than {MAX_DEPTH}: {}",
                self.path.join(" -> ")
            )));
        }
        self.path.push(resolved.root.operator_version_name());
        let mut before = Vec::new();
        for external in resolved.external.clone() {
            let from_repo = match self.repos {
                Some(repos) => self.in_repositories(repos, &external, &mut before).await?,
                None => Err(None),
            };
            match from_repo {
                Ok((version, app)) => {
                    resolved.pin(&external, &version, app.as_deref());
                }
                Err(repo_message) => {
                    let (version, app) = self.in_namespace(&external, repo_message).await?;
                    resolved.pin(&external, &version, app.as_deref());
                }
            }
        }
        self.path.pop();
        before.extend(resolved.dependencies);
        before.push(resolved.root);
        Ok(before)
    }

    /// `Ok(Ok(versions))` when a repository has it (its packages are added
    /// to `before`), `Ok(Err(message))` when none has it.
    async fn in_repositories(
        &mut self,
        repos: &Repositories,
        external: &ExternalDependency,
        before: &mut Vec<Package>,
    ) -> Result<Result<(String, Option<String>), Option<String>>> {
        let query = Query {
            name: &external.operator,
            operator_version: external.operator_version.as_deref(),
            app_version: external.app_version.as_deref(),
            include_prereleases: self.source.devel,
        };
        let found = match repos.resolve(self.source.repo.as_deref(), &query).await {
            Ok(found) => found,
            Err(kudo_repo_client::ClientError::Repo(kudo_repo::RepoError::NotFound(nf))) => {
                return Ok(Err(Some(nf.message)));
            }
            Err(e) => return Err(repo_error(e)),
        };
        let entry = &found.entry;
        let id = kudo_package::operator_version_name(
            &entry.name,
            entry.app_version.as_deref(),
            &entry.operator_version,
        );
        if self.path.contains(&id) {
            let mut chain = self.path.clone();
            chain.push(id);
            return Err(CliError::Package(format!(
                "cyclic package dependency: {}",
                chain.join(" -> ")
            )));
        }
        if self.seen.insert(id) {
            let downloaded = repos.download(&found).await.map_err(repo_error)?;
            errln!(
                "dependency of {} (task {}): using {} from repository {} ({}, sha256 {} verified)",
                external.holder,
                external.task,
                entry.label(),
                found.repository.name,
                downloaded.url,
                downloaded.digest
            );
            let child = resolve_offline(downloaded.located)?;
            let packages = Box::pin(self.settle(child)).await?;
            before.extend(packages);
        }
        Ok(Ok((
            entry.operator_version.clone(),
            entry.app_version.clone(),
        )))
    }

    /// The newest fitting OperatorVersion installed in the namespace.
    async fn in_namespace(
        &mut self,
        external: &ExternalDependency,
        repo_message: Option<String>,
    ) -> Result<(String, Option<String>)> {
        if self.installed.is_none() {
            self.installed = Some(installed_versions(self.ctx).await?);
        }
        let installed = self.installed.as_deref().unwrap_or_default();
        let found = newest_fitting(installed, &Wanted::from(external)).ok_or_else(|| {
            missing_dependency(
                external,
                &self.ctx.namespace,
                installed,
                repo_message.as_deref(),
            )
        })?;
        Ok((
            found.spec.version.clone().unwrap_or_default(),
            found.spec.app_version.clone(),
        ))
    }
}

/// The OperatorVersions in the context's namespace.
pub async fn installed_versions(ctx: &KubeContext) -> Result<Vec<OperatorVersion>> {
    let api: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let list = api.list(&Default::default()).await.map_err(|e| {
        CliError::api(
            format!(
                "listing the OperatorVersions in namespace {}",
                ctx.namespace
            ),
            e,
        )
    })?;
    Ok(list.items)
}

fn operator_of(ov: &OperatorVersion) -> Option<&str> {
    ov.spec.operator.as_ref().and_then(|o| o.name.as_deref())
}

fn semver_of(ov: &OperatorVersion) -> Option<semver::Version> {
    let version = ov.spec.version.as_deref()?;
    super::parse_semver(version).ok()
}

/// An operator asked for by name, maybe with versions.
pub struct Wanted<'a> {
    pub operator: &'a str,
    pub operator_version: Option<&'a str>,
    pub app_version: Option<&'a str>,
}

impl<'a> From<&'a ExternalDependency> for Wanted<'a> {
    fn from(external: &'a ExternalDependency) -> Self {
        Self {
            operator: &external.operator,
            operator_version: external.operator_version.as_deref(),
            app_version: external.app_version.as_deref(),
        }
    }
}

impl Wanted<'_> {
    /// `zookeeper version 0.3.0 (app version 3.4.14)`.
    fn describe(&self) -> String {
        let mut text = self.operator.to_string();
        if let Some(v) = self.operator_version {
            text.push_str(&format!(" version {v}"));
        }
        if let Some(a) = self.app_version {
            text.push_str(&format!(" (app version {a})"));
        }
        text
    }
}

/// The installed OperatorVersion that fits: the one with the versions
/// asked for, or else the newest of that operator.
pub fn newest_fitting<'a>(
    installed: &'a [OperatorVersion],
    wanted: &Wanted<'_>,
) -> Option<&'a OperatorVersion> {
    let fits = |asked: Option<&str>, has: Option<&str>| asked.is_none_or(|a| Some(a) == has);
    installed
        .iter()
        .filter(|ov| operator_of(ov) == Some(wanted.operator))
        .filter(|ov| fits(wanted.operator_version, ov.spec.version.as_deref()))
        .filter(|ov| fits(wanted.app_version, ov.spec.app_version.as_deref()))
        .max_by(|a, b| {
            (semver_of(a), a.spec.app_version.as_deref())
                .cmp(&(semver_of(b), b.spec.app_version.as_deref()))
        })
}

/// The installed OperatorVersions of `operator`, for messages.
fn installed_of(installed: &[OperatorVersion], operator: &str) -> String {
    let mut have: Vec<String> = installed
        .iter()
        .filter(|ov| operator_of(ov) == Some(operator))
        .map(ResourceExt::name_any)
        .collect();
    have.sort();
    if have.is_empty() {
        String::new()
    } else {
        format!(" (installed: {})", have.join(", "))
    }
}

/// `install --in-cluster` found nothing that fits.
pub fn not_installed(
    wanted: &Wanted<'_>,
    namespace: &str,
    installed: &[OperatorVersion],
) -> CliError {
    CliError::Other(format!(
        "operator {} is not installed in namespace {namespace}{}; install its package first \
         (`kubectl kudo install <package> --skip-instance`)",
        wanted.describe(),
        installed_of(installed, wanted.operator)
    ))
}

fn missing_dependency(
    external: &ExternalDependency,
    namespace: &str,
    installed: &[OperatorVersion],
    repo_message: Option<&str>,
) -> CliError {
    let repositories = match repo_message {
        Some(message) => format!(" ({message})"),
        None => " (no package repository is configured)".to_string(),
    };
    CliError::Package(format!(
        "{}: task {} (KudoOperator) needs operator {}, which is not a package folder \
         next to the package, not in the package repositories{repositories} and not installed \
         in namespace {namespace}{}: add a repository that has it (`kubectl kudo repo add`), \
         install it first with `kubectl kudo install <its package> --skip-instance`, or set \
         the task's package to the path of its folder",
        external.holder,
        external.task,
        Wanted::from(external).describe(),
        installed_of(installed, &external.operator)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{ObjectReference, OperatorVersionSpec};

    fn ov(operator: &str, version: &str, app: Option<&str>) -> OperatorVersion {
        let name = kudo_package::operator_version_name(operator, app, version);
        OperatorVersion::new(
            &name,
            OperatorVersionSpec {
                operator: Some(ObjectReference {
                    name: Some(operator.into()),
                    ..Default::default()
                }),
                version: Some(version.into()),
                app_version: app.map(str::to_string),
                ..Default::default()
            },
        )
    }

    fn wanted(version: Option<&str>, app: Option<&str>) -> ExternalDependency {
        ExternalDependency {
            holder: "app-1.0.0".into(),
            task: "zk".into(),
            operator: "zookeeper".into(),
            operator_version: version.map(str::to_string),
            app_version: app.map(str::to_string),
        }
    }

    #[test]
    fn without_versions_the_newest_installed_version_of_that_operator_is_used() {
        let installed = [
            ov("zookeeper", "0.10.0", Some("3.4.14")),
            ov("zookeeper", "0.9.0", Some("3.4.14")),
            ov("kafka", "9.0.0", None),
        ];
        let found = newest_fitting(&installed, &(&wanted(None, None)).into()).unwrap();
        assert_eq!(found.name_any(), "zookeeper-3.4.14-0.10.0");
    }

    #[test]
    fn asked_versions_must_match() {
        let installed = [
            ov("zookeeper", "0.10.0", Some("3.4.14")),
            ov("zookeeper", "0.9.0", Some("3.4.14")),
        ];
        let found = newest_fitting(&installed, &(&wanted(Some("0.9.0"), None)).into()).unwrap();
        assert_eq!(found.name_any(), "zookeeper-3.4.14-0.9.0");
        let other_app = wanted(Some("0.9.0"), Some("3.5.0"));
        assert!(newest_fitting(&installed, &(&other_app).into()).is_none());
    }

    #[test]
    fn a_missing_operator_says_what_is_installed_and_what_to_do() {
        let installed = [ov("zookeeper", "0.9.0", None)];
        let message =
            missing_dependency(&wanted(Some("0.10.0"), None), "prod", &installed, None).to_string();
        assert!(
            message.contains(
                "app-1.0.0: task zk (KudoOperator) needs operator zookeeper version 0.10.0"
            ) && message.contains("not installed in namespace prod (installed: zookeeper-0.9.0)")
                && message.contains("kubectl kudo install <its package> --skip-instance"),
            "{message}"
        );
    }
}
