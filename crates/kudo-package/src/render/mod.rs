//! Rendering a task of an OperatorVersion into what the executor acts on:
//! enhanced Kubernetes objects to apply or delete, a pipe pod, a child
//! Instance, or a Dummy outcome, for KUDO's task kinds (Apply, Delete,
//! Toggle, Dummy, Pipe, KudoOperator), enhanced as KUDO enhances them.
//!
//! Objects come out in template order (the order of `resources`, then the
//! order inside each file), with CustomResourceDefinitions moved first,
//! instead of KUDO's random order. No task renders a Namespace.
//!
//! Rendering runs within [`RenderLimits`] (4 MiB of output per template,
//! 16 MiB per step, 16 MiB of values built per template), and objects
//! bigger than [`MAX_OBJECT_BYTES`] are refused before any request.

mod admission;
mod budget;
mod discovery;
mod enhance;
mod injection;
mod kudo_operator;
mod namespace;
mod offline;
mod parse;
mod pipe;
mod plan;

use std::collections::BTreeMap;

use kudo_api::{Instance, InstanceMaintenance, OperatorVersion, Task, TaskKind};
use serde_json::{Map, Value, json};

use crate::RenderError;

pub use admission::check_parameter_values;
pub use budget::{
    DEFAULT_MAX_STEP_OUTPUT, DEFAULT_MAX_STEP_STEPS, DEFAULT_MAX_TEMPLATE_OUTPUT,
    DEFAULT_MAX_TEMPLATE_STEPS, DEFAULT_MAX_TEMPLATE_VALUES, MAX_OBJECT_BYTES, MAX_TASK_OBJECTS,
    RenderLimits, json_size,
};
pub(crate) use budget::{StepBudget, describe_object};
pub use discovery::{AssumeNamespaced, Discovery, StaticDiscovery, api_group, crd_defined_kind};
pub use enhance::{EnhanceMode, enhance_object};
pub(crate) use enhance::{
    object_field as object_field_mut, pod_template as pod_template_of,
    pod_templates_mut as pod_templates_of_mut,
};
pub use namespace::{namespace_manifest, plain_namespace};
pub use offline::render_plan_offline;
pub use parse::parse_objects;
use parse::refuse_namespaces;
pub(crate) use pipe::validate_pipe_specs;
pub use pipe::{PipeFile, pipe_name_part};
pub use plan::{
    PlanRenderOptions, RenderedStep, format_render_output, render_plan, render_plan_with,
};

/// Everything templates and the enhancer need to know about the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderContext {
    /// Instance name (`.Name`).
    pub instance_name: String,
    /// Instance namespace (`.Namespace`).
    pub namespace: String,
    /// Instance uid, for owner references (none: no owner reference is added).
    pub instance_uid: Option<String>,
    /// Operator name (`.OperatorName`).
    pub operator_name: String,
    /// OperatorVersion `spec.version` (`.OperatorVersion`).
    pub operator_version: String,
    /// OperatorVersion `spec.appVersion` (`.AppVersion`).
    pub app_version: String,
    /// Plan name (`.PlanName`).
    pub plan: String,
    /// Phase name (`.PhaseName`).
    pub phase: String,
    /// Step name (`.StepName`).
    pub step: String,
    /// Plan execution uid (annotation `kudo.dev/last-plan-execution-uid`).
    pub plan_uid: String,
    /// `.Params`, built by [`crate::params::template_values`].
    pub params: Map<String, Value>,
    /// `.Pipes`: pipe key → artifact name (see [`pipe_artifact_names`]).
    pub pipes: BTreeMap<String, String>,
    /// `.Maintenance`: the node maintenance the Instance is told of
    /// (empty outside maintenance, and in offline renders).
    pub maintenance: MaintenanceContext,
    /// Budgets of the render (defaults: 4 MiB per template, 16 MiB per step).
    pub limits: RenderLimits,
}

