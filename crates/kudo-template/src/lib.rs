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
//! Every render runs within [`Limits`]: an output budget (4 MiB by default)
//! counted before text is written, and a budget for the strings, lists and
//! maps functions build (16 MiB), checked before a function allocates
//! (`repeat`, `indent`, `printf` widths, `until`, ...). Going over either is
//! an [`Error`] of kind [`ErrorKind::OutputBudget`] or
//! [`ErrorKind::ValueBudget`] naming the template, line and function.
//!
//! [`yaml::to_yaml_v2`] writes JSON with the bytes of Go's `gopkg.in/yaml.v2`
//! (the emitter behind `toYaml`), for callers that hash or compare that text.
//!
//! ```
//! use kudo_template::Template;
//! let t = Template::parse("templates/cm.yaml", "name: {{ .Name }}").unwrap();
//! let out = t.render(&serde_json::json!({"Name": "zk"})).unwrap();
//! assert_eq!(out, "name: zk");
//! ```

mod ast;
mod exec;
mod funcs;
mod lex;
mod limits;
mod parse;
mod refs;
mod trace;
mod value;
mod walk;
pub mod yaml;

use std::collections::{BTreeSet, HashMap};
use std::fmt;

pub use limits::{DEFAULT_MAX_OUTPUT, DEFAULT_MAX_STEPS, DEFAULT_MAX_VALUES, Limits};
pub use trace::{TRACED_ROOT, ValueText};
pub use value::{Value, format_float_g as format_go_float};

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    source: String,
    root: ast::List,
    defines: HashMap<String, ast::List>,
}

/// A parse or execution error, displayed as `name:line:col: message`.
///
/// Every error is fatal for the template: re-rendering the same template with
/// the same data fails the same way, so callers should not retry.
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
    /// Which kind of failure.
    pub kind: ErrorKind,
    /// Steps the render took before it failed (0 for a parse error): a
    /// caller that renders many templates within one budget charges them.
    pub steps: u64,
}

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The template text does not parse.
    Parse,
    /// Go's text/template or a function refused the data.
    Execute,
    /// The output would pass [`Limits::max_output`].
    OutputBudget,
    /// A function would build more than is left of [`Limits::max_values`].
    ValueBudget,
    /// The render would take more than [`Limits::max_steps`] steps.
    StepBudget,
}

impl ErrorKind {
    /// True for the budgets of [`Limits`] (output, values, steps).
    pub fn is_budget(self) -> bool {
        matches!(
            self,
            ErrorKind::OutputBudget | ErrorKind::ValueBudget | ErrorKind::StepBudget
        )
    }
}

/// The output of [`Template::render_traced`]: the text and the pieces of it
/// that carry parameter values.
#[derive(Debug, Clone)]
pub struct Rendered<'a> {
    /// The rendered text.
    pub text: String,
    /// Text written by actions whose value carries `.Params` values, in
    /// output order (parameter names borrowed from the template and data).
    pub values: Vec<ValueText<'a>>,
    /// Steps the render took (see [`Limits::max_steps`]).
    pub steps: u64,
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

