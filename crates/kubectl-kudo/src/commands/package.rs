//! `package verify|params list|render`: thin wrappers over kudo-package,
//! no cluster needed. `--kubernetes-version` checks against the API versions
//! a release serves, from kudo-package's table; without it, a cluster named
//! by `--kubeconfig` or `$KUBECONFIG` is asked for its version.

use kudo_api::Parameter;

use super::source::Found;
use crate::cli::{
    GlobalArgs, PackageCommand, PackageParamsCommand, PackageRef, PackageRenderArgs,
    PackageVerifyArgs,
};
use crate::context::offline_namespace;
use crate::error::{CliError, Result};
use crate::output::{DataFormat, format_data, table};
use crate::params;
use kudo_package::removed_apis::{KubernetesRelease, translate_plan};
use kudo_package::render::{PlanRenderOptions, format_render_output, render_plan_offline};

/// The package PACKAGE names (a folder, archive, repository name or
/// oci:// reference) and how to call it in messages.
async fn load(package: &PackageRef) -> Result<super::source::Found> {
    super::source::locate(&package.package, &package.versions, &package.source).await
}

/// Runs a `package` subcommand.
pub async fn run(global: &GlobalArgs, cmd: PackageCommand) -> Result<()> {
    match cmd {
        PackageCommand::Verify(mut args) => {
            super::no_output(global, "package verify")?;
            let found = load(&args.package).await?;
            if args.kubernetes_version.is_none() {
                args.kubernetes_version = server_release(global).await;
            }
            verify(&args, found)
        }
        PackageCommand::Params(PackageParamsCommand::List(args)) => {
            let format = super::data_format(global, "package params list")?;
            params_list(load(&args.package).await?, format)
        }
        PackageCommand::Render(mut args) => {
            // Its output is YAML already.
            if global.output != Some(crate::cli::OutputFormat::Yaml) {
                super::no_output(global, "package render")?;
            }
            let found = load(&args.package).await?;
            if args.kubernetes_version.is_none() {
                args.kubernetes_version = server_release(global).await;
            }
            render(global, &args, found)
        }
        PackageCommand::Create(args) => {
            super::no_output(global, "package create")?;
            super::repo::package_create(&args)
        }
        PackageCommand::Push(args) => {
            super::no_output(global, "package push")?;
            super::repo::package_push(&args).await
        }
    }
}

/// The Kubernetes release of the cluster a kubeconfig was named for
/// (`--kubeconfig` or `$KUBECONFIG`; a default `~/.kube/config` is not used,
/// so the commands stay offline unless asked). `None`, with a note, when it
/// does not answer.
async fn server_release(global: &GlobalArgs) -> Option<KubernetesRelease> {
    if global.kubeconfig.is_none() && std::env::var_os("KUBECONFIG").is_none() {
        return None;
    }
    let asked = async {
        let ctx = crate::context::connect(global).await.ok()?;
        let info = ctx.client.apiserver_version().await.ok()?;
        format!("{}.{}", info.major, info.minor).parse().ok()
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), asked).await {
        Ok(Some(release)) => {
            errln!(
                "note: checking API versions against the cluster's {release} (--kubernetes-version chooses another)"
            );
            Some(release)
        }
        _ => {
            errln!(
                "note: the cluster's version could not be read; API versions are not checked (pass --kubernetes-version)"
            );
            None
        }
    }
}

fn verify(args: &PackageVerifyArgs, found: Found) -> Result<()> {
    let shown = found.shown;
    let package = found.located.package;
    let mut report = package.verify();
    if let Some(release) = args.kubernetes_version {
        let apis = package.verify_api_versions(&release, &release.to_string());
        report.errors.extend(apis.errors);
        report.warnings.extend(apis.warnings);
    }
    out!("{report}");
    let text = report.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        outln!();
    }
    if !report.has_errors() {
        outln!(
            "package {shown} (operator {} version {}) is valid",
            package.operator.name,
            package.operator.operator_version
        );
    }
    if report.has_errors() {
        return Err(CliError::Package(format!("package {shown} has errors")));
    }
    Ok(())
}

