//! Whether a package's OperatorVersion fits what an API server stores: the
//! templates are stored in it, so a 50 MB template cannot be installed.

use kudo_api::OperatorVersion;

use super::{OPERATOR_FILE, Report};
use crate::render::{MAX_OBJECT_BYTES, json_size};
use crate::{Package, PackageError};

/// Templates named in the size message.
const LARGEST_SHOWN: usize = 3;

/// The biggest templates of `ov`, `a.yaml (52428800 bytes), b.yaml (...)`.
fn largest_templates(ov: &OperatorVersion) -> String {
    let mut sizes: Vec<(&String, usize)> = ov
        .spec
        .templates
        .iter()
        .map(|(name, text)| (name, text.len()))
        .collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let shown: Vec<String> = sizes
        .iter()
        .take(LARGEST_SHOWN)
        .map(|(name, size)| format!("{name} ({size} bytes)"))
        .collect();
    if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    }
}

/// Refuses an OperatorVersion bigger than [`MAX_OBJECT_BYTES`] as JSON,
/// saying by how much and which templates are the biggest; returns its
/// size otherwise. Call it on the object about to be created.
pub fn check_operator_version_size(ov: &OperatorVersion) -> Result<usize, PackageError> {
    let size = json_size(ov);
    if size > MAX_OBJECT_BYTES {
        let name = format!(
            "{}/{}",
            ov.metadata.namespace.as_deref().unwrap_or(""),
            ov.metadata.name.as_deref().unwrap_or("")
        );
        return Err(PackageError::TooLarge {
            name,
            size,
            limit: MAX_OBJECT_BYTES,
            largest: largest_templates(ov),
        });
    }
    Ok(size)
}

/// Whether the package would make an OperatorVersion an API server stores.
pub(super) fn verify_size(pkg: &Package, r: &mut Report) {
    let ov = pkg.to_operator_version("default");
    if let Err(PackageError::TooLarge {
        size,
        limit,
        largest,
        ..
    }) = check_operator_version_size(&ov)
    {
        r.error(
            OPERATOR_FILE,
            format!(
                "the OperatorVersion would be {size} bytes, {} bytes over the {limit}-byte \
                 limit of what an API server stores (etcd refuses bigger objects); templates \
                 are stored in it, the largest: {largest}",
                size - limit
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const OPERATOR: &str = "name: big\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [app]\n";

    fn package(template: String) -> Package {
        let files = BTreeMap::from([
            ("operator.yaml".to_string(), OPERATOR.as_bytes().to_vec()),
            ("templates/cm.yaml".to_string(), template.into_bytes()),
        ]);
        crate::load_from_files(files, "big").unwrap()
    }

    #[test]
    fn a_package_with_a_50_mb_template_is_refused_by_verify_with_the_overage() {
        let template = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {}\n",
            "x".repeat(50 << 20)
        );
        let template_size = template.len();
        let pkg = package(template);
        // `verified`, which install and upgrade call, refuses it.
        let Err(PackageError::Invalid { report, .. }) = pkg.verified() else {
            panic!("a 50 MB template was accepted");
        };
        let error = report
            .errors
            .iter()
            .find(|e| e.message.contains("OperatorVersion would be"))
            .unwrap_or_else(|| panic!("no size error in:\n{report}"));
        let size = json_size(&pkg.to_operator_version("default"));
        let over = size - MAX_OBJECT_BYTES;
        assert_eq!(error.file, "operator.yaml");
        assert!(
            error.message.contains(&format!(
                "would be {size} bytes, {over} bytes over the {MAX_OBJECT_BYTES}-byte limit"
            )) && error
                .message
                .contains(&format!("cm.yaml ({template_size} bytes)")),
            "{}",
            error.message
        );
    }

    #[test]
    fn an_operator_version_over_the_limit_is_refused_naming_it_and_the_overage() {
        let pkg = package("x".repeat(MAX_OBJECT_BYTES));
        let ov = pkg.to_operator_version("prod");
        let err = check_operator_version_size(&ov).unwrap_err();
        let size = json_size(&ov);
        assert_eq!(
            err.to_string(),
            format!(
                "OperatorVersion prod/big-0.1.0 would be {size} bytes, {} bytes over the \
                 {MAX_OBJECT_BYTES}-byte limit of what an API server stores (etcd refuses \
                 bigger objects); largest templates: cm.yaml ({MAX_OBJECT_BYTES} bytes)",
                size - MAX_OBJECT_BYTES
            )
        );
        let small = package("kind: ConfigMap\n".into()).to_operator_version("prod");
        assert!(check_operator_version_size(&small).is_ok());
    }

    #[test]
    fn a_template_that_renders_an_object_over_the_limit_is_an_error_in_verify() {
        let template = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  \
             a: \"{{{{ repeat {MAX_OBJECT_BYTES} \"x\" }}}}\"\n"
        );
        let report = package(template).verify().to_string();
        assert!(
            report.contains(&format!(
                "error: templates/cm.yaml: renders ConfigMap big of {} bytes with default \
                 parameter values, over the {MAX_OBJECT_BYTES}-byte limit",
                MAX_OBJECT_BYTES + 80
            )),
            "{report}"
        );
    }
}