impl RenderContext {
    /// A context for `ov`'s operator with its names filled in from the OV.
    pub fn for_operator_version(ov: &OperatorVersion) -> Self {
        Self {
            operator_name: ov
                .spec
                .operator
                .as_ref()
                .and_then(|o| o.name.clone())
                .unwrap_or_default(),
            operator_version: ov.spec.version.clone().unwrap_or_default(),
            app_version: ov.spec.app_version.clone().unwrap_or_default(),
            ..Default::default()
        }
    }

    /// The top-level template data: KUDO's names (`.OperatorName`, `.Name`,
    /// `.Namespace`, ...), `.Params`, `.Pipes` and `.Maintenance`.
    pub fn template_data(&self) -> Value {
        json!({
            "OperatorName": self.operator_name,
            "Name": self.instance_name,
            "Namespace": self.namespace,
            "AppVersion": self.app_version,
            "OperatorVersion": self.operator_version,
            "PlanName": self.plan,
            "PhaseName": self.phase,
            "StepName": self.step,
            "Params": Value::Object(self.params.clone()),
            "Pipes": self.pipes,
            "Maintenance": self.maintenance.template_value(),
        })
    }
}

/// `.Maintenance` of the template context: the scheduled nodes an
/// Instance's pods run on and the window, as `status.maintenance` records
/// them. Empty (`[]`, `""`, `""`) when the Instance is not affected by node
/// maintenance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceContext {
    /// `.Maintenance.Nodes`: names of the scheduled nodes.
    pub nodes: Vec<String>,
    /// `.Maintenance.Start`: start of the earliest window, RFC 3339.
    pub start: String,
    /// `.Maintenance.End`: end of the latest window, RFC 3339.
    pub end: String,
}

impl MaintenanceContext {
    /// The context for what an Instance was told (`status.maintenance`).
    pub fn from_status(m: &InstanceMaintenance) -> Self {
        Self {
            nodes: m.nodes.clone(),
            start: rfc3339(&m.start),
            end: rfc3339(&m.end),
        }
    }

    /// The context of `inst`: its `status.maintenance`, else empty.
    pub fn of_instance(inst: &Instance) -> Self {
        inst.status
            .as_ref()
            .and_then(|s| s.maintenance.as_ref())
            .map(Self::from_status)
            .unwrap_or_default()
    }

    /// The value templates see as `.Maintenance`.
    pub fn template_value(&self) -> Value {
        json!({
            "Nodes": self.nodes,
            "Start": self.start,
            "End": self.end,
        })
    }
}

/// A time as Kubernetes writes it in status (`2024-05-01T02:00:00Z`).
fn rfc3339(t: &kudo_api::Time) -> String {
    t.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// What a task amounts to once rendered.
// The Instance variant is large, but a task renders once per step; boxing
// would only complicate matching for callers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum RenderedTask {
    /// Apply these enhanced objects, in order (CRDs and Namespaces first).
    Apply {
        /// The objects.
        objects: Vec<Value>,
    },
    /// Delete these objects (namespace forced; unknown kinds dropped).
    Delete {
        /// The objects.
        objects: Vec<Value>,
    },
    /// A Dummy task.
    Dummy {
        /// Fail with "dummy error".
        want_err: bool,
        /// The failure is fatal.
        fatal: bool,
        /// Report done.
        done: bool,
    },
    /// Run this pod and copy the files out into Secrets/ConfigMaps.
    Pipe {
        /// The enhanced pipe pod (waiter container added).
        pod: Value,
        /// Files to copy and the artifact each becomes.
        files: Vec<PipeFile>,
    },
    /// Create or update this child Instance.
    KudoOperator {
        /// The child Instance.
        instance: kudo_api::Instance,
    },
}

impl RenderedTask {
    /// The objects this task writes (Apply objects, pipe pod, child
    /// Instance as JSON); empty for Delete and Dummy.
    pub fn objects_to_apply(&self) -> Vec<Value> {
        match self {
            Self::Apply { objects } => objects.clone(),
            Self::Pipe { pod, .. } => vec![pod.clone()],
            Self::KudoOperator { instance } => serde_json::to_value(instance)
                .map(|v| vec![v])
                .unwrap_or_default(),
            Self::Delete { .. } | Self::Dummy { .. } => Vec::new(),
        }
    }
}