/// Rows of `package params list`, sorted by name.
pub fn parameter_rows(parameters: &[Parameter]) -> Vec<Vec<String>> {
    let mut sorted: Vec<&Parameter> = parameters.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
        .into_iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.default.clone().unwrap_or_default().replace('\n', "\\n"),
                p.is_required().to_string(),
                p.is_immutable().to_string(),
                p.kind().to_string(),
                p.trigger.clone().unwrap_or_default(),
            ]
        })
        .collect()
}

fn params_list(found: Found, format: Option<DataFormat>) -> Result<()> {
    let package = found.located.package;
    let ov = package.to_operator_version("default");
    if let Some(format) = format {
        out!("{}", format_data(&ov.spec.parameters, format)?);
        return Ok(());
    }
    if ov.spec.parameters.is_empty() {
        outln!("Package {} has no parameters.", found.shown);
        return Ok(());
    }
    out!(
        "{}",
        table(
            &[
                "name",
                "default",
                "required",
                "immutable",
                "type",
                "trigger"
            ],
            parameter_rows(&ov.spec.parameters)
        )
    );
    Ok(())
}

fn render(global: &GlobalArgs, args: &PackageRenderArgs, found: Found) -> Result<()> {
    let values = params::collect(&args.params)?;
    // KudoOperator tasks naming a folder beside the package render as the
    // install will write them; those naming an operator stay as written.
    let shown = found.shown;
    let package = super::dependencies::resolve_offline(found.located)?.root;
    let namespace = offline_namespace(global);
    let ov = package.to_operator_version(&namespace);
    if !ov.spec.plans.contains_key(&args.plan) {
        let known: Vec<&str> = ov.spec.plans.keys().map(String::as_str).collect();
        return Err(CliError::Usage(format!(
            "package {shown} has no plan {}; its plans are: {}",
            args.plan,
            known.join(", ")
        )));
    }
    let options = PlanRenderOptions {
        plan: args.plan.clone(),
        instance_name: args
            .instance
            .clone()
            .unwrap_or_else(|| format!("{}-instance", package.operator.name)),
        namespace,
        instance_uid: None,
        plan_uid: String::new(),
        values,
    };
    let (mut steps, assumed) =
        render_plan_offline(&ov, &options).map_err(|e| CliError::Package(e.to_string()))?;
    if !assumed.is_empty() {
        errln!(
            "note: no cluster is asked; these kinds were taken as namespaced: {}",
            assumed.join(", ")
        );
    }
    let translations = match args.kubernetes_version {
        Some(release) => translate_plan(&mut steps, &release),
        None => Vec::new(),
    };
    let text = format_render_output(&steps);
    out!("{text}");
    if !text.ends_with('\n') {
        outln!();
    }
    let Some(release) = args.kubernetes_version else {
        return Ok(());
    };
    let mut refused = 0;
    for t in &translations {
        if t.outcome.is_ok() {
            errln!("note: on {release}, {t}");
        } else {
            refused += 1;
            errln!("error: on {release}, {t}");
        }
    }
    if refused > 0 {
        return Err(CliError::Package(format!(
            "{refused} object{} of plan {} cannot be applied on {release}",
            if refused == 1 { "" } else { "s" },
            args.plan,
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::ParameterType;

    #[test]
    fn parameter_rows_are_sorted_and_show_type_and_trigger() {
        let rows = parameter_rows(&[
            Parameter {
                name: "ZK".into(),
                ..Default::default()
            },
            Parameter {
                name: "REPLICAS".into(),
                default: Some("3".into()),
                required: Some(true),
                value_type: Some(ParameterType::Integer),
                trigger: Some("scale".into()),
                ..Default::default()
            },
        ]);
        assert_eq!(
            rows[0],
            vec!["REPLICAS", "3", "true", "false", "integer", "scale"]
        );
        assert_eq!(rows[1][0], "ZK");
        assert_eq!(rows[1][4], "string");
    }
}
