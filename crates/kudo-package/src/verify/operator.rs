//! operator.yaml: metadata, tasks and plans.

use std::collections::{BTreeMap, BTreeSet};

use kudo_api::{Strategy, TaskKind, names};

use super::{OPERATOR_FILE, PARAMS_FILE, Report, Scope, parse_semver};
use crate::Package;

pub(super) fn verify_operator(pkg: &Package, scope: Scope, r: &mut Report) {
    let op = &pkg.operator;
    for (file, api_version) in [
        (OPERATOR_FILE, &op.api_version),
        (PARAMS_FILE, &pkg.params.api_version),
    ] {
        if let Some(v) = api_version.as_deref()
            && v != names::API_VERSION
        {
            r.error(
                file,
                format!(
                    "apiVersion {v:?} is not supported; use {} or leave it out",
                    names::API_VERSION
                ),
            );
        }
    }
    if op.name.trim().is_empty() {
        r.error(
            OPERATOR_FILE,
            "name is missing; every operator needs a name",
        );
    }

    if let Some(ns) = op.namespace_manifest.as_deref().filter(|n| !n.is_empty())
        && !pkg.templates.contains_key(ns)
    {
        r.error(
            OPERATOR_FILE,
            format!("namespaceManifest {ns} does not exist under templates/"),
        );
    }
    verify_versions(pkg, scope, r);
    verify_tasks(pkg, r);
    verify_plans(pkg, r);
}

fn verify_versions(pkg: &Package, scope: Scope, r: &mut Report) {
    let op = &pkg.operator;
    if op.operator_version.trim().is_empty() {
        r.error(
            OPERATOR_FILE,
            "operatorVersion is missing; set the package version, e.g. 0.1.0 (packages written for KUDO before 0.10 call it `version`, which KUDO no longer reads)",
        );
    } else if parse_semver(&op.operator_version).is_none() {
        r.error(
            OPERATOR_FILE,
            format!(
                "operatorVersion {:?} is not a semantic version such as 0.1.0",
                op.operator_version
            ),
        );
    }
    for (field, value) in [
        ("appVersion", &op.app_version),
        ("kudoVersion", &op.kudo_version),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty())
            && parse_semver(v).is_none()
        {
            r.error(
                OPERATOR_FILE,
                format!("{field} {v:?} is not a semantic version such as 1.2.3"),
            );
        }
    }
    match op.kubernetes_version.as_deref().filter(|v| !v.is_empty()) {
        // The Operator holds it, not the OperatorVersion.
        None if scope == Scope::OperatorVersion => {}
        None => r.error(
            OPERATOR_FILE,
            "kubernetesVersion is missing; set the minimum Kubernetes version, e.g. 1.27.0",
        ),
        Some(v) if parse_semver(v).is_none() => r.error(
            OPERATOR_FILE,
            format!("kubernetesVersion {v:?} is not a semantic version such as 1.27.0"),
        ),
        Some(_) => {}
    }
    let mut channels = BTreeSet::new();
    for channel in &op.channels {
        if let Err(e) = kudo_api::package::check_channel(channel) {
            r.error(OPERATOR_FILE, format!("channels: {e}"));
        } else if !channels.insert(channel.as_str()) {
            r.error(
                OPERATOR_FILE,
                format!("channels: {channel} is listed twice"),
            );
        }
    }
    verify_requirements(op, r);
}

/// `dependencies`: operator names, each once, not the package itself. The
/// ranges are checked where they are read (`repo index`, the manager).
fn verify_requirements(op: &kudo_api::package::OperatorFile, r: &mut Report) {
    use kudo_api::requirements::MAX_REQUIREMENTS;
    if op.dependencies.len() > MAX_REQUIREMENTS {
        r.error(
            OPERATOR_FILE,
            format!(
                "dependencies: {} operators listed; at most {MAX_REQUIREMENTS}",
                op.dependencies.len()
            ),
        );
    }
    let mut seen = BTreeSet::new();
    for dep in &op.dependencies {
        let name = dep.operator.as_str();
        let well_formed = !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !well_formed {
            r.error(
                OPERATOR_FILE,
                format!("dependencies: {name:?} is not an operator name"),
            );
        } else if name == op.name {
            r.error(
                OPERATOR_FILE,
                format!("dependencies: {name} cannot depend on itself"),
            );
        } else if !seen.insert(name) {
            r.error(
                OPERATOR_FILE,
                format!("dependencies: {name} is listed twice"),
            );
        }
    }
}

