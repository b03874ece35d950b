//! What a render may produce: output budgets per template and per step, a
//! budget for values built by template functions, and the largest object
//! an API server stores. A hostile parameter or template fails its step
//! with an error naming the template, line and function; it never makes
//! the process allocate without bound.

use kudo_api::OperatorVersion;
use serde::Serialize;
use serde_json::Value;

use super::injection::{self, Shape};
use crate::RenderError;

/// Largest object, as compact JSON, that kudo-rs sends to an API server:
/// 1.5 MiB less 64 KiB. etcd refuses a write bigger than its
/// `--max-request-bytes`, 1.5 MiB by default, and that write carries the
/// object together with its key, managedFields and the metadata the server
/// adds, for which 64 KiB is left. (The API server itself refuses request
/// bodies over 3 MiB, so etcd's limit is the one that bites.)
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024 - 64 * 1024;

/// Most objects one task may render: each is an apply request per run
/// and a line of the Instance's status.
pub const MAX_TASK_OBJECTS: usize = 1000;

/// Default output budget of one template: 4 MiB.
pub const DEFAULT_MAX_TEMPLATE_OUTPUT: usize = kudo_template::DEFAULT_MAX_OUTPUT;

/// Default output budget of one step, all its templates together: 16 MiB.
pub const DEFAULT_MAX_STEP_OUTPUT: usize = 16 << 20;

/// Default budget for values template functions build while one template
/// renders: 16 MiB.
pub const DEFAULT_MAX_TEMPLATE_VALUES: usize = kudo_template::DEFAULT_MAX_VALUES;

/// Default step budget of one template (actions, range iterations, function
/// calls and the elements they walk, template calls): 1,000,000.
pub const DEFAULT_MAX_TEMPLATE_STEPS: u64 = kudo_template::DEFAULT_MAX_STEPS;

/// Default step budget of one step, all its templates together: four
/// templates' worth (a task may list a template many times).
pub const DEFAULT_MAX_STEP_STEPS: u64 = 4 * DEFAULT_MAX_TEMPLATE_STEPS;

/// Budgets of a render ([`super::RenderContext::limits`],
/// [`super::render_plan_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderLimits {
    /// Most bytes one template may render. Default 4 MiB.
    pub max_template_output: usize,
    /// Most bytes the templates of one step may render together: every
    /// template one `render_task` call renders, and in `render_plan` every
    /// template of every task of the step. Default 16 MiB.
    pub max_step_output: usize,
    /// Most bytes of strings, lists and maps template functions may build
    /// while one template renders. Default 16 MiB.
    pub max_template_values: usize,
    /// Most steps one template may take (actions, range iterations,
    /// function calls and the elements they walk, template calls). Default
    /// 1,000,000.
    pub max_template_steps: u64,
    /// Most steps the templates of one step may take together. Default
    /// 4,000,000.
    pub max_step_steps: u64,
}

impl Default for RenderLimits {
    fn default() -> Self {
        Self {
            max_template_output: DEFAULT_MAX_TEMPLATE_OUTPUT,
            max_step_output: DEFAULT_MAX_STEP_OUTPUT,
            max_template_values: DEFAULT_MAX_TEMPLATE_VALUES,
            max_template_steps: DEFAULT_MAX_TEMPLATE_STEPS,
            max_step_steps: DEFAULT_MAX_STEP_STEPS,
        }
    }
}

/// Output left to the templates of one step.
#[derive(Debug)]
pub(crate) struct StepBudget {
    limits: RenderLimits,
    used: usize,
    steps: u64,
}

impl StepBudget {
    pub(crate) fn new(limits: RenderLimits) -> Self {
        Self {
            limits,
            used: 0,
            steps: 0,
        }
    }

    /// The template engine's limits for the next template: its own output
    /// budget or what is left of the step's, whichever is smaller.
    pub(crate) fn template_limits(&self) -> kudo_template::Limits {
        let step_left = self.limits.max_step_output.saturating_sub(self.used);
        kudo_template::Limits {
            max_output: self.limits.max_template_output.min(step_left),
            max_values: self.limits.max_template_values,
            max_steps: self
                .limits
                .max_template_steps
                .min(self.limits.max_step_steps.saturating_sub(self.steps)),
        }
    }

