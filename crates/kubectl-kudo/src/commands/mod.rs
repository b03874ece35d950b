//! The commands: each reads what it needs, asks the pure modules what to
//! write or print, and does the IO.

pub(crate) mod completion;
mod dependencies;
mod get;
mod init;
mod init_crds;
mod init_local;
mod install;
mod instance;
mod kube_version;
mod maintenance;
mod ov_content;
mod package;
mod plan;
mod plan_ops;
mod pod;
mod repo;
mod requirements;
mod source;
mod suppress;
pub(crate) mod warned;

use std::collections::BTreeMap;

use kube::api::PatchParams;
use kube::{Api, ResourceExt};
use kudo_api::{Instance, OperatorVersion};
use serde_json::Value;

use crate::cli::{Cli, Command, GlobalArgs, OutputFormat, PlanCommand};
use crate::context::{KubeContext, connect};
use crate::error::{CliError, Result, status_code};
use crate::output::DataFormat;

/// `version`: the client's version (as `--version`), or `{clientVersion}`
/// with `-o yaml|json`.
fn version(format: Option<DataFormat>) -> Result<()> {
    let version = env!("CARGO_PKG_VERSION");
    match format {
        None => outln!("kubectl-kudo {version}"),
        Some(format) => out!(
            "{}",
            crate::output::format_data(&serde_json::json!({ "clientVersion": version }), format)?
        ),
    }
    Ok(())
}

/// `-o` of a command that prints data as YAML or JSON and nothing else.
fn data_format(global: &GlobalArgs, command: &str) -> Result<Option<DataFormat>> {
    match global.output {
        None => Ok(None),
        Some(OutputFormat::Yaml) => Ok(Some(DataFormat::Yaml)),
        Some(OutputFormat::Json) => Ok(Some(DataFormat::Json)),
        Some(other) => Err(CliError::Usage(format!(
            "{command} prints -o yaml or -o json, not -o {}",
            other.as_str()
        ))),
    }
}

/// A command that prints no data refuses `-o` rather than ignoring it.
fn no_output(global: &GlobalArgs, command: &str) -> Result<()> {
    match global.output {
        None => Ok(()),
        Some(format) => Err(CliError::Usage(format!(
            "{command} prints no data, so -o {} means nothing to it; -o is for get, plan status, \
             plan history, maintenance status, package params list, repo list, search, init --dry-run and version",
            format.as_str()
        ))),
    }
}

/// Field manager recorded for the CLI's writes.
pub const FIELD_MANAGER: &str = "kubectl-kudo";

/// How often a read-modify-write is tried before a 409 conflict is reported
/// (each conflict means another writer succeeded, so this bounds contention
/// rather than luck).
const CONFLICT_RETRIES: usize = 10;

/// Runs one parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    let global = cli.global;
    match cli.command {
        Command::Completion(args) => {
            no_output(&global, "completion")?;
            completion::run(&args)
        }
        Command::Version => version(data_format(&global, "version")?),
        Command::Package(cmd) => package::run(&global, cmd).await,
        Command::Repo(cmd) => repo::run(&global, cmd).await,
        Command::Search(args) => repo::search(&global, &args).await,
        Command::Init(args) => init::run(&global, &args).await,
        Command::Install(args) => {
            no_output(&global, "install")?;
            install::install(&connect(&global).await?, &args).await
        }
        Command::Update(args) => {
            no_output(&global, "update")?;
            instance::update(&connect(&global).await?, &args).await
        }
        Command::Upgrade(args)
            if args.package.as_os_str() == "approve"
                && (args.approve_version.is_some() || !args.package.exists()) =>
        {
            no_output(&global, "upgrade approve")?;
            instance::approve(
                &connect(&global).await?,
                &args.instance,
                args.approve_version.as_deref(),
            )
            .await
        }
        Command::Upgrade(args) if args.approve_version.is_some() => Err(CliError::Usage(
            "upgrade takes one PACKAGE; a VERSION follows only `upgrade approve`".into(),
        )),
        Command::Upgrade(args) => {
            no_output(&global, "upgrade")?;
            instance::upgrade(&connect(&global).await?, &args).await
        }
        Command::Uninstall(args) => {
            no_output(&global, "uninstall")?;
            instance::uninstall(&connect(&global).await?, &args).await
        }
        Command::Rollback(args) => {
            no_output(&global, "rollback")?;
            instance::rollback(&connect(&global).await?, &args).await
        }
        Command::Get(args) => get::run(&connect(&global).await?, &args, global.output).await,
        Command::Suppress(args) => {
            no_output(&global, "suppress")?;
            suppress::run(&global, args).await
        }
        Command::Pod(cmd) => {
            no_output(&global, "pod")?;
            pod::run(&connect(&global).await?, cmd).await
        }
        Command::Maintenance(cmd) => maintenance::run(&global, cmd).await,
        Command::Plan(cmd) => {
            let format = match &cmd {
                PlanCommand::Status(_) => data_format(&global, "plan status")?,
                PlanCommand::History(_) => data_format(&global, "plan history")?,
                _ => {
                    no_output(&global, "this plan command")?;
                    None
                }
            };
            let ctx = connect(&global).await?;
            match cmd {
                PlanCommand::Status(args) => plan::status(&ctx, &args, format).await,
                PlanCommand::History(args) => plan::history(&ctx, &args, format).await,
                PlanCommand::Trigger(args) => plan::trigger(&ctx, &args).await,
                other => plan_ops::operation(&ctx, other).await,
            }
        }
    }
}

