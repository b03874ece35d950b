//! A package and the packages its KudoOperator tasks need, ready to install
//! the way KUDO's CLI installs them: dependencies first (their Operator and
//! OperatorVersion, no Instance), each task pointed at the OperatorVersion
//! it will find. A task naming an operator rather than a path must find it
//! installed in the namespace: kudo-rs has no package repositories.

use std::path::Path;

use kube::{Api, ResourceExt};
use kudo_api::OperatorVersion;
use kudo_package::{ExternalDependency, Package, Resolved};

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

/// The package's dependencies loaded from beside it, without a cluster:
/// tasks naming an operator are left as they are.
pub fn resolve_offline(path: &Path) -> Result<Resolved> {
    let located = kudo_package::load_located(path).map_err(package_error)?;
    let resolved = kudo_package::resolve_dependencies(located).map_err(package_error)?;
    for warning in &resolved.warnings {
        errln!("warning: {warning}");
    }
    Ok(resolved)
}

/// Loads the package at `path` with its dependencies, points tasks naming
/// an operator at the newest fitting OperatorVersion in the namespace, and
/// verifies every package (errors refuse, warnings are printed).
pub async fn load_with_dependencies(ctx: &KubeContext, path: &Path) -> Result<WithDependencies> {
    let mut resolved = resolve_offline(path)?;
    if !resolved.external.is_empty() {
        let installed = installed_versions(ctx).await?;
        for external in resolved.external.clone() {
            let found = newest_fitting(&installed, &Wanted::from(&external))
                .ok_or_else(|| missing_dependency(&external, &ctx.namespace, &installed))?;
            let version = found.spec.version.clone().unwrap_or_default();
            resolved.pin(&external, &version, found.spec.app_version.as_deref());
        }
    }
    for package in std::iter::once(&resolved.root).chain(&resolved.dependencies) {
        let report = package.verified().map_err(package_error)?;
        if !report.is_clean() {
            crate::output::write_stderr(format_args!("{report}"));
        }
    }
    Ok(WithDependencies {
        package: resolved.root,
        dependencies: resolved.dependencies,
    })
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
) -> CliError {
    CliError::Package(format!(
        "{}: task {} (KudoOperator) needs operator {}, which is not a package folder \
         next to the package and not installed in namespace {namespace}{}. kudo-rs has no \
         package repositories: install it first with `kubectl kudo install <its package> \
         --skip-instance`, or set the task's package to the path of its folder",
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
            missing_dependency(&wanted(Some("0.10.0"), None), "prod", &installed).to_string();
        assert!(
            message.contains(
                "app-1.0.0: task zk (KudoOperator) needs operator zookeeper version 0.10.0"
            ) && message.contains("not installed in namespace prod (installed: zookeeper-0.9.0)")
                && message.contains("kubectl kudo install <its package> --skip-instance"),
            "{message}"
        );
    }
}
