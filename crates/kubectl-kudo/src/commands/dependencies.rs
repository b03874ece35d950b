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
        eprintln!("warning: {warning}");
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
            let found = newest_fitting(&installed, &external)
                .ok_or_else(|| missing_dependency(&external, &ctx.namespace, &installed))?;
            let version = found.spec.version.clone().unwrap_or_default();
            resolved.pin(&external, &version, found.spec.app_version.as_deref());
        }
    }
    for package in std::iter::once(&resolved.root).chain(&resolved.dependencies) {
        let report = package.verified().map_err(package_error)?;
        if !report.is_clean() {
            eprint!("{report}");
        }
    }
    Ok(WithDependencies {
        package: resolved.root,
        dependencies: resolved.dependencies,
    })
}

async fn installed_versions(ctx: &KubeContext) -> Result<Vec<OperatorVersion>> {
    let api: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let list = api.list(&Default::default()).await.map_err(|e| {
        CliError::api(
            format!(
                "listing OperatorVersions in {} to resolve dependencies",
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
    semver::Version::parse(version.trim_start_matches('v')).ok()
}

/// The installed OperatorVersion a task naming an operator gets: the one
/// with the versions it asks for, or else the newest of that operator.
fn newest_fitting<'a>(
    installed: &'a [OperatorVersion],
    wanted: &ExternalDependency,
) -> Option<&'a OperatorVersion> {
    let asks =
        |asked: &Option<String>, has: Option<&str>| asked.as_deref().is_none_or(|a| Some(a) == has);
    installed
        .iter()
        .filter(|ov| operator_of(ov) == Some(wanted.operator.as_str()))
        .filter(|ov| asks(&wanted.operator_version, ov.spec.version.as_deref()))
        .filter(|ov| asks(&wanted.app_version, ov.spec.app_version.as_deref()))
        .max_by(|a, b| {
            (semver_of(a), a.spec.app_version.as_deref())
                .cmp(&(semver_of(b), b.spec.app_version.as_deref()))
        })
}

fn missing_dependency(
    external: &ExternalDependency,
    namespace: &str,
    installed: &[OperatorVersion],
) -> CliError {
    let mut asked = String::new();
    if let Some(v) = &external.operator_version {
        asked.push_str(&format!(" version {v}"));
    }
    if let Some(a) = &external.app_version {
        asked.push_str(&format!(" (app version {a})"));
    }
    let mut have: Vec<String> = installed
        .iter()
        .filter(|ov| operator_of(ov) == Some(external.operator.as_str()))
        .map(ResourceExt::name_any)
        .collect();
    have.sort();
    let have = if have.is_empty() {
        String::new()
    } else {
        format!(" (installed: {})", have.join(", "))
    };
    CliError::Package(format!(
        "{}: task {} (KudoOperator) needs operator {}{asked}, which is not a package folder \
         next to the package and not installed in namespace {namespace}{have}. kudo-rs has no \
         package repositories: install it first with `kubectl kudo install <its package> \
         --skip-instance`, or set the task's package to the path of its folder",
        external.holder, external.task, external.operator
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
        let found = newest_fitting(&installed, &wanted(None, None)).unwrap();
        assert_eq!(found.name_any(), "zookeeper-3.4.14-0.10.0");
    }

    #[test]
    fn asked_versions_must_match() {
        let installed = [
            ov("zookeeper", "0.10.0", Some("3.4.14")),
            ov("zookeeper", "0.9.0", Some("3.4.14")),
        ];
        let found = newest_fitting(&installed, &wanted(Some("0.9.0"), None)).unwrap();
        assert_eq!(found.name_any(), "zookeeper-3.4.14-0.9.0");
        assert!(newest_fitting(&installed, &wanted(Some("0.9.0"), Some("3.5.0"))).is_none());
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