fn verify_tasks(pkg: &Package, r: &mut Report) {
    let op = &pkg.operator;
    let mut seen = BTreeSet::new();
    for task in &op.tasks {
        let t = &task.name;
        if t.trim().is_empty() {
            r.error(OPERATOR_FILE, "a task has no name");
            continue;
        }
        if !seen.insert(t.as_str()) {
            r.error(OPERATOR_FILE, format!("task {t} is defined more than once"));
        }
        let Some(kind) = task.task_kind() else {
            r.error(
                OPERATOR_FILE,
                format!(
                    "task {t} has unknown kind {:?}; use Apply, Delete, Toggle, Dummy, Pipe or KudoOperator",
                    task.kind
                ),
            );
            continue;
        };
        let spec = &task.spec;
        let missing_template = |r: &mut Report, template: &str| {
            if !pkg.templates.contains_key(template) {
                r.error(
                    OPERATOR_FILE,
                    format!(
                        "task {t} uses template {template}, which does not exist under templates/"
                    ),
                );
            }
        };
        match kind {
            TaskKind::Apply | TaskKind::Delete | TaskKind::Toggle => {
                if spec.resources.is_empty() {
                    r.error(
                        OPERATOR_FILE,
                        format!(
                            "task {t} ({kind}) has an empty resource list; use a Dummy task for a step that does nothing"
                        ),
                    );
                }
                for res in &spec.resources {
                    missing_template(r, res);
                }
                if kind == TaskKind::Toggle {
                    verify_toggle_parameter(pkg, t, spec.parameter.as_deref(), r);
                }
            }
            TaskKind::Dummy => {}
            TaskKind::Pipe => {
                match spec.pod.as_deref().filter(|p| !p.is_empty()) {
                    None => r.error(
                        OPERATOR_FILE,
                        format!("task {t} (Pipe) has no pod template"),
                    ),
                    Some(pod) => missing_template(r, pod),
                }
                if let Err(e) = crate::render::validate_pipe_specs(&spec.pipe) {
                    r.error(OPERATOR_FILE, format!("task {t} (Pipe): {e}"));
                }
            }
            TaskKind::KudoOperator => {
                if spec.package.as_deref().is_none_or(str::is_empty) {
                    r.error(
                        OPERATOR_FILE,
                        format!("task {t} (KudoOperator) has no package"),
                    );
                }
                if spec.operator_version.as_deref().is_none_or(str::is_empty) {
                    r.warning(
                        OPERATOR_FILE,
                        format!(
                            "task {t} (KudoOperator) has no operatorVersion; it must be resolved when installing"
                        ),
                    );
                }
                if let Some(file) = spec.parameter_file.as_deref().filter(|f| !f.is_empty()) {
                    missing_template(r, file);
                }
            }
        }
    }
}

fn verify_toggle_parameter(pkg: &Package, task: &str, parameter: Option<&str>, r: &mut Report) {
    let Some(name) = parameter.filter(|p| !p.is_empty()) else {
        r.error(
            OPERATOR_FILE,
            format!("task {task} (Toggle) has no parameter; name a boolean parameter"),
        );
        return;
    };
    match pkg.params.parameters.iter().find(|p| p.name == name) {
        None => r.error(
            OPERATOR_FILE,
            format!(
                "task {task} (Toggle) uses parameter {name}, which is not declared in params.yaml"
            ),
        ),
        // Untyped "true"/"false" strings are what real packages (kafka's
        // seven Toggle tasks) use and KUDO accepts; only a default the task
        // could not read as a boolean at run time is worth a warning.
        Some(p) if !default_reads_as_bool(p) => r.warning(
            PARAMS_FILE,
            format!(
                "parameter {name} toggles task {task}, but its default is not a boolean; declare it with type: boolean"
            ),
        ),
        Some(_) => {}
    }
}

/// Whether the default is absent or something Go's `strconv.ParseBool`
/// (which the Toggle task uses) accepts.
fn default_reads_as_bool(p: &kudo_api::package::PackageParameter) -> bool {
    match &p.default {
        None | Some(serde_json::Value::Null | serde_json::Value::Bool(_)) => true,
        Some(serde_json::Value::String(s)) => matches!(
            s.as_str(),
            "1" | "t"
                | "T"
                | "TRUE"
                | "true"
                | "True"
                | "0"
                | "f"
                | "F"
                | "FALSE"
                | "false"
                | "False"
        ),
        Some(serde_json::Value::Number(n)) => n.as_u64().is_some_and(|n| n <= 1),
        Some(_) => false,
    }
}

