//! `update`, `upgrade`, `uninstall`, `rollback` (`install` is in install.rs).

use std::collections::BTreeMap;

use kube::api::{DeleteParams, PropagationPolicy};
use kube::{Api, ResourceExt};
use kudo_api::{Instance, OperatorVersion};

use super::dependencies::{WithDependencies, load_with_dependencies};
use super::install::{install_dependencies, install_operator};
use super::kube_version::check_kubernetes_version;
use super::{
    get_instance, get_operator_version, instances, merge_patch, read_modify_write,
    validate_parameters,
};
use crate::cli::{RollbackArgs, UninstallArgs, UpdateArgs, UpgradeArgs};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::wait::{Baseline, ProgressView, wait_for_plan};
use crate::{params, patch};

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
                    "parameter {name} is immutable and cannot change from {} to {}",
                    kudo_api::preview(current),
                    kudo_api::preview(value)
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
    let updated = merge_patch(
        ctx,
        &args.instance,
        &patch::parameters(&changes),
        "updating parameters",
    )
    .await?;
    outln!("instance {}/{} updated", ctx.namespace, args.instance);
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &args.instance),
            &baseline.seen_at(updated.metadata.generation),
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

fn parse_version(raw: Option<&str>, what: &str) -> Result<semver::Version> {
    let text = raw.unwrap_or_default();
    super::parse_semver(text).map_err(|e| {
        CliError::Other(format!(
            "{what} has version {text:?}, which is not semver: {e}"
        ))
    })
}

