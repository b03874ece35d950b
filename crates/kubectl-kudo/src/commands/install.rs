//! `install`: a package (with its dependencies) or an installed operator,
//! the namespace when asked, then the Instance.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::{Api, Resource, ResourceExt};
use kudo_api::names::OPERATOR_LABEL;
use kudo_api::{Instance, InstanceSpec, Operator, OperatorVersion};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::dependencies::{
    Wanted, WithDependencies, installed_versions, load_with_dependencies, newest_fitting,
    not_installed,
};
use super::kube_version::check_kubernetes_version;
use super::{instances, validate_parameters};
use crate::cli::InstallArgs;
use crate::context::KubeContext;
use crate::error::{CliError, Result, status_code};
use crate::params;
use crate::wait::{Baseline, wait_for_plan};

/// Creates `object` unless one with its name exists (returned as it is);
/// says when it created it.
async fn create_if_missing<K>(api: &Api<K>, object: &K, kind: &str, namespace: &str) -> Result<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = object.name_any();
    match api.get(&name).await {
        Ok(existing) => Ok(existing),
        Err(e) if status_code(&e) == Some(404) => {
            let created = api
                .create(&PostParams::default(), object)
                .await
                .map_err(|e| CliError::api(format!("creating {kind} {namespace}/{name}"), e))?;
            outln!("{kind} {namespace}/{name} created");
            Ok(created)
        }
        Err(e) => Err(CliError::api(
            format!("reading {kind} {namespace}/{name}"),
            e,
        )),
    }
}

/// Creates the target namespace when missing (kudo-package builds it: from
/// the package's `namespaceManifest`, or plain).
async fn ensure_namespace(ctx: &KubeContext, namespace: serde_json::Value) -> Result<()> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let namespace: Namespace = serde_json::from_value(namespace).map_err(|e| {
        CliError::Package(format!(
            "the package's namespace manifest is not a Namespace: {e}"
        ))
    })?;
    match api.get(&ctx.namespace).await {
        Ok(_) => Ok(()),
        Err(e) if status_code(&e) == Some(404) => {
            api.create(&PostParams::default(), &namespace)
                .await
                .map_err(|e| CliError::api(format!("creating namespace {}", ctx.namespace), e))?;
            outln!("namespace {} created", ctx.namespace);
            Ok(())
        }
        Err(e) => Err(CliError::api(
            format!("reading namespace {}", ctx.namespace),
            e,
        )),
    }
}

/// Creates the package's Operator and OperatorVersion when missing. An
/// OperatorVersion bigger than an API server stores is refused before
/// either is written.
pub(super) async fn install_operator(
    ctx: &KubeContext,
    package: &kudo_package::Package,
) -> Result<OperatorVersion> {
    let operator_version = package.to_operator_version(&ctx.namespace);
    kudo_package::verify::check_operator_version_size(&operator_version)
        .map_err(|e| CliError::Package(e.to_string()))?;
    let ns = &ctx.namespace;
    let versions: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), ns);
    // An installed version is checked before anything is written.
    let name = operator_version.name_any();
    let existing = versions
        .get_opt(&name)
        .await
        .map_err(|e| CliError::api(format!("reading operatorversion {ns}/{name}"), e))?;
    if let Some(installed) = &existing {
        let differences =
            kudo_api::ov_content::differences(&installed.spec, &operator_version.spec);
        if !differences.is_empty() {
            return Err(super::ov_content::differs_error(ns, &name, &differences));
        }
    }
    let operators: Api<Operator> = Api::namespaced(ctx.client.clone(), ns);
    create_if_missing(&operators, &package.to_operator(ns), "operator", ns).await?;
    if let Some(installed) = existing {
        outln!("operatorversion {ns}/{name} is installed already, with the same content");
        return Ok(installed);
    }
    create_if_missing(&versions, &operator_version, "operatorversion", ns).await
}

/// Creates each dependency's Operator and OperatorVersion when missing
/// (no Instance: the KudoOperator task creates it), in install order.
pub(super) async fn install_dependencies(
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
            operator_version: args.versions.operator_version.as_deref(),
            app_version: args.versions.app_version.as_deref(),
        };
        let found = newest_fitting(&installed, &wanted)
            .ok_or_else(|| not_installed(&wanted, &ctx.namespace, &installed))?;
        return Ok(Source {
            operator,
            operator_version: found.clone(),
            packages: None,
        });
    }
    let found = super::source::locate(&args.package, &args.versions, &args.source).await?;
    let packages = load_with_dependencies(ctx, found.located, &args.source).await?;
    check_kubernetes_version(
        ctx,
        std::iter::once(&packages.package).chain(&packages.dependencies),
    )
    .await?;
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
        // Rendered before anything is written, so a broken manifest stops here.
        let namespace = match &source.packages {
            Some(packages) => kudo_package::render::namespace_manifest(
                &packages.package,
                &instance_name,
                &ctx.namespace,
                &values,
            )
            .map_err(|e| CliError::Package(e.to_string()))?,
            None => kudo_package::render::plain_namespace(&ctx.namespace),
        };
        ensure_namespace(ctx, namespace).await?;
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
    if let Some(why) = super::requirements::unmet(ctx, &instance_name, &ov).await {
        errln!(
            "warning: {why}; the Instance is created, and the manager holds channel upgrades \
             that would leave this unmet"
        );
    }
    instance.metadata.namespace = Some(ctx.namespace.clone());
    instance.metadata.labels = Some(BTreeMap::from([(
        OPERATOR_LABEL.to_string(),
        operator.clone(),
    )]));
    let created = super::warned::create(&ctx.client, &ctx.namespace, &instance)
        .await
        .map_err(|e| {
            CliError::api(
                format!("creating Instance {}/{instance_name}", ctx.namespace),
                e,
            )
        })?;
    outln!("instance {}/{instance_name} created", ctx.namespace);
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &instance_name),
            &Baseline::default().seen_at(created.metadata.generation),
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}