/// The task called `task_name`, or an error naming it.
fn find_task<'a>(ov: &'a OperatorVersion, task_name: &str) -> Result<&'a Task, RenderError> {
    ov.spec
        .task(task_name)
        .ok_or_else(|| RenderError::UnknownTask {
            task: task_name.to_string(),
        })
}

/// Builds the error for a task whose definition is unusable.
fn invalid_task(task_name: &str) -> impl Fn(String) -> RenderError + '_ {
    move |detail| RenderError::InvalidTask {
        task: task_name.to_string(),
        detail,
    }
}

/// Renders one task of `ov` for the step described by `ctx`, within
/// `ctx.limits` (the task's templates share the step budget). Toggle tasks
/// are resolved here into Apply or Delete. Objects bigger than
/// [`MAX_OBJECT_BYTES`] are refused.
pub fn render_task(
    ov: &OperatorVersion,
    task_name: &str,
    ctx: &RenderContext,
    discovery: &dyn Discovery,
) -> Result<RenderedTask, RenderError> {
    render_task_in(
        ov,
        task_name,
        ctx,
        discovery,
        &mut StepBudget::new(ctx.limits),
    )
}

/// [`render_task`] drawing on a step budget shared with other tasks.
pub(crate) fn render_task_in(
    ov: &OperatorVersion,
    task_name: &str,
    ctx: &RenderContext,
    discovery: &dyn Discovery,
    budget: &mut StepBudget,
) -> Result<RenderedTask, RenderError> {
    let rendered = render_unchecked(ov, task_name, ctx, discovery, budget)?;
    match &rendered {
        RenderedTask::Apply { objects } => objects
            .iter()
            .try_for_each(|o| budget::check_object_size(task_name, o))?,
        RenderedTask::Pipe { pod, .. } => budget::check_object_size(task_name, pod)?,
        RenderedTask::KudoOperator { instance } => {
            let instance = serde_json::to_value(instance).unwrap_or(Value::Null);
            budget::check_object_size(task_name, &instance)?;
        }
        // Deletions send no bodies; Dummy tasks send nothing.
        RenderedTask::Delete { .. } | RenderedTask::Dummy { .. } => {}
    }
    Ok(rendered)
}

fn render_unchecked(
    ov: &OperatorVersion,
    task_name: &str,
    ctx: &RenderContext,
    discovery: &dyn Discovery,
    budget: &mut StepBudget,
) -> Result<RenderedTask, RenderError> {
    let task = find_task(ov, task_name)?;
    let invalid = invalid_task(task_name);
    let kind = task.task_kind().ok_or_else(|| {
        invalid(format!(
            "unknown task kind {:?}; expected one of Apply, Delete, Toggle, Dummy, Pipe, KudoOperator",
            task.kind
        ))
    })?;
    let spec = &task.spec;
    match kind {
        TaskKind::Apply | TaskKind::Delete | TaskKind::Toggle => {
            if spec.resources.is_empty() {
                return Err(invalid(format!(
                    "{kind} task has an empty resource list; use a Dummy task for a step that does nothing"
                )));
            }
            let apply = match kind {
                TaskKind::Apply => true,
                TaskKind::Delete => false,
                _ => toggle_value(task_name, spec.parameter.as_deref(), &ctx.params)?,
            };
            let objects = render_resources(ov, task_name, &spec.resources, ctx, budget)?;
            if apply {
                let objects = enhance::enhance_all(
                    order_for_apply(objects),
                    task_name,
                    ctx,
                    discovery,
                    EnhanceMode::Apply,
                )?;
                Ok(RenderedTask::Apply { objects })
            } else {
                let objects =
                    enhance::enhance_all(objects, task_name, ctx, discovery, EnhanceMode::Delete)?;
                Ok(RenderedTask::Delete { objects })
            }
        }
        TaskKind::Dummy => Ok(RenderedTask::Dummy {
            want_err: spec.want_err.unwrap_or(false),
            fatal: spec.fatal.unwrap_or(false),
            done: spec.done.unwrap_or(false),
        }),
        TaskKind::Pipe => pipe::render_pipe(ov, task_name, ctx, discovery, budget),
        TaskKind::KudoOperator => kudo_operator::render_kudo_operator(ov, task_name, ctx, budget),
    }
}

