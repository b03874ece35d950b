//! Rendering a whole plan, step by step: what `kubectl kudo package render`
//! prints (the `helm template` of kudo-rs).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kudo_api::OperatorVersion;
use serde_json::Value;

use super::{
    Discovery, RenderContext, RenderLimits, RenderedTask, StepBudget, pipe_artifact_names,
    render_task_in,
};
use crate::RenderError;
use crate::hash::{ObjectRef, stamp_dependencies_hash};

/// What to render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRenderOptions {
    /// Plan name.
    pub plan: String,
    /// Instance name.
    pub instance_name: String,
    /// Instance namespace.
    pub namespace: String,
    /// Instance uid (none: objects get no owner reference).
    pub instance_uid: Option<String>,
    /// Plan execution uid written to `kudo.dev/last-plan-execution-uid`.
    pub plan_uid: String,
    /// User parameter values (`-p KEY=VALUE`).
    pub values: BTreeMap<String, String>,
}

impl Default for PlanRenderOptions {
    fn default() -> Self {
        Self {
            plan: kudo_api::names::DEPLOY_PLAN.to_string(),
            instance_name: "instance".to_string(),
            namespace: "default".to_string(),
            instance_uid: None,
            plan_uid: String::new(),
            values: BTreeMap::new(),
        }
    }
}

/// One task of one step, rendered.
#[derive(Clone, Debug)]
pub struct RenderedStep {
    /// Plan name.
    pub plan: String,
    /// Phase name.
    pub phase: String,
    /// Step name.
    pub step: String,
    /// Task name.
    pub task: String,
    /// Task kind as written in operator.yaml.
    pub kind: String,
    /// The result.
    pub rendered: RenderedTask,
}

/// Renders every task of every step of a plan, in plan order, as a fresh
/// install would see it: parameters are validated, `.Pipes` is filled, and
/// dependencies hashes see the objects of earlier steps as live. Renders
/// within the default [`RenderLimits`].
pub fn render_plan(
    ov: &OperatorVersion,
    options: &PlanRenderOptions,
    discovery: &dyn Discovery,
) -> Result<Vec<RenderedStep>, RenderError> {
    render_plan_with(
        ov,
        options,
        discovery,
        BTreeMap::new(),
        &RenderLimits::default(),
    )
}

/// [`render_plan`] with objects already live in the cluster, used for the
/// dependencies hash of objects whose ConfigMaps/Secrets are not rendered
/// by the plan, and with the given limits (the tasks of a step share the
/// step budget).
pub fn render_plan_with(
    ov: &OperatorVersion,
    options: &PlanRenderOptions,
    discovery: &dyn Discovery,
    mut live: BTreeMap<ObjectRef, Value>,
    limits: &RenderLimits,
) -> Result<Vec<RenderedStep>, RenderError> {
    let plan = ov
        .spec
        .plan(&options.plan)
        .ok_or_else(|| RenderError::UnknownPlan {
            plan: options.plan.clone(),
            available: ov.spec.plans.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
    crate::params::validate_values(&ov.spec, &options.values)
        .map_err(RenderError::InvalidParameters)?;
    let params = crate::params::template_values(&ov.spec, &options.values).map_err(|source| {
        RenderError::Params {
            task: String::new(),
            source,
        }
    })?;
    let base = RenderContext {
        instance_name: options.instance_name.clone(),
        namespace: options.namespace.clone(),
        instance_uid: options.instance_uid.clone(),
        plan: options.plan.clone(),
        plan_uid: options.plan_uid.clone(),
        params,
        pipes: pipe_artifact_names(ov, &options.plan, &options.instance_name),
        limits: *limits,
        ..RenderContext::for_operator_version(ov)
    };
    let mut out = Vec::new();
    for phase in &plan.phases {
        for step in &phase.steps {
            let mut budget = StepBudget::new(*limits);
            for task in &step.tasks {
                let ctx = RenderContext {
                    phase: phase.name.clone(),
                    step: step.name.clone(),
                    ..base.clone()
                };
                let mut rendered = render_task_in(ov, task, &ctx, discovery, &mut budget)?;
                if let RenderedTask::Apply { objects } = &mut rendered {
                    stamp_dependencies_hash(objects, &live)?;
                }
                for obj in rendered.objects_to_apply() {
                    if let Some(r) = ObjectRef::of(&obj) {
                        live.insert(r, obj);
                    }
                }
                let kind = ov
                    .spec
                    .task(task)
                    .map(|t| t.kind.clone())
                    .unwrap_or_default();
                out.push(RenderedStep {
                    plan: options.plan.clone(),
                    phase: phase.name.clone(),
                    step: step.name.clone(),
                    task: task.clone(),
                    kind,
                    rendered,
                });
            }
        }
    }
    Ok(out)
}

/// Multi-document YAML of everything a plan applies, each document headed
/// by a `# plan/phase/step/task` comment. Deletions, Dummy tasks and pipe
/// copies are described in comments so the output stays applicable.
pub fn format_render_output(steps: &[RenderedStep]) -> String {
    let mut out = String::new();
    for s in steps {
        let path = format!("{}/{}/{}/{}", s.plan, s.phase, s.step, s.task);
        match &s.rendered {
            RenderedTask::Apply { objects } => {
                for obj in objects {
                    push_document(&mut out, &path, obj);
                }
            }
            RenderedTask::Delete { objects } => {
                let _ = writeln!(out, "---\n# {path} (Delete)");
                for obj in objects {
                    let _ = writeln!(out, "# deletes {}", describe(obj));
                }
            }
            RenderedTask::Dummy {
                want_err,
                fatal,
                done,
            } => {
                let _ = writeln!(
                    out,
                    "---\n# {path} (Dummy: wantErr={want_err}, fatal={fatal}, done={done})"
                );
            }
            RenderedTask::Pipe { pod, files } => {
                push_document(&mut out, &format!("{path} (Pipe pod)"), pod);
                for f in files {
                    let source = f.file.as_deref().or(f.env_file.as_deref()).unwrap_or("");
                    let _ = writeln!(
                        out,
                        "# pipe {source} -> {} {} (.Pipes.{})",
                        f.kind, f.artifact_name, f.key
                    );
                }
            }
            RenderedTask::KudoOperator { instance } => {
                let value = serde_json::to_value(instance).unwrap_or(Value::Null);
                push_document(&mut out, &format!("{path} (KudoOperator)"), &value);
            }
        }
    }
    out
}

fn push_document(out: &mut String, header: &str, obj: &Value) {
    let _ = writeln!(out, "---\n# {header}");
    out.push_str(&crate::yaml::to_yaml(obj));
    if !out.ends_with('\n') {
        out.push('\n');
    }
}

fn describe(obj: &Value) -> String {
    let s = |f: &str| obj.get(f).and_then(Value::as_str).unwrap_or("");
    let meta = |f: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let ns = meta("namespace");
    let name = if ns.is_empty() {
        meta("name").to_string()
    } else {
        format!("{ns}/{}", meta("name"))
    };
    format!("{} {} {name}", s("apiVersion"), s("kind"))
}