/// 1-based line and column (in characters) of a byte offset.
fn line_col(source: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(source.len());
    let before = source.get(..pos).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|p| p + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

impl Template {
    /// Parses `text`; unknown functions are parse errors.
    pub fn parse(name: &str, text: &str) -> Result<Self, Error> {
        let error = |pos: usize, message: String| {
            let (line, column) = line_col(text, pos);
            Error {
                template: name.to_string(),
                line,
                column,
                message,
                kind: ErrorKind::Parse,
                steps: 0,
            }
        };
        let tokens = lex::lex(text).map_err(|e| error(e.pos, e.message))?;
        let parsed = parse::parse(tokens, &funcs::lookup).map_err(|e| error(e.pos, e.message))?;
        Ok(Template {
            name: name.to_string(),
            source: text.to_string(),
            root: parsed.root,
            defines: parsed.defines,
        })
    }

    /// Names `X` referenced as `.Params.X` or `$.Params.X` anywhere in the template.
    pub fn param_references(&self) -> BTreeSet<String> {
        self.references().params
    }

    /// Top-level fields referenced on the root context (`.Name`, `$.Namespace`, `.Params`).
    pub fn root_fields(&self) -> BTreeSet<String> {
        self.references().roots
    }

    fn references(&self) -> refs::Refs {
        let mut r = refs::Refs::default();
        refs::walk(&self.root, true, &mut r);
        for body in self.defines.values() {
            refs::walk(body, false, &mut r);
        }
        r
    }

    /// Template name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Executes the template against `data` within the default [`Limits`].
    pub fn render(&self, data: &serde_json::Value) -> Result<String, Error> {
        self.render_with(data, &Limits::default())
    }

    /// Executes the template against `data` within `limits`.
    pub fn render_with(&self, data: &serde_json::Value, limits: &Limits) -> Result<String, Error> {
        self.execute(data, limits, false).map(|r| r.text)
    }

    /// Executes the template against `data` within `limits`; the text and
    /// the steps it took.
    pub fn render_counted(
        &self,
        data: &serde_json::Value,
        limits: &Limits,
    ) -> Result<(String, u64), Error> {
        self.execute(data, limits, false).map(|r| (r.text, r.steps))
    }

    /// Executes the template against `data` within `limits`, and says which
    /// output text carries values of `data.Params` (see [`ValueText`]):
    /// values are followed through variables, `range`, `with`, `template`
    /// calls and functions, whose results carry what their arguments did.
    /// Text the template writes, and values it computes from nothing but
    /// its own literals and the other root fields, carry nothing.
    pub fn render_traced<'a>(
        &'a self,
        data: &'a serde_json::Value,
        limits: &Limits,
    ) -> Result<Rendered<'a>, Error> {
        self.execute(data, limits, true)
    }

    fn execute<'a>(
        &'a self,
        data: &'a serde_json::Value,
        limits: &Limits,
        trace: bool,
    ) -> Result<Rendered<'a>, Error> {
        let mut exec = exec::Exec::new(&self.source, &self.defines, data, *limits, trace);
        match exec.run(&self.root) {
            Ok(()) => {
                let steps = exec.steps();
                let values = self.locate(std::mem::take(&mut exec.traced));
                Ok(Rendered {
                    text: exec.out,
                    values,
                    steps,
                })
            }
            Err(e) => {
                let (line, column) = line_col(&self.source, e.span.start);
                let context = self.source.get(e.span.start..e.span.end).unwrap_or("");
                let context: String = if context.chars().count() > 20 {
                    format!("{}...", context.chars().take(20).collect::<String>())
                } else {
                    context.to_string()
                };
                Err(Error {
                    template: self.name.clone(),
                    line,
                    column,
                    message: format!("executing {:?} at <{}>: {}", self.name, context, e.message),
                    kind: e.kind,
                    steps: exec.steps(),
                })
            }
        }
    }
}

impl Template {
    /// Fills in the template line of each traced piece (lines are counted
    /// once, in one pass over the source).
    fn locate<'a>(&self, traced: Vec<(ValueText<'a>, usize)>) -> Vec<ValueText<'a>> {
        let mut starts: Vec<usize> = traced.iter().map(|(_, pos)| *pos).collect();
        starts.sort_unstable();
        starts.dedup();
        let mut lines = std::collections::HashMap::with_capacity(starts.len());
        let (mut line, mut from) = (1, 0);
        for pos in starts {
            let upto = pos.min(self.source.len());
            line += self.source.as_bytes()[from..upto]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            from = upto;
            lines.insert(pos, line);
        }
        traced
            .into_iter()
            .map(|(mut text, pos)| {
                text.line = lines.get(&pos).copied().unwrap_or(1);
                text
            })
            .collect()
    }
}

/// Names of all functions templates may call (Go builtins, sprig subset, `toYaml`).
pub fn function_names() -> Vec<&'static str> {
    funcs::names()
}

/// Parses and renders in one call.
pub fn render(name: &str, text: &str, data: &serde_json::Value) -> Result<String, Error> {
    Template::parse(name, text)?.render(data)
}