/// `upgrade PKG --instance I`.
pub async fn upgrade(ctx: &KubeContext, args: &UpgradeArgs) -> Result<()> {
    let changes = params::collect(&args.params)?;
    let found = super::source::locate(&args.package, &args.versions, &args.source).await?;
    let shown = found.shown.clone();
    let WithDependencies {
        package,
        dependencies,
    } = load_with_dependencies(ctx, found.located, &args.source).await?;
    check_kubernetes_version(ctx, std::iter::once(&package).chain(&dependencies)).await?;
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
        &format!("package {shown}"),
    )?;
    if to == from {
        return Err(CliError::Other(format!(
            "instance {} already runs version {from} ({shown}); nothing to upgrade",
            args.instance
        )));
    }
    if to < from {
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
    let upgraded = merge_patch(
        ctx,
        &args.instance,
        &patch::upgrade(&ov.name_any(), &changes),
        "upgrading",
    )
    .await?;
    outln!(
        "instance {}/{} upgraded from {from} to {to} (operatorversion {})",
        ctx.namespace,
        args.instance,
        ov.name_any()
    );
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &args.instance),
            &baseline.seen_at(upgraded.metadata.generation),
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
    if args.delete_crds {
        // Read by the manager when it lets the Instance's objects go.
        let patch = serde_json::json!({"metadata": {"annotations": {
            kudo_api::names::DELETE_CRDS_ANNOTATION: "true"
        }}});
        api.patch(
            &args.instance,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .map_err(|e| {
            CliError::api(
                format!(
                    "marking Instance {}/{} to delete its CRDs",
                    ctx.namespace, args.instance
                ),
                e,
            )
        })?;
    }
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
    outln!("instance {}/{} deleted", ctx.namespace, args.instance);
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
                errln!(
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

/// Changes in spec that no plan ran yet (spec differs from what status
/// says was applied) and that going back to `target` drops, as
/// `NAME=VALUE` (`NAME unset`) and `operatorversion NAME`.
fn never_applied(instance: &Instance, target: &kudo_api::AppliedConfig) -> Vec<String> {
    let status = instance.status.as_ref();
    let applied = status.and_then(|s| s.applied_parameters.as_ref());
    let spec = instance.spec.parameters.clone().unwrap_or_default();
    let mut out: Vec<String> = spec
        .iter()
        .filter(|(name, value)| {
            applied.and_then(|a| a.get(*name)) != Some(*value)
                && target.parameters.get(*name) != Some(*value)
        })
        .map(|(name, value)| format!("{name}={}", kudo_api::preview(value)))
        .collect();
    let spec_ov = instance.spec.operator_version.name.as_deref();
    let applied_ov = status.and_then(|s| s.applied_operator_version.as_deref());
    if let Some(ov) = spec_ov.filter(|ov| Some(*ov) != applied_ov && *ov != target.operator_version)
    {
        out.push(format!("operatorversion {ov}"));
    }
    out
}

/// `upgrade approve --instance I [VERSION]`: writes the approval into
/// `spec.upgrades.approved` (a person's decision, so spec); the manager
/// moves once every other hold allows.
pub async fn approve(ctx: &KubeContext, instance: &str, version: Option<&str>) -> Result<()> {
    let inst = get_instance(ctx, instance).await?;
    let Some(policy) = inst.spec.upgrades.clone() else {
        return Err(CliError::Other(format!(
            "instance {instance} tracks no channel (spec.upgrades is unset); nothing to approve"
        )));
    };
    let version = match version {
        Some(v) => v.to_string(),
        None => inst
            .status
            .as_ref()
            .and_then(|s| s.upgrades.as_ref())
            .and_then(|u| u.available.clone())
            .ok_or_else(|| {
                CliError::Other(format!(
                    "instance {instance} has no available version yet (status.upgrades.available); \
                     name the version to approve"
                ))
            })?,
    };
    kudo_repo::Version::parse(&version)
        .map_err(|e| CliError::Usage(format!("{version:?} is not a version: {e}")))?;
    let patch = serde_json::json!({"spec": {"upgrades": {"approved": version}}});
    kube::Api::<kudo_api::Instance>::namespaced(ctx.client.clone(), &ctx.namespace)
        .patch(
            instance,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .map_err(|e| CliError::api(format!("approving {version} for instance {instance}"), e))?;
    let note = match policy.approval {
        kudo_api::upgrades::Approval::Manual => "",
        kudo_api::upgrades::Approval::Automatic => {
            " (approval is Automatic: the Instance moves without approvals)"
        }
    };
    outln!(
        "instance {}/{instance}: {version} approved{note}",
        ctx.namespace
    );
    Ok(())
}

/// For an Instance that tracks a channel and runs a version the manager
/// moved it to (spec still names the one before): that version, which the
/// rollback leaves (`spec.upgrades.rolledBackFrom`).
fn left_channel_version(instance: &kudo_api::Instance, target_ov: &str) -> Option<String> {
    instance.spec.upgrades.as_ref()?;
    let moved = instance.status.as_ref()?.upgrades.as_ref()?;
    moved
        .operator_version
        .as_deref()
        .is_some_and(|ov| ov != target_ov)
        .then(|| moved.installed.clone())
        .flatten()
}

/// `rollback --instance I`.
pub async fn rollback(ctx: &KubeContext, args: &RollbackArgs) -> Result<()> {
    let before = get_instance(ctx, &args.instance).await?;
    let baseline = Baseline::from_status(before.status.as_ref(), None);
    let mut target_ov = String::new();
    let mut unchanged = false;
    let mut discarded = Vec::new();
    let rolled = read_modify_write(ctx, &args.instance, "rolling back", |instance| {
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
        let left = left_channel_version(instance, &target.operator_version);
        unchanged = instance.spec.operator_version.name.as_deref()
            == Some(target.operator_version.as_str())
            && current == target.parameters
            && left.is_none();
        target_ov = target.operator_version.clone();
        discarded = never_applied(instance, &target);
        let rv = instance.resource_version().unwrap_or_default();
        let mut patch = patch::rollback(&rv, &current, &target);
        if let Some(version) = left {
            patch["spec"]["upgrades"] = serde_json::json!({ "rolledBackFrom": version });
        }
        Ok(patch)
    })
    .await?;
    if unchanged {
        outln!(
            "instance {}/{} already runs operatorversion {target_ov} with the parameters of its last successful plan; nothing to roll back",
            ctx.namespace,
            args.instance
        );
        return Ok(());
    }
    outln!(
        "instance {}/{} rolled back to operatorversion {target_ov} and the parameters of its last successful plan",
        ctx.namespace,
        args.instance
    );
    if !discarded.is_empty() {
        errln!(
            "Note: the rollback discarded changes that had not run yet: {}; make them again \
             after the rollback if they are still wanted",
            kudo_api::message::listed(&discarded)
        );
    }
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &args.instance),
            &baseline.seen_at(rolled.metadata.generation),
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_value_for_an_immutable_parameter_is_echoed_as_a_prefix() {
        let ov: OperatorVersion = serde_json::from_value(serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "OperatorVersion",
            "metadata": {"name": "op-0.1.0"},
            "spec": {"parameters": [{"name": "DISK", "immutable": true, "default": "1Gi"}]}
        }))
        .unwrap();
        let instance: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": "i"},
            "spec": {"operatorVersion": {"name": "op-0.1.0"}}
        }))
        .unwrap();
        let changes = BTreeMap::from([("DISK".to_string(), "x".repeat(5 * 1024 * 1024))]);
        let err = check_immutable(&ov, &instance, &changes)
            .unwrap_err()
            .to_string();
        assert!(err.len() < 300, "{} bytes", err.len());
        assert!(err.contains("from \"1Gi\" to \"xxxx"), "{err}");
        assert!(err.contains("(5242880 bytes)"), "{err}");
    }

    #[test]
    fn a_rollback_of_an_instance_a_channel_moved_names_the_version_it_leaves() {
        let tracked = |moved_to: Option<&str>| -> Instance {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
                "metadata": {"name": "web"},
                "spec": {"operatorVersion": {"name": "op-0.2.0"}, "upgrades": {"repository": "r"}},
                "status": {"upgrades": {"installed": "0.3.0", "operatorVersion": moved_to}}
            }))
            .unwrap()
        };
        assert_eq!(
            left_channel_version(&tracked(Some("op-0.3.0")), "op-0.2.0").as_deref(),
            Some("0.3.0")
        );
        assert_eq!(left_channel_version(&tracked(None), "op-0.2.0"), None);
        assert_eq!(
            left_channel_version(&tracked(Some("op-0.2.0")), "op-0.2.0"),
            None,
            "already on the target"
        );
    }
}
