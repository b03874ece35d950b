//! `plan status|history|trigger` and the plan operations.

use std::io::IsTerminal;
use std::time::Instant;

use kube::ResourceExt;
use kudo_api::{Instance, OperatorVersion, PlanAction, PlanOperation};

use super::{append_operation, get_instance, get_operator_version, instances, merge_patch, new_id};
use crate::cli::{
    PlanCommand, PlanHistoryArgs, PlanOperationArgs, PlanStatusArgs, PlanTriggerArgs, WaitArgs,
};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::output::format_data;
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
            eprintln!("warning: {e}");
            None
        }
    }
}

/// `plan status`.
pub async fn status(ctx: &KubeContext, args: &PlanStatusArgs) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    if let Some(format) = args.output.output {
        print!(
            "{}",
            format_data(&instance.status.clone().unwrap_or_default(), format)?
        );
        return Ok(());
    }
    let ov = operator_version_if_any(ctx, &instance).await;
    let colour = stdout_colours();
    if !args.wait {
        print!(
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
                print!("\x1b[2J\x1b[H");
            }
            print!("{text}");
            if terminal {
                println!("(waiting, {}s elapsed)", started.elapsed().as_secs());
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
pub async fn history(ctx: &KubeContext, args: &PlanHistoryArgs) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    let status = instance.status.clone().unwrap_or_default();
    if let Some(format) = args.output.output {
        print!("{}", format_data(&history::runs(&status), format)?);
        return Ok(());
    }
    print!(
        "{}",
        history::render(&args.instance, &ctx.namespace, &status)
    );
    Ok(())
}

/// A plan name the OperatorVersion does not define is refused locally with
/// the list of plans it does define.
fn check_plan_exists(ov: &OperatorVersion, plan: &str) -> Result<()> {
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

/// `plan trigger --name P`.
pub async fn trigger(ctx: &KubeContext, args: &PlanTriggerArgs) -> Result<()> {
    let instance = get_instance(ctx, &args.instance).await?;
    let ov = get_operator_version(ctx, &instance).await?;
    check_plan_exists(&ov, &args.name)?;
    let baseline = Baseline::from_status(instance.status.as_ref(), Some(args.name.clone()));
    let uid = new_id();
    merge_patch(
        ctx,
        &args.instance,
        &patch::trigger(&args.name, &uid, args.break_glass),
        &format!("triggering plan {}", args.name),
    )
    .await?;
    println!(
        "triggered plan {} for instance {}/{}{}",
        args.name,
        ctx.namespace,
        args.instance,
        if args.break_glass {
            " (break-glass: maintenance windows ignored)"
        } else {
            ""
        }
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

fn split_operation(cmd: PlanCommand) -> Option<(PlanAction, PlanOperationArgs, Option<WaitArgs>)> {
    Some(match cmd {
        PlanCommand::Pause(t) => (PlanAction::Pause, t, None),
        PlanCommand::Cancel(t) => (PlanAction::Cancel, t, None),
        PlanCommand::Resume(a) => (PlanAction::Resume, a.target, Some(a.wait)),
        PlanCommand::Continue(a) => (PlanAction::Continue, a.target, Some(a.wait)),
        PlanCommand::ForceComplete(a) => (PlanAction::ForceComplete, a.target, Some(a.wait)),
        PlanCommand::Restart(a) => (PlanAction::Restart, a.target, Some(a.wait)),
        PlanCommand::Status(_) | PlanCommand::History(_) | PlanCommand::Trigger(_) => return None,
    })
}

/// Checks the target plan/phase/step against the OperatorVersion so typos
/// are caught before the webhook sees them.
fn check_target(ov: &OperatorVersion, target: &PlanOperationArgs) -> Result<()> {
    let Some(plan_name) = &target.plan else {
        return Ok(());
    };
    check_plan_exists(ov, plan_name)?;
    let Some(plan) = ov.spec.plan(plan_name) else {
        return Ok(());
    };
    let Some(phase_name) = &target.phase else {
        return Ok(());
    };
    let Some(phase) = plan.phases.iter().find(|p| &p.name == phase_name) else {
        let known: Vec<&str> = plan.phases.iter().map(|p| p.name.as_str()).collect();
        return Err(CliError::NotFound(format!(
            "plan {plan_name} has no phase {phase_name}; its phases are: {}",
            known.join(", ")
        )));
    };
    if let Some(step_name) = &target.step
        && !phase.steps.iter().any(|s| &s.name == step_name)
    {
        let known: Vec<&str> = phase.steps.iter().map(|s| s.name.as_str()).collect();
        return Err(CliError::NotFound(format!(
            "phase {phase_name} of plan {plan_name} has no step {step_name}; its steps are: {}",
            known.join(", ")
        )));
    }
    Ok(())
}

fn describe_target(target: &PlanOperationArgs, active: Option<&str>) -> String {
    let plan = target
        .plan
        .as_deref()
        .or(active)
        .map_or_else(|| "the active plan".to_string(), |p| format!("plan {p}"));
    match (&target.phase, &target.step) {
        (Some(phase), Some(step)) => format!("step {phase}/{step} of {plan}"),
        (Some(phase), None) => format!("phase {phase} of {plan}"),
        _ => plan,
    }
}

/// `plan pause|resume|continue|force-complete|restart|cancel`.
pub async fn operation(ctx: &KubeContext, cmd: PlanCommand) -> Result<()> {
    let Some((action, target, wait)) = split_operation(cmd) else {
        return Ok(());
    };
    let instance = get_instance(ctx, &target.instance).await?;
    if let Ok(ov) = get_operator_version(ctx, &instance).await {
        check_target(&ov, &target)?;
    }
    let active = instance.status.as_ref().and_then(active_plan_name);
    let id = new_id();
    let operation = PlanOperation {
        id: id.clone(),
        action,
        plan: target.plan.clone(),
        phase: target.phase.clone(),
        step: target.step.clone(),
        reason: target.reason.clone(),
        requested_by: ctx.user.clone(),
        ..PlanOperation::default()
    };
    append_operation(ctx, &target.instance, &operation).await?;
    println!(
        "{action} requested for {} of instance {}/{} (operation {id})",
        describe_target(&target, active.as_deref()),
        ctx.namespace,
        target.instance
    );
    if let Some(wait) = wait.filter(|w| w.wait) {
        let plan = target.plan.clone().or(active);
        let baseline = Baseline {
            plan,
            ..Baseline::default()
        };
        wait_for_operation(ctx, &target.instance, &id, wait).await?;
        wait_for_plan(
            &instances(ctx),
            &target.instance,
            &baseline,
            wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

/// Waits until the manager records the operation, then prints its result.
async fn wait_for_operation(ctx: &KubeContext, name: &str, id: &str, wait: WaitArgs) -> Result<()> {
    let started = Instant::now();
    loop {
        let instance = get_instance(ctx, name).await?;
        if let Some(record) = instance
            .status
            .as_ref()
            .and_then(|s| s.operations.iter().find(|o| o.id == id))
        {
            if !record.result.is_empty() {
                eprintln!("manager applied {}: {}", record.action, record.result);
            }
            return Ok(());
        }
        if started.elapsed() >= wait.wait_timeout {
            return Err(CliError::Timeout(format!(
                "timed out after {}s waiting for the manager to apply operation {id} on instance {name}; is kudo-manager running?",
                wait.wait_timeout.as_secs()
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use kudo_api::{OperatorVersionSpec, Phase, Plan, Step};

    fn ov() -> OperatorVersion {
        OperatorVersion::new(
            "app-1.0.0",
            OperatorVersionSpec {
                plans: BTreeMap::from([(
                    "deploy".to_string(),
                    Plan {
                        strategy: None,
                        phases: vec![Phase {
                            name: "main".into(),
                            strategy: None,
                            steps: vec![Step {
                                name: "web".into(),
                                tasks: vec![],
                            }],
                        }],
                    },
                )]),
                ..Default::default()
            },
        )
    }

    fn target(plan: Option<&str>, phase: Option<&str>, step: Option<&str>) -> PlanOperationArgs {
        PlanOperationArgs {
            instance: "app".into(),
            plan: plan.map(Into::into),
            phase: phase.map(Into::into),
            step: step.map(Into::into),
            reason: None,
        }
    }

    #[test]
    fn unknown_step_is_refused_listing_the_known_ones() {
        let err =
            check_target(&ov(), &target(Some("deploy"), Some("main"), Some("db"))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "phase main of plan deploy has no step db; its steps are: web"
        );
        assert!(check_target(&ov(), &target(Some("deploy"), Some("main"), Some("web"))).is_ok());
    }

    #[test]
    fn unknown_plan_is_refused_listing_the_known_ones() {
        let err = check_plan_exists(&ov(), "backup").unwrap_err();
        assert!(err.to_string().contains("its plans are: deploy"), "{err}");
    }

    #[test]
    fn target_description_defaults_to_the_active_plan() {
        assert_eq!(
            describe_target(&target(None, None, None), Some("deploy")),
            "plan deploy"
        );
        assert_eq!(
            describe_target(&target(None, Some("main"), Some("web")), None),
            "step main/web of the active plan"
        );
    }
}
