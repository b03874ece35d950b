//! KUDO's install check: a package's `kubernetesVersion` (major.minor) may
//! not be newer than the cluster's.

use k8s_openapi::apimachinery::pkg::version::Info;
use kudo_package::Package;

use crate::context::KubeContext;
use crate::error::{CliError, Result};

/// The leading number of a version part: managed clusters report minors
/// such as `27+`.
fn number(part: &str) -> Option<u64> {
    let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// (major, minor) of the server, from `major`/`minor` or else `gitVersion`.
fn server_major_minor(info: &Info) -> Option<(u64, u64)> {
    if let (Some(major), Some(minor)) = (number(&info.major), number(&info.minor)) {
        return Some((major, minor));
    }
    let mut parts = info.git_version.trim_start_matches('v').split('.');
    Some((number(parts.next()?)?, number(parts.next()?)?))
}

/// The refusal, when `package` needs a newer Kubernetes than `info` reports.
fn too_old(package: &Package, info: &Info) -> Option<String> {
    let required = package.operator.kubernetes_version.as_deref()?;
    let required = super::parse_semver(required).ok()?;
    let (major, minor) = server_major_minor(info)?;
    ((required.major, required.minor) > (major, minor)).then(|| {
        format!(
            "package {} needs Kubernetes {}.{} or newer (kubernetesVersion {}), but the cluster runs {major}.{minor}",
            package.operator.name, required.major, required.minor, required
        )
    })
}

/// Refuses packages that need a newer cluster. A server that does not say
/// its version is not a reason to refuse; that is only logged.
pub async fn check_kubernetes_version<'a>(
    ctx: &KubeContext,
    packages: impl IntoIterator<Item = &'a Package>,
) -> Result<()> {
    let info = match ctx.client.apiserver_version().await {
        Ok(info) => info,
        Err(e) => {
            tracing::warn!(error = %e, "the API server's version could not be read; kubernetesVersion is not checked");
            return Ok(());
        }
    };
    match packages.into_iter().find_map(|p| too_old(p, &info)) {
        Some(message) => Err(CliError::Package(message)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(major: &str, minor: &str, git: &str) -> Info {
        Info {
            major: major.into(),
            minor: minor.into(),
            git_version: git.into(),
            ..Default::default()
        }
    }

    fn package(kubernetes_version: Option<&str>) -> Package {
        let mut operator = String::from("name: db\noperatorVersion: 0.1.0\ntasks: []\nplans: {}\n");
        if let Some(v) = kubernetes_version {
            operator.push_str(&format!("kubernetesVersion: {v}\n"));
        }
        let files = std::collections::BTreeMap::from([(
            "operator.yaml".to_string(),
            operator.into_bytes(),
        )]);
        kudo_package::load_from_files(files, "mem").unwrap()
    }

    #[test]
    fn a_package_for_a_newer_minor_is_refused_naming_both_versions() {
        let message = too_old(&package(Some("1.29.0")), &info("1", "27+", "v1.27.3-eks")).unwrap();
        assert_eq!(
            message,
            "package db needs Kubernetes 1.29 or newer (kubernetesVersion 1.29.0), but the cluster runs 1.27"
        );
    }

    #[test]
    fn only_major_and_minor_count() {
        assert_eq!(
            too_old(&package(Some("1.27.9")), &info("1", "27", "")),
            None
        );
        assert_eq!(
            too_old(&package(Some("1.15.0")), &info("1", "32", "")),
            None
        );
    }

    #[test]
    fn the_git_version_is_used_when_major_and_minor_are_missing() {
        assert!(too_old(&package(Some("1.30.0")), &info("", "", "v1.28.2+k3s1")).is_some());
    }

    #[test]
    fn no_or_unreadable_versions_refuse_nothing() {
        assert_eq!(too_old(&package(None), &info("1", "20", "")), None);
        assert_eq!(
            too_old(&package(Some("latest")), &info("1", "20", "")),
            None
        );
        assert_eq!(
            too_old(&package(Some("1.30.0")), &info("", "", "unknown")),
            None
        );
    }
}
