//! templates/: references both ways, parameters and root fields used by
//! templates, and a render of every template with placeholder values.

use std::collections::{BTreeMap, BTreeSet};

use kudo_api::TaskKind;
use serde_json::{Value, json};

use super::{OPERATOR_FILE, PARAMS_FILE, Report};
use crate::Package;
use crate::render::{
    DEFAULT_MAX_STEP_OUTPUT, DEFAULT_MAX_STEP_STEPS, MAX_OBJECT_BYTES, RenderLimits, StepBudget,
    describe_object, json_size,
};

/// Top-level fields templates may use (KUDO's, plus `.Maintenance`).
pub const ROOT_FIELDS: &[&str] = &[
    "OperatorName",
    "Name",
    "Namespace",
    "AppVersion",
    "OperatorVersion",
    "PlanName",
    "PhaseName",
    "StepName",
    "Params",
    "Pipes",
    "Maintenance",
];

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// Rendered into Kubernetes objects.
    Objects,
    /// A KudoOperator parameter file: rendered into a YAML map.
    ParameterFile,
    /// A Pipe task's pod: KUDO names it, so no metadata.name is needed.
    PipePod,
}

pub(super) fn template_uses(pkg: &Package) -> BTreeMap<String, Use> {
    let mut uses = BTreeMap::new();
    for task in &pkg.operator.tasks {
        let spec = &task.spec;
        match task.task_kind() {
            Some(TaskKind::Apply | TaskKind::Delete | TaskKind::Toggle) => {
                for res in &spec.resources {
                    uses.insert(res.clone(), Use::Objects);
                }
            }
            Some(TaskKind::Pipe) => {
                if let Some(pod) = &spec.pod {
                    uses.entry(pod.clone()).or_insert(Use::PipePod);
                }
            }
            Some(TaskKind::KudoOperator) => {
                if let Some(file) = &spec.parameter_file {
                    uses.entry(file.clone()).or_insert(Use::ParameterFile);
                }
            }
            Some(TaskKind::Dummy) | None => {}
        }
    }
    if let Some(ns) = &pkg.operator.namespace_manifest {
        uses.insert(ns.clone(), Use::Objects);
    }
    uses
}

pub(super) fn verify_templates(pkg: &Package, r: &mut Report) {
    let uses = template_uses(pkg);
    let declared: BTreeSet<&str> = pkg
        .params
        .parameters
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let data = placeholder_data(pkg);
    let mut used_params = BTreeSet::new();
    let mut all_parsed = true;
    // The templates share one step's budget: the manager verifies every
    // OperatorVersion it uses, and a package of many heavy templates must
    // not hold one of its render slots for minutes.
    let mut budget = StepBudget::new(RenderLimits::default());
    let mut spent = false;
    for (name, text) in &pkg.templates {
        let file = format!("templates/{name}");
        let use_kind = uses.get(name).copied();
        if use_kind.is_none() {
            r.warning(
                &file,
                "template is not used by any task; remove it or reference it from a task",
            );
        }
        if text.len() > MAX_OBJECT_BYTES {
            // The OperatorVersion size check reports it; parsing and
            // rendering it would only take time.
            all_parsed = false;
            continue;
        }
        let template = match kudo_template::Template::parse(name, text) {
            Ok(t) => t,
            Err(e) => {
                r.error(&file, format!("template does not parse: {e}"));
                all_parsed = false;
                continue;
            }
        };
        for param in template.param_references() {
            if !declared.contains(param.as_str()) {
                r.error(
                    &file,
                    format!(
                        "template uses parameter {param}, which is not declared in params.yaml"
                    ),
                );
            }
            used_params.insert(param);
        }
        for field in template.root_fields() {
            if !ROOT_FIELDS.contains(&field.as_str()) {
                r.error(
                    &file,
                    format!(
                        "template uses .{field}, which templates do not have; available: .{}",
                        ROOT_FIELDS.join(", .")
                    ),
                );
            }
        }
        let Some(data) = &data else { continue };
        if spent {
            continue;
        }
        let squeezed = budget.squeezed();
        let limits = budget.template_limits();
        let rendered = match template.render_counted(data, &limits) {
            Ok((text, steps)) => {
                budget.charge(steps, text.len());
                text
            }
            Err(e) if e.kind.is_budget() && squeezed => {
                spent = true;
                r.error(
                    &file,
                    format!(
                        "the templates together take more than {DEFAULT_MAX_STEP_STEPS} steps or \
                         render more than {DEFAULT_MAX_STEP_OUTPUT} bytes with default parameter \
                         values, so this one and those after it were not rendered; make the \
                         templates or their loops smaller"
                    ),
                );
                continue;
            }
            Err(e) => {
                budget.charge(e.steps, 0);
                r.error(
                    &file,
                    format!("template does not render with default parameter values: {e}"),
                );
                continue;
            }
        };
        check_rendered(pkg, name, &file, &rendered, use_kind, r);
    }
    // Parameters used by a template that does not parse are unknown.
    if all_parsed {
        warn_unused_parameters(pkg, &used_params, r);
    }
}

