//! `install`, `update`, `upgrade`, `uninstall`, `rollback`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use kube::{Api, Resource, ResourceExt};
use kudo_api::names::OPERATOR_LABEL;
use kudo_api::{Instance, InstanceSpec, Operator, OperatorVersion};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::dependencies::{
    Wanted, WithDependencies, installed_versions, load_with_dependencies, newest_fitting,
    not_installed,
};
use super::{
    get_instance, get_operator_version, instances, merge_patch, read_modify_write,
    validate_parameters,
};
use crate::cli::{InstallArgs, RollbackArgs, UninstallArgs, UpdateArgs, UpgradeArgs};
use crate::context::KubeContext;
use crate::error::{CliError, Result, status_code};
use crate::wait::{Baseline, ProgressView, wait_for_plan};
use crate::{params, patch};

/// Creates `object` unless one with its name exists; says which happened.
async fn create_if_missing<K>(api: &Api<K>, object: &K, kind: &str, namespace: &str) -> Result<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = object.name_any();
    match api.get(&name).await {
        Ok(existing) => {
            println!("{kind} {namespace}/{name} already exists, not changed");
            Ok(existing)
        }
        Err(e) if status_code(&e) == Some(404) => {
            let created = api
                .create(&PostParams::default(), object)
                .await
                .map_err(|e| CliError::api(format!("creating {kind} {namespace}/{name}"), e))?;
            println!("{kind} {namespace}/{name} created");
            Ok(created)
        }
        Err(e) => Err(CliError::api(
            format!("reading {kind} {namespace}/{name}"),
            e,
        )),
    }
}

