//! # kudo-package
//!
//! Operator packages in KUDO's format (`operator.yaml`, `params.yaml`,
//! `templates/**`): loading from a directory or `.tgz`, verification like
//! `kubectl kudo package verify`, conversion to Operator/OperatorVersion,
//! parameter values as templates see them, rendering a task into Kubernetes
//! objects and stamping them with KUDO's labels, annotations and owner
//! references, and translating objects written for built-in API versions
//! Kubernetes no longer serves ([`removed_apis`]).
//!
//! Pure apart from reading package files: namespaced-or-not is decided by a
//! discovery interface passed in, and live objects needed for the
//! dependencies hash are fetched by the caller.
//!
//! ```text
//! let pkg = kudo_package::load(Path::new("operators/zookeeper"))?;
//! let report = pkg.verify();            // errors + warnings, Display
//! let ov = pkg.to_operator_version("default");
//! let steps = kudo_package::render::render_plan(&ov, &options, &StaticDiscovery::default())?;
//! print!("{}", kudo_package::render::format_render_output(&steps));
//! ```

use std::collections::BTreeMap;

mod convert;
mod dependencies;
mod error;
pub mod gofmt;
pub mod hash;
mod load;
pub mod params;
pub mod removed_apis;
pub mod render;
pub mod verify;
pub mod yaml;

pub use dependencies::{ExternalDependency, Resolved, resolve_dependencies};
pub use error::{PackageError, ParamsError, RenderError};
pub use load::{
    Located, MAX_PACKAGE_BYTES, Origin, load, load_archive, load_archive_within, load_from_files,
    load_located,
};

/// A loaded operator package: its two files parsed, and its templates.
#[derive(Clone, Debug, PartialEq)]
pub struct Package {
    /// `operator.yaml`.
    pub operator: kudo_api::package::OperatorFile,
    /// `params.yaml` (empty when the package has none).
    pub params: kudo_api::package::ParamsFile,
    /// Template name (path relative to `templates/`) → text.
    pub templates: BTreeMap<String, String>,
    /// Where the package came from, shown in messages (a path).
    pub source: String,
}

impl Package {
    /// KUDO's OperatorVersion name: `<operator>-<appVersion>-<version>`, or
    /// `<operator>-<version>` without an app version.
    pub fn operator_version_name(&self) -> String {
        operator_version_name(
            &self.operator.name,
            self.operator.app_version.as_deref(),
            &self.operator.operator_version,
        )
    }

    /// The Operator object in `namespace`.
    pub fn to_operator(&self, namespace: &str) -> kudo_api::Operator {
        convert::to_operator(self, namespace)
    }

    /// The OperatorVersion object in `namespace`, with parameters converted
    /// to the CRD form exactly as KUDO converts them.
    pub fn to_operator_version(&self, namespace: &str) -> kudo_api::OperatorVersion {
        convert::to_operator_version(self, namespace)
    }

    /// KUDO's default instance name, `<operator>-instance`.
    pub fn default_instance_name(&self) -> String {
        format!("{}-instance", self.operator.name)
    }

    /// The `package params list` table (see [`params::params_table`]).
    pub fn params_table(&self, descriptions: bool) -> String {
        params::params_table(&self.to_operator_version("default").spec, descriptions)
    }

    /// Every error and warning `kubectl kudo package verify` reports.
    pub fn verify(&self) -> verify::Report {
        verify::verify(self)
    }

    /// The objects of the templates (rendered with default parameter
    /// values) that an API server serving `served` applies in another API
    /// version (warnings) or cannot apply (errors); `target` names the
    /// server in messages, e.g. `Kubernetes 1.32` (see
    /// [`removed_apis::KubernetesRelease`]).
    pub fn verify_api_versions(
        &self,
        served: &dyn removed_apis::ServedApis,
        target: &str,
    ) -> verify::Report {
        verify::verify_api_versions(self, served, target)
    }

    /// Verifies and refuses a package with errors; warnings are kept in
    /// the returned report for the caller to print.
    pub fn verified(&self) -> Result<verify::Report, PackageError> {
        let report = self.verify();
        if report.has_errors() {
            return Err(PackageError::Invalid {
                source_name: self.source.clone(),
                report,
            });
        }
        Ok(report)
    }
}

/// KUDO's `OperatorVersionName`: `<operator>-<appVersion>-<version>`, or
/// `<operator>-<version>` when the app version is empty.
pub fn operator_version_name(operator: &str, app_version: Option<&str>, version: &str) -> String {
    match app_version {
        Some(app) if !app.is_empty() => format!("{operator}-{app}-{version}"),
        _ => format!("{operator}-{version}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_version_name_includes_app_version_when_set() {
        assert_eq!(
            operator_version_name("zookeeper", Some("3.9.2"), "0.1.0"),
            "zookeeper-3.9.2-0.1.0"
        );
        assert_eq!(
            operator_version_name("first", Some(""), "0.2.0"),
            "first-0.2.0"
        );
        assert_eq!(operator_version_name("first", None, "0.2.0"), "first-0.2.0");
    }
}