fn check_rendered(
    pkg: &Package,
    name: &str,
    file: &str,
    rendered: &str,
    use_kind: Option<Use>,
    r: &mut Report,
) {
    if use_kind == Some(Use::ParameterFile) {
        match crate::yaml::parse_value(rendered) {
            Ok(Value::Object(_) | Value::Null) => {}
            Ok(_) => r.error(
                file,
                "parameter file must render a YAML map of parameter values",
            ),
            Err(e) => r.error(file, format!("parameter file is not valid YAML: {e}")),
        }
        return;
    }
    if use_kind == Some(Use::PipePod) {
        check_pipe_pod(file, rendered, r);
        return;
    }
    let objects = match crate::render::parse_objects("verify", name, rendered) {
        Ok(objects) => objects,
        Err(e) => {
            let detail = match e {
                crate::RenderError::Yaml { detail, .. } => detail,
                other => other.to_string(),
            };
            r.error(
                file,
                format!("rendered template is not valid Kubernetes YAML: {detail}"),
            );
            return;
        }
    };
    for object in &objects {
        let size = json_size(object);
        if size > MAX_OBJECT_BYTES {
            r.error(
                file,
                format!(
                    "renders {} of {size} bytes with default parameter values, over the \
                     {MAX_OBJECT_BYTES}-byte limit of what an API server stores (etcd refuses \
                     bigger objects)",
                    describe_object(object)
                ),
            );
        }
    }
    let namespaces = objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Namespace"))
        .count();
    let is_ns_manifest = pkg.operator.namespace_manifest.as_deref() == Some(name);
    if is_ns_manifest && (namespaces != 1 || objects.len() != 1) {
        r.error(
            OPERATOR_FILE,
            format!("namespaceManifest {name} must contain exactly one object, of kind Namespace"),
        );
    } else if !is_ns_manifest && namespaces > 0 {
        r.error(
            file,
            "template contains a Namespace; only the namespaceManifest template may create one",
        );
    }
}

/// A pipe pod template must render exactly one Pod; KUDO gives it its name.
fn check_pipe_pod(file: &str, rendered: &str, r: &mut Report) {
    match crate::yaml::parse_documents(rendered) {
        Ok(docs)
            if docs.len() == 1 && docs[0].get("kind").and_then(Value::as_str) == Some("Pod") => {}
        Ok(_) => r.error(file, "pipe pod template must render exactly one Pod"),
        Err(e) => r.error(
            file,
            format!("rendered template is not valid Kubernetes YAML: {e}"),
        ),
    }
}

fn warn_unused_parameters(pkg: &Package, used: &BTreeSet<String>, r: &mut Report) {
    let toggles: BTreeSet<&str> = pkg
        .operator
        .tasks
        .iter()
        .filter_map(|t| t.spec.parameter.as_deref())
        .collect();
    for p in &pkg.params.parameters {
        let has_trigger = p.trigger.as_deref().is_some_and(|t| !t.is_empty());
        if !p.name.is_empty()
            && !used.contains(&p.name)
            && !toggles.contains(p.name.as_str())
            && !has_trigger
        {
            r.warning(
                PARAMS_FILE,
                format!(
                    "parameter {} is not used by any template and has no trigger",
                    p.name
                ),
            );
        }
    }
}