/// Renders and parses templates into objects in order; every document must
/// be a mapping with `apiVersion`, `kind` and `metadata.name`.
pub(crate) fn render_resources(
    ov: &OperatorVersion,
    task: &str,
    resources: &[String],
    ctx: &RenderContext,
    budget: &mut StepBudget,
) -> Result<Vec<Value>, RenderError> {
    let data = ctx.template_data();
    let mut objects = Vec::new();
    for template in resources {
        let text = budget.render_template(ov, task, template, &data, injection::Shape::Objects)?;
        let parsed = parse_objects(task, template, &text)?;
        refuse_namespaces(task, template, &parsed)?;
        objects.extend(parsed);
        if objects.len() > MAX_TASK_OBJECTS {
            return Err(RenderError::TooManyObjects {
                task: task.to_string(),
                template: template.to_string(),
                limit: MAX_TASK_OBJECTS,
            });
        }
    }
    Ok(objects)
}

/// CustomResourceDefinitions first, then everything else, each group
/// keeping template order.
fn order_for_apply(objects: Vec<Value>) -> Vec<Value> {
    let rank = |o: &Value| match o.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => 0,
        _ => 1,
    };
    let mut indexed: Vec<(usize, Value)> = objects.into_iter().enumerate().collect();
    indexed.sort_by_key(|(i, o)| (rank(o), *i));
    indexed.into_iter().map(|(_, o)| o).collect()
}

fn toggle_value(
    task: &str,
    parameter: Option<&str>,
    params: &Map<String, Value>,
) -> Result<bool, RenderError> {
    let err = |parameter: &str, detail: String| RenderError::Toggle {
        task: task.to_string(),
        parameter: parameter.to_string(),
        detail,
    };
    let Some(name) = parameter.filter(|p| !p.is_empty()) else {
        return Err(RenderError::InvalidTask {
            task: task.to_string(),
            detail: "Toggle task has no `parameter`; name a boolean parameter".to_string(),
        });
    };
    let value = params
        .get(name)
        .ok_or_else(|| err(name, "the parameter is not declared".to_string()))?;
    let text = value
        .as_str()
        .ok_or_else(|| err(name, format!("value {value} is not a string")))?;
    kudo_api::param_value::parse_go_bool(text).ok_or_else(|| {
        err(
            name,
            format!("value {text:?} is not a boolean; expected true or false"),
        )
    })
}

/// `.Pipes` for a plan: the artifact name of every Pipe task's keys in the
/// plan, `<instance>.<plan>.<phase>.<step>.<task>.<key>` (each part
/// lower-cased, characters outside `[a-z0-9]` dropped).
pub fn pipe_artifact_names(
    ov: &OperatorVersion,
    plan: &str,
    instance: &str,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    // Runs for every rendered task, and the walk below is O(steps × tasks):
    // skip it when the OperatorVersion has no Pipe task at all.
    let has_pipe = ov
        .spec
        .tasks
        .iter()
        .any(|t| t.task_kind() == Some(TaskKind::Pipe));
    if !has_pipe {
        return out;
    }
    let Some(plan_def) = ov.spec.plan(plan) else {
        return out;
    };
    for phase in &plan_def.phases {
        for step in &phase.steps {
            for task_name in &step.tasks {
                let Some(task) = ov.spec.task(task_name) else {
                    continue;
                };
                if task.task_kind() != Some(TaskKind::Pipe) {
                    continue;
                }
                for file in &task.spec.pipe {
                    let name = pipe::artifact_name(
                        instance,
                        plan,
                        &phase.name,
                        &step.name,
                        task_name,
                        &file.key,
                    );
                    out.insert(file.key.clone(), name);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod tests;
