//! Package verification, like `kubectl kudo package verify`.

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
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in self.errors.iter().chain(&self.warnings) {
            let label = match i.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            writeln!(f, "{label}: {}: {}", i.file, i.message)?;
        }
        Ok(())
    }
}

pub(crate) fn verify(_pkg: &Package) -> Report {
    Report::default()
}