/// The data KUDO's verifier renders with: placeholder names, parameter
/// defaults and every pipe key. `None` when the defaults themselves are
/// broken (already reported by the parameter checks).
pub(super) fn placeholder_data(pkg: &Package) -> Option<Value> {
    let ov = pkg.to_operator_version("Namespace");
    let params = crate::params::template_values(&ov.spec, &BTreeMap::new()).ok()?;
    let mut pipes = BTreeMap::new();
    for plan in ov.spec.plans.keys() {
        pipes.extend(crate::render::pipe_artifact_names(&ov, plan, "name"));
    }
    Some(json!({
        "OperatorName": "OperatorName",
        "Name": "Name",
        "Namespace": "Namespace",
        "AppVersion": "AppVersion",
        "OperatorVersion": "OperatorVersion",
        "PlanName": "PlanName",
        "PhaseName": "PhaseName",
        "StepName": "StepName",
        "Params": Value::Object(params),
        "Pipes": pipes,
        "Maintenance": crate::render::MaintenanceContext::default().template_value(),
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    fn verify(files: &[(&str, &str)]) -> String {
        let files: BTreeMap<String, Vec<u8>> = files
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect();
        let pkg = crate::load::load_from_files(files, "pkg").unwrap();
        pkg.verify().to_string()
    }

    #[test]
    fn the_templates_of_a_package_share_one_step_budget_when_verified() {
        // Each takes about 440,000 steps, within a template's budget; the
        // tenth and after are past a step's four million together.
        let heavy = "{{ range until 1000 }}{{ range until 440 }}{{ end }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ .StepName }}\n";
        let names: Vec<String> = (0..14).map(|i| format!("t{i:02}.yaml")).collect();
        let operator = format!(
            "name: p\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: app\n    \
             kind: Apply\n    spec:\n      resources: [{}]\nplans:\n  deploy:\n    phases:\n      \
             - name: p\n        steps:\n          - name: s\n            tasks: [app]\n",
            names.join(", ")
        );
        let mut files = vec![("operator.yaml", operator.as_str())];
        let paths: Vec<String> = names.iter().map(|n| format!("templates/{n}")).collect();
        files.extend(paths.iter().map(|p| (p.as_str(), heavy)));
        let report = verify(&files);
        assert!(
            report.contains(
                "templates/t09.yaml: the templates together take more than 4000000 steps"
            ),
            "{report}"
        );
        assert_eq!(
            report.matches("not rendered").count(),
            1,
            "said once, and no template after it rendered: {report}"
        );
    }

    const PIPE_OPERATOR: &str = "name: p\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: gen\n    kind: Pipe\n    spec:\n      pod: pod.yaml\n      pipe:\n        - file: /out/f\n          kind: ConfigMap\n          key: f\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [gen]\n";

    #[test]
    fn pipe_pod_template_needs_no_name() {
        let pod = "apiVersion: v1\nkind: Pod\nspec:\n  volumes:\n  - name: out\n    emptyDir: {}\n  initContainers:\n  - name: g\n    image: busybox\n    volumeMounts:\n    - name: out\n      mountPath: /out\n";
        let report = verify(&[
            ("operator.yaml", PIPE_OPERATOR),
            ("templates/pod.yaml", pod),
        ]);
        assert!(!report.contains("error"), "{report}");
    }

    #[test]
    fn pipe_pod_template_must_render_one_pod() {
        let two = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n";
        let report = verify(&[
            ("operator.yaml", PIPE_OPERATOR),
            ("templates/pod.yaml", two),
        ]);
        assert!(report.contains("must render exactly one Pod"), "{report}");
    }

    const MAINTENANCE_OPERATOR: &str = "name: m\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: note\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [note]\n  maintenance:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [note]\n";

    #[test]
    fn maintenance_is_a_root_field_templates_may_read() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-maintenance\ndata:\n  nodes: {{ join \",\" .Maintenance.Nodes | quote }}\n  start: {{ $.Maintenance.Start | quote }}\n  end: {{ .Maintenance.End | quote }}\n";
        let files: BTreeMap<String, Vec<u8>> = [
            ("operator.yaml", MAINTENANCE_OPERATOR),
            ("templates/cm.yaml", cm),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        let report = crate::load::load_from_files(files, "pkg").unwrap().verify();
        assert!(report.is_clean(), "{report}");
    }

    #[test]
    fn a_misspelt_maintenance_field_does_not_render() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m{{ .Maintenance.Node }}\n";
        let report = verify(&[
            ("operator.yaml", MAINTENANCE_OPERATOR),
            ("templates/cm.yaml", cm),
        ]);
        assert!(report.contains("no entry for key \"Node\""), "{report}");
    }
}
