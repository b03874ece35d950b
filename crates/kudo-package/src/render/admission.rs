//! What parameter values would do to the templates, checked before they are
//! stored: the webhook renders every template of the OperatorVersion with
//! the new values, as a step would, and refuses a value that would add YAML
//! to an object (see `injection`) or push a render over its budget. Other
//! template failures do not depend on a value alone and are left to the
//! step that runs the template.

use std::collections::{BTreeMap, HashSet};

use kudo_api::{OperatorVersion, TaskKind};

use super::injection::Shape;
use super::{RenderContext, StepBudget, pipe_artifact_names};
use crate::RenderError;

/// Renders every template of `ov` with `ctx` (`.Pipes` holds the pipe
/// artifacts of every plan) and returns the first injection or budget
/// error. Each template is rendered once. The whole check shares one
/// step's budget, so an OperatorVersion of many heavy templates costs no
/// more than a step: once that is spent the rest is left to the steps,
/// which check their own renders.
pub fn check_parameter_values(
    ov: &OperatorVersion,
    ctx: &RenderContext,
) -> Result<(), RenderError> {
    let mut ctx = ctx.clone();
    if ctx.pipes.is_empty() {
        ctx.pipes = every_pipe(ov, &ctx.instance_name);
    }
    let data = ctx.template_data();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut budget = StepBudget::new(ctx.limits);
    for task in &ov.spec.tasks {
        let spec = &task.spec;
        let templates: Vec<(&str, Shape)> = match task.task_kind() {
            Some(TaskKind::Apply | TaskKind::Delete | TaskKind::Toggle) => spec
                .resources
                .iter()
                .map(|t| (t.as_str(), Shape::Objects))
                .collect(),
            Some(TaskKind::Pipe) => spec
                .pod
                .iter()
                .map(|t| (t.as_str(), Shape::Objects))
                .collect(),
            Some(TaskKind::KudoOperator) => spec
                .parameter_file
                .iter()
                .map(|t| (t.as_str(), Shape::Values))
                .collect(),
            Some(TaskKind::Dummy) | None => Vec::new(),
        };
        for (template, shape) in templates {
            if template.is_empty() || !seen.insert(template) {
                continue;
            }
            let squeezed = budget.squeezed();
            match budget.render_template(ov, &task.name, template, &data, shape) {
                Err(RenderError::Budget { .. }) if squeezed => return Ok(()),
                Err(e @ (RenderError::Injection { .. } | RenderError::Budget { .. })) => {
                    return Err(e);
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// `.Pipes` of every plan together.
fn every_pipe(ov: &OperatorVersion, instance: &str) -> BTreeMap<String, String> {
    let mut pipes = BTreeMap::new();
    for plan in ov.spec.plans.keys() {
        pipes.extend(pipe_artifact_names(ov, plan, instance));
    }
    pipes
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn ov(template: &str) -> OperatorVersion {
        let operator = "name: op\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml, cm.yaml]\n  - name: off\n    kind: Dummy\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [app]\n";
        let files: BTreeMap<String, Vec<u8>> = [
            ("operator.yaml", operator),
            ("params.yaml", "parameters:\n  - name: V\n    default: x\n"),
            ("templates/cm.yaml", template),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        crate::load::load_from_files(files, "pkg")
            .unwrap()
            .to_operator_version("ns")
    }

    fn ctx(value: &str) -> RenderContext {
        RenderContext {
            instance_name: "i".into(),
            namespace: "ns".into(),
            params: json!({"V": value}).as_object().unwrap().clone(),
            ..RenderContext::default()
        }
    }

    const CM: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: {{ .Params.V }}\n";

    #[test]
    fn a_value_that_adds_a_document_is_refused_and_a_plain_one_is_not() {
        let ov = ov(CM);
        check_parameter_values(&ov, &ctx("hello")).unwrap();
        let err = check_parameter_values(&ov, &ctx("x\n---\nkind: Secret")).unwrap_err();
        assert!(
            err.to_string()
                .contains("parameter V starts a new YAML document in cm.yaml:6"),
            "{err}"
        );
    }

    #[test]
    fn a_value_that_makes_a_loop_run_away_is_refused_over_budget() {
        let ov = ov(
            "{{ range until (int .Params.V) }}{{ range until (int $.Params.V) }}x{{ end }}{{ end }}",
        );
        check_parameter_values(&ov, &ctx("10")).unwrap();
        let err = check_parameter_values(&ov, &ctx("5000")).unwrap_err();
        assert!(err.to_string().contains("step budget exceeded"), "{err}");
    }

    #[test]
    fn many_heavy_templates_cost_one_step_budget_then_the_steps_check_the_rest() {
        // Each template takes about 440,000 steps: within its own budget,
        // but eleven of them are more than a step's four million.
        let heavy = "{{ range until 1000 }}{{ range until 440 }}{{ end }}{{ end }}";
        let injecting =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: {{ .Params.V }}\n";
        let with_templates = |last: &str| {
            let mut ov = ov(CM);
            let mut names = Vec::new();
            for i in 0..12 {
                let name = format!("t{i:02}.yaml");
                let text = if i == 11 { last } else { heavy };
                ov.spec.templates.insert(name.clone(), text.to_string());
                names.push(name);
            }
            ov.spec.tasks[0].spec.resources = names;
            ov
        };
        let bad = ctx("x\n---\nkind: Secret");
        // Found while the budget lasts...
        let mut first = with_templates(heavy);
        first.spec.tasks[0].spec.resources.rotate_right(1);
        first
            .spec
            .templates
            .insert("t11.yaml".into(), injecting.into());
        assert!(check_parameter_values(&first, &bad).is_err());
        // ...and left to the step (which refuses it) once it is spent,
        // instead of rendering on at the cost of twelve.
        check_parameter_values(&with_templates(injecting), &bad).unwrap();
    }

    #[test]
    fn other_template_failures_are_left_to_the_step() {
        let ov = ov("{{ .Params.MISSING }}");
        check_parameter_values(&ov, &ctx("x")).unwrap();
    }
}
