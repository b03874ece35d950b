//! Package verification, like `kubectl kudo package verify`: every error
//! and warning KUDO's verifier reports, each naming the file and the item.
//! A package with errors is refused; warnings are printed.

mod api_versions;
mod operator;
mod parameters;
mod quoting;
mod size;
mod templates;

pub use api_versions::verify_api_versions;
pub use size::check_operator_version_size;
pub use templates::ROOT_FIELDS;

use std::fmt;

use crate::Package;

/// How bad an issue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The package is refused.
    Error,
    /// Printed; the package is accepted.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Error => "error",
            Self::Warning => "warning",
        })
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Error or warning.
    pub severity: Severity,
    /// File the problem is in (`operator.yaml`, `params.yaml`, `templates/x.yaml`).
    pub file: String,
    /// What is wrong, naming the item, and what to do.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.severity, self.file, self.message)
    }
}

/// The result of verifying a package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Errors: the package is refused.
    pub errors: Vec<Issue>,
    /// Warnings.
    pub warnings: Vec<Issue>,
}

impl Report {
    /// Whether there is at least one error.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Whether there is nothing to report.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty() && self.warnings.is_empty()
    }

    /// Records an error.
    pub fn error(&mut self, file: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Issue {
            severity: Severity::Error,
            file: file.into(),
            message: message.into(),
        });
    }

    /// Records a warning.
    pub fn warning(&mut self, file: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Issue {
            severity: Severity::Warning,
            file: file.into(),
            message: message.into(),
        });
    }

    /// Errors and warnings, errors first.
    pub fn issues(&self) -> impl Iterator<Item = &Issue> {
        self.errors.iter().chain(&self.warnings)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for issue in self.issues() {
            writeln!(f, "{issue}")?;
        }
        Ok(())
    }
}

pub(crate) const OPERATOR_FILE: &str = "operator.yaml";
pub(crate) const PARAMS_FILE: &str = "params.yaml";

/// The errors `package verify` finds in the package an OperatorVersion
/// stands for: the manager and the webhook check OperatorVersions they did
/// not see come through the CLI (anyone may create one with kubectl). Only
/// errors count: warnings about what the object cannot hold (maintainers,
/// the Kubernetes version) are left out.
pub fn verify_operator_version(ov: &kudo_api::OperatorVersion) -> Report {
    let mut report = verify_scoped(&crate::convert::package_of(ov), Scope::OperatorVersion);
    report.warnings.clear();
    report
}

/// What is verified: a whole package, or what an OperatorVersion holds of
/// one (not the Operator's fields, such as its Kubernetes version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Package,
    OperatorVersion,
}

impl Report {
    /// The first `n` errors on one line each, and how many more.
    pub fn errors_summary(&self, n: usize) -> String {
        let mut lines: Vec<String> = self
            .errors
            .iter()
            .take(n)
            .map(|e| format!("{}: {}", e.file, e.message))
            .collect();
        if self.errors.len() > n {
            lines.push(format!("and {} more", self.errors.len() - n));
        }
        lines.join("; ")
    }
}

pub(crate) fn verify(pkg: &Package) -> Report {
    verify_scoped(pkg, Scope::Package)
}

fn verify_scoped(pkg: &Package, scope: Scope) -> Report {
    let mut report = Report::default();
    if !verify_counts(pkg, &mut report) {
        // The other checks compare these lists with each other.
        return report;
    }
    operator::verify_operator(pkg, scope, &mut report);
    parameters::verify_parameters(pkg, &mut report);
    size::verify_size(pkg, &mut report);
    templates::verify_templates(pkg, &mut report);
    quoting::verify_quoting(pkg, &mut report);
    report
}

