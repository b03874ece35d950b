//! `plan status|history|trigger` and the plan operations.

use std::io::IsTerminal;
use std::time::Instant;

use kube::ResourceExt;
use kudo_api::{Instance, OperatorVersion};

use super::{get_instance, get_operator_version, instances, merge_patch, new_id};
use crate::cli::{PlanHistoryArgs, PlanStatusArgs, PlanTriggerArgs};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::output::{DataFormat, format_data};
use crate::plan_tree::{self, active_plan_name};
use crate::style::stdout_colours;
use crate::wait::{Baseline, POLL_INTERVAL, wait_for_plan};
use crate::{history, patch};

/// The OperatorVersion of an Instance, or `None` (with a note on stderr)
/// when it cannot be read: status is still worth printing.
async fn operator_version_if_any(
    ctx: &KubeContext,
    instance: &Instance,
) -> Option<OperatorVersion> {
    match get_operator_version(ctx, instance).await {
        Ok(ov) => Some(ov),
        Err(e) => {
            errln!("warning: {e}");
            None
        }
    }
}

/// `plan status`.
pub async fn status(
    ctx: &KubeContext,
    args: &PlanStatusArgs,
    format: Option<DataFormat>,
) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    if let Some(format) = format {
        out!(
            "{}",
            format_data(&instance.status.clone().unwrap_or_default(), format)?
        );
        return Ok(());
    }
    let ov = operator_version_if_any(ctx, &instance).await;
    let colour = stdout_colours();
    if !args.wait {
        out!(
            "{}",
            plan_tree::render(&instance, ov.as_ref().map(|o| &o.spec), colour)
        );
        return Ok(());
    }
    // --wait: redraw until the active plan is terminal.
    let terminal = std::io::stdout().is_terminal();
    let started = Instant::now();
    let mut last = String::new();
    let mut instance = instance;
    loop {
        let text = plan_tree::render(&instance, ov.as_ref().map(|o| &o.spec), colour);
        if text != last {
            if terminal {
                out!("\x1b[2J\x1b[H");
            }
            out!("{text}");
            if terminal {
                outln!("(waiting, {}s elapsed)", started.elapsed().as_secs());
            }
            last = text;
        }
        let status = instance.status.clone().unwrap_or_default();
        if let Some(active) = active_plan_name(&status)
            && let Some(plan) = status.plan_status.get(&active)
        {
            match plan.status() {
                kudo_api::ExecutionStatus::Complete => return Ok(()),
                kudo_api::ExecutionStatus::FatalError => {
                    let baseline = Baseline {
                        plan: Some(active.clone()),
                        ..Baseline::default()
                    };
                    if let crate::wait::Progress::Failed(message) =
                        crate::wait::assess(Some(&status), &baseline)
                    {
                        return Err(CliError::PlanFailed(message));
                    }
                    return Err(CliError::PlanFailed(format!(
                        "plan {active} failed (FATAL_ERROR)"
                    )));
                }
                _ => {}
            }
        }
        if started.elapsed() >= args.wait_timeout {
            return Err(CliError::Timeout(format!(
                "timed out after {}s waiting for the active plan of instance {} to finish",
                args.wait_timeout.as_secs(),
                args.instance
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
        instance = get_instance(ctx, &args.instance).await?;
    }
}

/// `plan history`.
pub async fn history(
    ctx: &KubeContext,
    args: &PlanHistoryArgs,
    format: Option<DataFormat>,
) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    let status = instance.status.clone().unwrap_or_default();
    if let Some(format) = format {
        out!("{}", format_data(&history::runs(&status), format)?);
        return Ok(());
    }
    out!(
        "{}",
        history::render(&args.instance, &ctx.namespace, &status)
    );
    Ok(())
}

/// A plan name the OperatorVersion does not define is refused locally with
/// the list of plans it does define.
pub(super) fn check_plan_exists(ov: &OperatorVersion, plan: &str) -> Result<()> {
    if ov.spec.plans.contains_key(plan) {
        return Ok(());
    }
    let known: Vec<&str> = ov.spec.plans.keys().map(String::as_str).collect();
    Err(CliError::NotFound(format!(
        "plan {plan} is not defined by operatorversion {}; its plans are: {}",
        ov.name_any(),
        known.join(", ")
    )))
}

/// The values of a run must be declared parameters with valid values (the
/// webhook checks the same; this answers before anything is written).
pub(super) fn check_execution_values(
    ov: &OperatorVersion,
    instance: &Instance,
    plan: &str,
    values: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    kudo_engine::execution::check(
        &ov.spec,
        plan,
        kudo_engine::select::spec_params(&instance.spec),
        values,
    )
    .map_err(|problem| {
        CliError::Parameters(vec![format!(
            "operatorversion {}: {problem}",
            ov.name_any()
        )])
    })
}

/// `plan trigger --name P`.
pub async fn trigger(ctx: &KubeContext, args: &PlanTriggerArgs) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    let values = crate::params::collect(&(&args.params).into())?;
    let ov = get_operator_version(ctx, &instance).await?;
    check_plan_exists(&ov, &args.name)?;
    check_execution_values(&ov, &instance, &args.name, &values)?;
    let baseline = Baseline::from_status(instance.status.as_ref(), Some(args.name.clone()));
    let uid = new_id();
    let triggered = merge_patch(
        ctx,
        &args.instance,
        &patch::trigger(&args.name, &uid, args.break_glass, &values),
        &format!("triggering plan {}", args.name),
    )
    .await?;
    outln!(
        "triggered plan {} for instance {}/{}{}{}",
        args.name,
        ctx.namespace,
        args.instance,
        if values.is_empty() {
            String::new()
        } else {
            format!(
                " with {} for this run only",
                kudo_api::message::listed(&values.keys().collect::<Vec<_>>())
            )
        },
        if args.break_glass {
            " (break-glass: maintenance windows ignored)"
        } else {
            ""
        }
    );
    if args.wait.wait {
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &args.instance),
            &baseline.seen_at(triggered.metadata.generation),
            args.wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}