/// Instances in the context's namespace.
pub fn instances(ctx: &KubeContext) -> Api<Instance> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

/// Reads an Instance; a missing one is an error that says how to list them.
pub async fn get_instance(ctx: &KubeContext, name: &str) -> Result<Instance> {
    match instances(ctx).get(name).await {
        Ok(instance) => Ok(instance),
        Err(e) if status_code(&e) == Some(404) => Err(CliError::NotFound(format!(
            "instance {name} not found in namespace {ns}; list them with `kubectl kudo get instances -n {ns}`",
            ns = ctx.namespace
        ))),
        Err(e) => Err(CliError::api(
            format!("reading Instance {}/{name}", ctx.namespace),
            e,
        )),
    }
}

/// Reads the OperatorVersion an Instance points at.
pub async fn get_operator_version(
    ctx: &KubeContext,
    instance: &Instance,
) -> Result<OperatorVersion> {
    let reference = &instance.spec.operator_version;
    let name = reference.name.clone().unwrap_or_default();
    let namespace = reference
        .namespace
        .clone()
        .or_else(|| instance.namespace())
        .unwrap_or_else(|| ctx.namespace.clone());
    let api: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.get(&name).await {
        Ok(ov) => Ok(ov),
        Err(e) if status_code(&e) == Some(404) => Err(CliError::NotFound(format!(
            "operatorversion {namespace}/{name} used by instance {} not found; install its package again with `kubectl kudo install`",
            instance.name_any()
        ))),
        Err(e) => Err(CliError::api(
            format!("reading OperatorVersion {namespace}/{name}"),
            e,
        )),
    }
}

/// Sends a JSON merge patch to an Instance.
pub async fn merge_patch(
    ctx: &KubeContext,
    name: &str,
    patch: &Value,
    action: &str,
) -> Result<Instance> {
    warned::merge_patch::<Instance>(&ctx.client, &ctx.namespace, name, &patch_params(), patch)
        .await
        .map_err(|e| CliError::api(format!("{action} (instance {}/{name})", ctx.namespace), e))
}

/// Reads the Instance, builds a patch from it (which carries its
/// resourceVersion) and sends it, again from a fresh read on 409.
pub async fn read_modify_write<F>(
    ctx: &KubeContext,
    name: &str,
    action: &str,
    mut build: F,
) -> Result<Instance>
where
    F: FnMut(&Instance) -> Result<Value>,
{
    let mut attempt = 0;
    loop {
        let current = get_instance(ctx, name).await?;
        let patch = build(&current)?;
        match merge_patch(ctx, name, &patch, action).await {
            Err(e) if e.code() == Some(409) && attempt + 1 < CONFLICT_RETRIES => {
                attempt += 1;
                tracing::info!(attempt, "instance {name} changed concurrently; retrying");
                let pause = u64::try_from(attempt).unwrap_or(1).saturating_mul(20);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            other => return other,
        }
    }
}

/// Patch parameters naming the CLI as field manager.
pub fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    }
}

/// A version as packages and OperatorVersions write it: semver, with or
/// without a leading `v`.
pub fn parse_semver(text: &str) -> std::result::Result<semver::Version, semver::Error> {
    semver::Version::parse(text.trim_start_matches('v'))
}

/// Appends `operation` to the Instance's `spec.planOperations` (read,
/// modify, write with a resourceVersion precondition, as every plan
/// operation is written).
pub async fn append_operation(
    ctx: &KubeContext,
    instance: &str,
    operation: &kudo_api::PlanOperation,
) -> Result<Instance> {
    let action = format!("requesting {}", operation.action);
    read_modify_write(ctx, instance, &action, |current| {
        let rv = current.resource_version().unwrap_or_default();
        Ok(crate::patch::plan_operations(
            &rv,
            &current.spec.plan_operations,
            operation.clone(),
        ))
    })
    .await
}
/// A fresh request id.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Local check of parameter values against an OperatorVersion: unknown
/// names, then type/enum/required (the same validator the webhook uses).
pub fn validate_parameters(ov: &OperatorVersion, values: &BTreeMap<String, String>) -> Result<()> {
    let mut problems = Vec::new();
    let unknown: Vec<&str> = values
        .keys()
        .map(String::as_str)
        .filter(|name| ov.spec.parameter(name).is_none())
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = ov.spec.parameters.iter().map(|p| p.name.as_str()).collect();
        let (noun, verb) = if unknown.len() == 1 {
            ("parameter", "is")
        } else {
            ("parameters", "are")
        };
        problems.push(format!(
            "{noun} {} {verb} not defined by operatorversion {}; defined parameters: {}",
            kudo_api::message::listed(&unknown),
            ov.name_any(),
            if known.is_empty() {
                "none".to_string()
            } else {
                kudo_api::message::listed(&known).to_string()
            }
        ));
    }
    problems.extend(
        kudo_api::validate_parameters(&ov.spec.parameters, values)
            .into_iter()
            .map(|e| e.to_string()),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Parameters(problems))
    }
}