/// Whether the package's parameters, tasks and steps are within what a
/// package may have (reported when not).
fn verify_counts(pkg: &Package, r: &mut Report) -> bool {
    let steps: usize = pkg
        .operator
        .plans
        .values()
        .flat_map(|plan| &plan.phases)
        .map(|phase| phase.steps.len())
        .sum();
    let counts = [
        (
            PARAMS_FILE,
            "parameters",
            pkg.params.parameters.len(),
            kudo_api::MAX_PARAMETERS,
        ),
        (
            OPERATOR_FILE,
            "tasks",
            pkg.operator.tasks.len(),
            kudo_api::MAX_TASKS,
        ),
        (
            OPERATOR_FILE,
            "steps in all its plans",
            steps,
            kudo_api::MAX_TASKS,
        ),
    ];
    let mut within = true;
    for (file, what, count, max) in counts {
        if count > max {
            r.error(
                file,
                format!("has {count} {what}; a package may have at most {max}"),
            );
            within = false;
        }
    }
    within
}

/// Masterminds-style lenient semver: an optional `v`, and missing minor or
/// patch numbers count as zero.
pub(crate) fn parse_semver(text: &str) -> Option<semver::Version> {
    let t = text.trim().trim_start_matches('v');
    if let Ok(v) = semver::Version::parse(t) {
        return Some(v);
    }
    let (core, rest) = match t.find(['-', '+']) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut padded = parts.join(".");
    for _ in parts.len()..3 {
        padded.push_str(".0");
    }
    semver::Version::parse(&format!("{padded}{rest}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_is_lenient_like_masterminds() {
        assert!(parse_semver("1.2.3").is_some());
        assert!(parse_semver("v1.15").is_some());
        assert!(parse_semver("1.15.0-rc1").is_some());
        assert!(parse_semver("1").is_some());
        assert!(parse_semver("latest").is_none());
        assert!(parse_semver("1..2").is_none());
    }

    fn ov(template: &str) -> kudo_api::OperatorVersion {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
            "metadata": {"name": "op-0.1.0", "namespace": "ns"},
            "spec": {
                "operator": {"name": "op"}, "version": "0.1.0",
                "parameters": [
                    {"name": "SIZE", "type": "integer", "default": "3"},
                    {"name": "LABELS", "type": "map", "default": "a: b\n"},
                ],
                "templates": {"t.yaml": template},
                "tasks": [{"name": "app", "kind": "Apply", "spec": {"resources": ["t.yaml"]}}],
                "plans": {"deploy": {"strategy": "serial", "phases": [
                    {"name": "main", "strategy": "serial", "steps": [{"name": "s", "tasks": ["app"]}]}
                ]}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn an_operator_version_made_with_kubectl_is_verified_as_its_package_would_be() {
        let fine = ov(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  n: \"{{ .Params.SIZE }}\"\n",
        );
        let report = verify_operator_version(&fine);
        assert!(!report.has_errors(), "{report}");
        let grab = ov("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-b\n");
        let report = verify_operator_version(&grab);
        assert!(
            report
                .errors_summary(3)
                .contains("template contains a Namespace"),
            "{report}"
        );
        let broken = ov("{{ .Params.NOPE }}");
        assert!(verify_operator_version(&broken).has_errors());
    }

    #[test]
    fn a_package_past_the_parameter_or_task_counts_is_refused_before_its_lists_are_compared() {
        let mut big = ov("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
        let extra = big.spec.parameters[0].clone();
        big.spec.parameters = (0..=kudo_api::MAX_PARAMETERS)
            .map(|i| kudo_api::Parameter {
                name: format!("p{i}"),
                ..extra.clone()
            })
            .collect();
        let task = big.spec.tasks[0].clone();
        big.spec.tasks = vec![task; kudo_api::MAX_TASKS + 1];
        let report = verify_operator_version(&big);
        assert_eq!(
            report.errors_summary(5),
            "params.yaml: has 1001 parameters; a package may have at most 1000; \
             operator.yaml: has 1001 tasks; a package may have at most 1000"
        );
    }

    #[test]
    fn report_prints_errors_before_warnings() {
        let mut r = Report::default();
        r.warning("params.yaml", "w");
        r.error("operator.yaml", "e");
        assert_eq!(
            r.to_string(),
            "error: operator.yaml: e\nwarning: params.yaml: w\n"
        );
        assert!(r.has_errors());
    }
}