    /// Renders a template by name with `data` within the budget, refusing a
    /// parameter value that would add to the YAML the template writes
    /// (see [`super::injection`]).
    pub(crate) fn render_template(
        &mut self,
        ov: &OperatorVersion,
        task: &str,
        template: &str,
        data: &Value,
        shape: Shape,
    ) -> Result<String, RenderError> {
        let text = ov
            .spec
            .templates
            .get(template)
            .ok_or_else(|| RenderError::MissingTemplate {
                task: task.to_string(),
                template: template.to_string(),
            })?;
        let template_err = |e: kudo_template::Error| RenderError::Template {
            task: task.to_string(),
            detail: e.to_string(),
        };
        let parsed = kudo_template::Template::parse(template, text).map_err(template_err)?;
        let limits = self.template_limits();
        let out = parsed
            .render_traced(data, &limits)
            .inspect_err(|e| self.charge(e.steps, 0))
            .map_err(|e| match e.kind {
                kind if kind.is_budget() => RenderError::Budget {
                    task: task.to_string(),
                    detail: format!("{e}{}", self.explain(&e, &limits)),
                },
                _ => template_err(e),
            })?;
        let namespace = data["Namespace"].as_str().unwrap_or_default();
        injection::check(&out, shape, namespace).map_err(|e| RenderError::Injection {
            task: task.to_string(),
            detail: e.describe(template),
        })?;
        self.charge(out.steps, out.text.len());
        Ok(out.text)
    }

    /// Counts what a template took: its steps and its output.
    pub(crate) fn charge(&mut self, steps: u64, output: usize) {
        self.steps = self.steps.saturating_add(steps);
        self.used = self.used.saturating_add(output);
    }

    /// Whether the next template gets less than a template's own budget,
    /// because the templates before it took the rest of the step's.
    pub(crate) fn squeezed(&self) -> bool {
        let limits = self.template_limits();
        limits.max_steps < self.limits.max_template_steps
            || limits.max_output < self.limits.max_template_output
    }

    /// Which budget ran out, for the error message.
    fn explain(&self, e: &kudo_template::Error, limits: &kudo_template::Limits) -> String {
        let RenderLimits {
            max_template_output,
            max_step_output,
            max_template_values,
            max_template_steps,
            max_step_steps,
        } = self.limits;
        match e.kind {
            kudo_template::ErrorKind::OutputBudget if limits.max_output < max_template_output => {
                format!(
                    " (a step's templates may render {max_step_output} bytes together; \
                     earlier templates of this step rendered {})",
                    self.used
                )
            }
            kudo_template::ErrorKind::OutputBudget => format!(
                " (a template may render {max_template_output} bytes, a step \
                 {max_step_output})"
            ),
            kudo_template::ErrorKind::StepBudget if limits.max_steps < max_template_steps => {
                format!(
                    " (a step's templates may take {max_step_steps} steps together; earlier \
                     templates of this step took {})",
                    self.steps
                )
            }
            kudo_template::ErrorKind::StepBudget => {
                format!(" (a template may take {max_template_steps} steps)")
            }
            _ => {
                format!(" (a template's functions may build {max_template_values} bytes of values)")
            }
        }
    }
}

/// Bytes of `value` as compact JSON, counted without writing it out.
pub fn json_size(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting cannot fail, and JSON values always serialize.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// `Kind namespace/name` (or `Kind name`) of an object, for messages.
pub(crate) fn describe_object(obj: &Value) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let meta = obj.get("metadata");
    let name = text(meta.and_then(|m| m.get("name").or_else(|| m.get("generateName"))));
    let namespace = text(meta.and_then(|m| m.get("namespace")));
    let kind = text(obj.get("kind"));
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// Refuses an object an API server would not store.
pub(crate) fn check_object_size(task: &str, obj: &Value) -> Result<(), RenderError> {
    let size = json_size(obj);
    if size > MAX_OBJECT_BYTES {
        return Err(RenderError::ObjectTooLarge {
            task: task.to_string(),
            object: describe_object(obj),
            size,
            limit: MAX_OBJECT_BYTES,
        });
    }
    Ok(())
}