async fn ensure_namespace(ctx: &KubeContext) -> Result<()> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ctx.namespace.clone()),
            annotations: Some(BTreeMap::from([(
                "created-by".to_string(),
                "kudo-cli".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.get(&ctx.namespace).await {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(404) => {
            api.create(&PostParams::default(), &namespace)
                .await
                .map_err(|e| CliError::api(format!("creating namespace {}", ctx.namespace), e))?;
            println!("namespace {} created", ctx.namespace);
            Ok(())
        }
        Err(e) => Err(CliError::api(
            format!("reading namespace {}", ctx.namespace),
            e,
        )),
    }
}

/// Creates the package's Operator and OperatorVersion when missing.
async fn install_operator(
    ctx: &KubeContext,
    package: &kudo_package::Package,
) -> Result<OperatorVersion> {
    let operators: Api<Operator> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    create_if_missing(
        &operators,
        &package.to_operator(&ctx.namespace),
        "operator",
        &ctx.namespace,
    )
    .await?;
    let versions: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    create_if_missing(
        &versions,
        &package.to_operator_version(&ctx.namespace),
        "operatorversion",
        &ctx.namespace,
    )
    .await
}

/// Creates each dependency's Operator and OperatorVersion when missing
/// (no Instance: the KudoOperator task creates it), in install order.
async fn install_dependencies(
    ctx: &KubeContext,
    dependencies: &[kudo_package::Package],
) -> Result<()> {
    for dependency in dependencies {
        install_operator(ctx, dependency).await?;
    }
    Ok(())
}

/// What an install creates the Instance from.
struct Source {
    /// The operator's name.
    operator: String,
    /// Its OperatorVersion as it will be (or is) stored.
    operator_version: OperatorVersion,
    /// The package and its dependencies to create first; `None` for an
    /// operator already installed (`--in-cluster`).
    packages: Option<WithDependencies>,
}

async fn install_source(ctx: &KubeContext, args: &InstallArgs) -> Result<Source> {
    if args.in_cluster {
        let operator = args.package.to_string_lossy().into_owned();
        let installed = installed_versions(ctx).await?;
        let wanted = Wanted {
            operator: &operator,
            operator_version: args.operator_version.as_deref(),
            app_version: args.app_version.as_deref(),
        };
        let found = newest_fitting(&installed, &wanted)
            .ok_or_else(|| not_installed(&wanted, &ctx.namespace, &installed))?;
        return Ok(Source {
            operator,
            operator_version: found.clone(),
            packages: None,
        });
    }
    let packages = load_with_dependencies(ctx, &args.package).await?;
    Ok(Source {
        operator: packages.package.operator.name.clone(),
        operator_version: packages.package.to_operator_version(&ctx.namespace),
        packages: Some(packages),
    })
}

/// `install PKG`.
pub async fn install(ctx: &KubeContext, args: &InstallArgs) -> Result<()> {
    let values = params::collect(&args.params)?;
    let source = install_source(ctx, args).await?;
    let operator = source.operator.clone();
    let instance_name = args
        .instance
        .clone()
        .unwrap_or_else(|| format!("{operator}-instance"));
    // Check parameters against the package before writing anything.
    if !args.skip_instance {
        validate_parameters(&source.operator_version, &values)?;
        if instances(ctx)
            .get_opt(&instance_name)
            .await
            .map_err(|e| {
                CliError::api(
                    format!("reading Instance {}/{instance_name}", ctx.namespace),
                    e,
                )
            })?
            .is_some()
        {
            return Err(CliError::Other(format!(
                "instance {}/{instance_name} already exists; change it with `kubectl kudo update` or `kubectl kudo upgrade`, or pick another name with --instance",
                ctx.namespace
            )));
        }
    }
    if args.create_namespace {
        ensure_namespace(ctx).await?;
    }
    let ov = match &source.packages {
        Some(packages) => {
            install_dependencies(ctx, &packages.dependencies).await?;
            install_operator(ctx, &packages.package).await?
        }
        None => source.operator_version,
    };
    if args.skip_instance {
        return Ok(());
    }
    let mut instance = Instance::new(
        &instance_name,
        InstanceSpec {
            parameters: (!values.is_empty()).then_some(values),
            ..InstanceSpec::default()
        },
    );
    instance.spec.operator_version.name = Some(ov.name_any());
    instance.metadata.namespace = Some(ctx.namespace.clone());
    instance.metadata.labels = Some(BTreeMap::from([(
        OPERATOR_LABEL.to_string(),
        operator.clone(),
    )]));
    instances(ctx)
        .create(&PostParams::default(), &instance)
        .await
        .map_err(|e| {
            CliError::api(
                format!("creating Instance {}/{instance_name}", ctx.namespace),
                e,
            )
        })?;
    println!("instance {}/{instance_name} created", ctx.namespace);
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            &instance_name,
            &Baseline::default(),
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

/// User values after a merge patch of `changes` onto the Instance's.
fn merged_values(
    instance: &Instance,
    changes: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut values = instance.spec.parameters.clone().unwrap_or_default();
    values.extend(changes.clone());
    values
}

/// Immutable parameters may not change after creation.
fn check_immutable(
    ov: &OperatorVersion,
    instance: &Instance,
    changes: &BTreeMap<String, String>,
) -> Result<()> {
    let problems: Vec<String> = changes
        .iter()
        .filter_map(|(name, value)| {
            let def = ov.spec.parameter(name)?;
            let current = def.effective_value(instance.spec.parameter(name));
            (def.is_immutable() && current != value).then(|| {
                format!(
                    "parameter {name} is immutable and cannot change from {current:?} to {value:?}"
                )
            })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Parameters(problems))
    }
}

/// `update --instance I -p ...`.
pub async fn update(ctx: &KubeContext, args: &UpdateArgs) -> Result<()> {
    let changes = params::collect(&args.params)?;
    if changes.is_empty() {
        return Err(CliError::Usage(
            "update needs at least one parameter: -p KEY=VALUE or -P FILE".into(),
        ));
    }
    let instance = get_instance(ctx, &args.instance).await?;
    let ov = get_operator_version(ctx, &instance).await?;
    validate_parameters(&ov, &merged_values(&instance, &changes))?;
    check_immutable(&ov, &instance, &changes)?;
    let baseline = Baseline::from_status(instance.status.as_ref(), None);
    merge_patch(
        ctx,
        &args.instance,
        &patch::parameters(&changes),
        "updating parameters",
    )
    .await?;
    println!("instance {}/{} updated", ctx.namespace, args.instance);
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            &args.instance,
            &baseline,
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

fn parse_version(raw: Option<&str>, what: &str) -> Result<semver::Version> {
    let text = raw.unwrap_or_default();
    semver::Version::parse(text.trim_start_matches('v')).map_err(|e| {
        CliError::Other(format!(
            "{what} has version {text:?}, which is not semver: {e}"
        ))
    })
}

/// `upgrade PKG --instance I`.
pub async fn upgrade(ctx: &KubeContext, args: &UpgradeArgs) -> Result<()> {
    let changes = params::collect(&args.params)?;
    let WithDependencies {
        package,
        dependencies,
    } = load_with_dependencies(ctx, &args.package).await?;
    let instance = get_instance(ctx, &args.instance).await?;
    let current = get_operator_version(ctx, &instance).await?;
    let current_operator = current
        .spec
        .operator
        .as_ref()
        .and_then(|o| o.name.clone())
        .unwrap_or_default();
    if !current_operator.is_empty() && current_operator != package.operator.name {
        return Err(CliError::Other(format!(
            "instance {} runs operator {current_operator}, but the package is operator {}; upgrade with a package of the same operator",
            args.instance, package.operator.name
        )));
    }
    let from = parse_version(
        current.spec.version.as_deref(),
        &format!("operatorversion {}", current.name_any()),
    )?;
    let to = parse_version(
        Some(&package.operator.operator_version),
        &format!("package {}", args.package.display()),
    )?;
    if to <= from {
        return Err(CliError::Other(format!(
            "cannot upgrade instance {} from version {from} to {to}: the new version must be greater",
            args.instance
        )));
    }
    let new_ov = package.to_operator_version(&ctx.namespace);
    validate_parameters(&new_ov, &merged_values(&instance, &changes))?;
    let baseline = Baseline::from_status(instance.status.as_ref(), None);
    install_dependencies(ctx, &dependencies).await?;
    let ov = install_operator(ctx, &package).await?;
    merge_patch(
        ctx,
        &args.instance,
        &patch::upgrade(&ov.name_any(), &changes),
        "upgrading",
    )
    .await?;
    println!(
        "instance {}/{} upgraded from {from} to {to} (operatorversion {})",
        ctx.namespace,
        args.instance,
        ov.name_any()
    );
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            &args.instance,
            &baseline,
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

/// `uninstall --instance I`.
pub async fn uninstall(ctx: &KubeContext, args: &UninstallArgs) -> Result<()> {
    let api = instances(ctx);
    get_instance(ctx, &args.instance).await?;
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    api.delete(&args.instance, &params).await.map_err(|e| {
        CliError::api(
            format!("deleting Instance {}/{}", ctx.namespace, args.instance),
            e,
        )
    })?;
    println!("instance {}/{} deleted", ctx.namespace, args.instance);
    if args.wait {
        wait_until_gone(&api, &args.instance, args.wait_timeout).await?;
    }
    Ok(())
}

async fn wait_until_gone(
    api: &Api<Instance>,
    name: &str,
    timeout: std::time::Duration,
) -> Result<()> {
    let mut view = ProgressView::new();
    loop {
        match api.get_opt(name).await {
            Ok(None) => {
                view.finish();
                eprintln!(
                    "instance {name} is gone after {}s",
                    view.elapsed().as_secs()
                );
                return Ok(());
            }
            Ok(Some(instance)) => {
                let cleanup = instance
                    .status
                    .as_ref()
                    .and_then(|s| s.plan_status.get(kudo_api::names::CLEANUP_PLAN))
                    .map(|p| format!(" (cleanup plan {})", p.status()))
                    .unwrap_or_default();
                view.update(&format!(
                    "waiting for instance {name} to be deleted{cleanup}"
                ));
            }
            Err(e) => {
                view.finish();
                return Err(CliError::api(format!("reading Instance {name}"), e));
            }
        }
        if view.elapsed() >= timeout {
            view.finish();
            return Err(CliError::Timeout(format!(
                "timed out after {}s waiting for instance {name} to be deleted",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(crate::wait::POLL_INTERVAL).await;
    }
}

/// `rollback --instance I`.
pub async fn rollback(ctx: &KubeContext, args: &RollbackArgs) -> Result<()> {
    let before = get_instance(ctx, &args.instance).await?;
    let baseline = Baseline::from_status(before.status.as_ref(), None);
    let mut target_ov = String::new();
    let mut unchanged = false;
    read_modify_write(ctx, &args.instance, "rolling back", |instance| {
        let target = instance
            .status
            .as_ref()
            .and_then(|s| s.last_successful.clone())
            .ok_or_else(|| {
                CliError::Other(format!(
                    "instance {} has no successful plan to roll back to (status.lastSuccessful is empty)",
                    args.instance
                ))
            })?;
        let current = instance.spec.parameters.clone().unwrap_or_default();
        unchanged = instance.spec.operator_version.name.as_deref()
            == Some(target.operator_version.as_str())
            && current == target.parameters;
        target_ov = target.operator_version.clone();
        let rv = instance.resource_version().unwrap_or_default();
        Ok(patch::rollback(&rv, &current, &target))
    })
    .await?;
    if unchanged {
        println!(
            "instance {}/{} already runs operatorversion {target_ov} with the parameters of its last successful plan; nothing to roll back",
            ctx.namespace, args.instance
        );
        return Ok(());
    }
    println!(
        "instance {}/{} rolled back to operatorversion {target_ov} and the parameters of its last successful plan",
        ctx.namespace, args.instance
    );
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            &args.instance,
            &baseline,
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}
