//! KudoOperator tasks (KUDO's task kind `KudoOperator`): a child Instance of another
//! operator, owned (not controlled) by the parent Instance.

use std::collections::BTreeMap;

use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kudo_api::{Instance, InstanceSpec, ObjectReference, OperatorVersion, names};
use serde_json::{Value, json};

use super::{RenderContext, RenderedTask, find_task, invalid_task};
use crate::RenderError;

pub(crate) fn render_kudo_operator(
    ov: &OperatorVersion,
    task_name: &str,
    ctx: &RenderContext,
    budget: &mut super::StepBudget,
) -> Result<RenderedTask, RenderError> {
    let invalid = invalid_task(task_name);
    let task = find_task(ov, task_name)?;
    let spec = &task.spec;
    let package = non_empty(&spec.package)
        .ok_or_else(|| invalid("KudoOperator task has no `package`".into()))?;
    let operator_version = non_empty(&spec.operator_version).ok_or_else(|| {
        invalid("KudoOperator task has no `operatorVersion`; the CLI fills it in on install".into())
    })?;
    let instance_name = non_empty(&spec.instance_name)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-{package}", ctx.instance_name));
    let ov_name =
        crate::operator_version_name(package, non_empty(&spec.app_version), operator_version);
    let parameters = match non_empty(&spec.parameter_file) {
        Some(file) => Some(child_parameters(ov, task_name, file, ctx, budget)?),
        None => None,
    };
    let owner = ctx.instance_uid.as_ref().map(|uid| OwnerReference {
        api_version: names::API_VERSION.to_string(),
        kind: "Instance".to_string(),
        name: ctx.instance_name.clone(),
        uid: uid.clone(),
        block_owner_deletion: Some(true),
        controller: None,
    });
    let instance = Instance {
        metadata: ObjectMeta {
            name: Some(instance_name),
            namespace: Some(ctx.namespace.clone()),
            labels: Some(BTreeMap::from([(
                names::OPERATOR_LABEL.to_string(),
                package.to_string(),
            )])),
            owner_references: owner.map(|o| vec![o]),
            ..Default::default()
        },
        spec: InstanceSpec {
            operator_version: ObjectReference {
                name: Some(ov_name),
                ..Default::default()
            },
            parameters,
            ..Default::default()
        },
        status: None,
    };
    Ok(RenderedTask::KudoOperator { instance })
}

fn non_empty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// Renders the parameter file (no plan, phase, step or pipes in its
/// context) and stringifies its values the way KUDO does.
fn child_parameters(
    ov: &OperatorVersion,
    task: &str,
    file: &str,
    ctx: &RenderContext,
    budget: &mut super::StepBudget,
) -> Result<BTreeMap<String, String>, RenderError> {
    let data = json!({
        "OperatorName": ctx.operator_name,
        "Name": ctx.instance_name,
        "Namespace": ctx.namespace,
        "AppVersion": ctx.app_version,
        "OperatorVersion": ctx.operator_version,
        "Params": Value::Object(ctx.params.clone()),
        "Maintenance": ctx.maintenance.template_value(),
    });
    let text = budget.render_template(ov, task, file, &data, super::injection::Shape::Values)?;
    let yaml_err = |detail: String| RenderError::Yaml {
        task: task.to_string(),
        template: file.to_string(),
        detail,
    };
    let parsed = crate::yaml::parse_value(&text).map_err(yaml_err)?;
    let map = match parsed {
        Value::Null => return Ok(BTreeMap::new()),
        Value::Object(map) => map,
        _ => return Err(yaml_err("the parameter file must render a YAML map".into())),
    };
    let mut out = BTreeMap::new();
    for (key, value) in map {
        let text = match &value {
            Value::Null => {
                return Err(yaml_err(format!("parameter {key} has no value (null)")));
            }
            Value::Array(_) | Value::Object(_) => {
                crate::yaml::v2::to_string(&crate::gofmt::numbers_as_floats(value.clone()))
            }
            other => crate::gofmt::sprint_v(other),
        };
        out.insert(key, text);
    }
    Ok(out)
}