fn verify_plans(pkg: &Package, r: &mut Report) {
    let op = &pkg.operator;
    if op.plans.is_empty() {
        r.error(
            OPERATOR_FILE,
            "no plans defined; a package needs a deploy plan",
        );
        return;
    }
    if !op.plans.contains_key(names::DEPLOY_PLAN) {
        r.error(
            OPERATOR_FILE,
            "no deploy plan; every operator needs a plan named deploy",
        );
    }
    let tasks: BTreeMap<&str, ()> = op.tasks.iter().map(|t| (t.name.as_str(), ())).collect();
    let mut used_tasks = BTreeSet::new();
    for (plan_name, plan) in &op.plans {
        let where_plan = format!("plan {plan_name}");
        if let Err(e) = Strategy::parse(plan.strategy.as_deref()) {
            r.error(OPERATOR_FILE, format!("{where_plan}: {e}"));
        }
        if plan.phases.is_empty() {
            r.error(
                OPERATOR_FILE,
                format!("{where_plan} has no phases; add at least one phase with a step"),
            );
        }
        let mut phase_names = BTreeSet::new();
        for phase in &plan.phases {
            let where_phase = format!("{where_plan} phase {}", phase.name);
            check_child_name(r, &mut phase_names, &phase.name, &where_plan, "phase");
            if let Err(e) = Strategy::parse(phase.strategy.as_deref()) {
                r.error(OPERATOR_FILE, format!("{where_phase}: {e}"));
            }
            if phase.steps.is_empty() {
                r.error(OPERATOR_FILE, format!("{where_phase} has no steps"));
            }
            let mut step_names = BTreeSet::new();
            for step in &phase.steps {
                check_child_name(r, &mut step_names, &step.name, &where_phase, "step");
                if step.tasks.is_empty() {
                    r.warning(
                        OPERATOR_FILE,
                        format!("{where_phase} step {} has no tasks", step.name),
                    );
                }
                for task in &step.tasks {
                    used_tasks.insert(task.as_str());
                    if !tasks.contains_key(task.as_str()) {
                        r.error(
                            OPERATOR_FILE,
                            format!(
                                "{where_phase} step {} uses task {task}, which is not defined in tasks",
                                step.name
                            ),
                        );
                    }
                }
            }
        }
    }
    for task in &op.tasks {
        if !task.name.is_empty() && !used_tasks.contains(task.name.as_str()) {
            r.warning(
                OPERATOR_FILE,
                format!("task {} is not used by any plan", task.name),
            );
        }
    }
}

/// Reports a `kind` (phase, step) of `owner` that has no name or repeats one.
fn check_child_name<'a>(
    r: &mut Report,
    seen: &mut BTreeSet<&'a str>,
    name: &'a str,
    owner: &str,
    kind: &str,
) {
    if name.trim().is_empty() {
        r.error(
            OPERATOR_FILE,
            format!("{owner} has a {kind} without a name"),
        );
    } else if !seen.insert(name) {
        r.error(
            OPERATOR_FILE,
            format!("{owner} has more than one {kind} named {name}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    fn verify_with_default(default: &str) -> String {
        let op = "name: t\noperatorVersion: 0.1.0\nkubernetesVersion: 1.15.0\ntasks:\n  - name: extra\n    kind: Toggle\n    spec:\n      parameter: EXTRA\n      resources: [cm.yaml]\nplans:\n  deploy:\n    phases:\n      - name: p\n        steps:\n          - name: s\n            tasks: [extra]\n";
        let params = format!("parameters:\n  - name: EXTRA\n    default: {default}\n");
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        let files: BTreeMap<String, Vec<u8>> = [
            ("operator.yaml", op),
            ("params.yaml", params.as_str()),
            ("templates/cm.yaml", cm),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
        let pkg = crate::load::load_from_files(files, "pkg").unwrap();
        pkg.verify().to_string()
    }

    #[test]
    fn untyped_toggle_parameter_with_boolean_default_is_clean() {
        for default in ["\"false\"", "\"true\"", "true", "\"0\""] {
            let report = verify_with_default(default);
            assert!(!report.contains("toggles task"), "{default}: {report}");
        }
    }

    #[test]
    fn pre_kudo_0_10_version_key_is_named_in_the_missing_operator_version_error() {
        let op = "name: old\nversion: 0.2.0\nkubernetesVersion: 1.15.0\ntasks: []\nplans: {}\n";
        let files: BTreeMap<String, Vec<u8>> =
            [("operator.yaml".to_string(), op.as_bytes().to_vec())]
                .into_iter()
                .collect();
        let report = crate::load::load_from_files(files, "pkg")
            .unwrap()
            .verify()
            .to_string();
        assert!(
            report.contains("operatorVersion is missing") && report.contains("call it `version`"),
            "{report}"
        );
    }

    #[test]
    fn toggle_parameter_default_that_is_no_boolean_is_a_warning() {
        let report = verify_with_default("\"yes\"");
        assert!(
            report.contains("parameter EXTRA toggles task extra, but its default is not a boolean"),
            "{report}"
        );
    }
}
