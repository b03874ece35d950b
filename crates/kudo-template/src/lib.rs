//! # kudo-template
//!
//! Go `text/template` semantics plus the sprig v2.22 functions (and KUDO's
//! `toYaml`) that KUDO operator packages use, with `missingkey=error`.
//! Templates render exactly as KUDO rendered them, or fail with an error that
//! names the template, line, column and the action that failed.
//!
//! Pure: no IO. Input data is a [`serde_json::Value`]; numbers that are
//! floats (`is_f64`) print with Go's `%v` float rules, integers as integers.
//!
//! ```text
//! let t = Template::parse("templates/cm.yaml", "name: {{ .Name }}")?;
//! let out = t.render(&serde_json::json!({"Name": "zk"}))?;
//! ```

use std::fmt;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
}

/// A parse or execution error, displayed as `name:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// Template name (e.g. `templates/statefulset.yaml`).
    pub template: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What went wrong, naming the action.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.template, self.line, self.column, self.message
        )
    }
}

impl Template {
    /// Parses `text`; unknown functions are parse errors.
    pub fn parse(name: &str, _text: &str) -> Result<Self, Error> {
        Err(Error {
            template: name.to_string(),
            line: 1,
            column: 1,
            message: "template engine not implemented yet".to_string(),
        })
    }

    /// Names `X` referenced as `.Params.X` or `$.Params.X` anywhere in the template.
    pub fn param_references(&self) -> std::collections::BTreeSet<String> {
        std::collections::BTreeSet::new()
    }

    /// Top-level fields referenced on the root context (`.Name`, `$.Namespace`, `.Params`).
    pub fn root_fields(&self) -> std::collections::BTreeSet<String> {
        std::collections::BTreeSet::new()
    }

    /// Template name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Executes the template against `data`.
    pub fn render(&self, _data: &serde_json::Value) -> Result<String, Error> {
        Err(Error {
            template: self.name.clone(),
            line: 1,
            column: 1,
            message: "template engine not implemented yet".to_string(),
        })
    }
}

/// Parses and renders in one call.
pub fn render(name: &str, text: &str, data: &serde_json::Value) -> Result<String, Error> {
    Template::parse(name, text)?.render(data)
}
