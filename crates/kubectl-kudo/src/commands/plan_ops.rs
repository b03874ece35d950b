//! `plan pause|resume|continue|force-complete|restart|cancel`: each checks
//! its target against the OperatorVersion and the Instance's status first,
//! says what will happen, and appends a plan operation.

use std::time::Instant;

use kudo_api::hint::KudoCommand;
use kudo_api::{BlockerKind, Instance, InstanceStatus, OperatorVersion, PlanAction, PlanOperation};

use super::plan::check_plan_exists;
use super::{append_operation, get_instance, get_operator_version, instances, new_id};
use crate::cli::{PlanCommand, PlanOperationArgs, WaitArgs};
use crate::context::KubeContext;
use crate::error::{CliError, Result};
use crate::plan_tree::active_plan_name;
use crate::wait::{Baseline, POLL_INTERVAL, wait_for_plan};

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

/// `continue` without `--phase`: the canary phase of the running plan (or
/// of `--plan`) that waits for an approval, or else the first one not
/// approved twice yet (an approval may come before the phase is reached).
/// None, or several waiting, is an error that says which there are.
pub fn waiting_canary_phase(
    subject: &Instance,
    ov: Option<&OperatorVersion>,
    plan: Option<&str>,
    namespace: &str,
) -> Result<(String, String)> {
    let instance = subject.metadata.name.as_deref().unwrap_or_default();
    let status = subject.status.clone().unwrap_or_default();
    let mut waiting: Vec<(String, String)> = status
        .blockers
        .iter()
        .filter(|b| b.kind == BlockerKind::CanaryApproval)
        .filter(|b| plan.is_none_or(|p| b.plan.as_deref() == Some(p)))
        .filter_map(|b| Some((b.plan.clone()?, b.phase.clone()?)))
        .collect();
    waiting.dedup();
    if waiting.is_empty()
        && let Some(ahead) = canary_phase_ahead(subject, ov, plan)
    {
        waiting.push(ahead);
    }
    match waiting.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CliError::Other(format!(
            "no canary phase of {} waits for an approval, so there is nothing to continue; \
             `{}` shows where the plan stands",
            plan.map_or_else(|| format!("instance {instance}"), |p| format!("plan {p}")),
            KudoCommand::new("plan status", instance).namespace(namespace)
        ))),
        several => Err(CliError::Usage(format!(
            "several canary phases wait for an approval ({}); name one with --plan and --phase",
            several
                .iter()
                .map(|(plan, phase)| format!("phase {phase} of plan {plan}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The first canary phase, not COMPLETE and approved fewer than twice, of
/// the plan that runs, or else of the one spec asks for next (an install
/// or update the manager has not started yet): an approval given early
/// counts when the phase is reached.
fn canary_phase_ahead(
    instance: &Instance,
    ov: Option<&OperatorVersion>,
    plan: Option<&str>,
) -> Option<(String, String)> {
    let ov = ov?;
    let status = instance.status.clone().unwrap_or_default();
    let running = active_plan_name(&status).filter(|p| {
        status
            .plan_status
            .get(p)
            .is_some_and(|s| s.status().is_running())
    });
    let next = || {
        let identity = kudo_engine::admission::Identity::from(&instance.metadata);
        let consumed = kudo_engine::select::Consumed::from(&status);
        match kudo_engine::select::select(&identity, &instance.spec, ov, consumed) {
            kudo_engine::select::Selection::Start(req) => Some(req.plan),
            _ => None,
        }
    };
    let name = plan.map(str::to_string).or(running).or_else(next)?;
    let ps = status.plan_status.get(&name);
    ov.spec
        .plan(&name)?
        .phases
        .iter()
        .filter(|d| {
            kudo_api::Strategy::parse(d.strategy.as_deref())
                .is_ok_and(kudo_api::Strategy::is_canary)
        })
        .find(|d| {
            ps.and_then(|p| p.phase(&d.name)).is_none_or(|p| {
                p.status() != kudo_api::ExecutionStatus::Complete
                    && p.canary_approvals.unwrap_or(0) < 2
            })
        })
        .map(|d| (name.clone(), d.name.clone()))
}

/// The newest pause or resume of `plan` (and `phase`) in spec that the
/// manager has not applied yet: it decides whether the plan will be paused.
pub fn pending_pause(instance: &Instance, plan: &str, phase: Option<&str>) -> Option<PlanAction> {
    let ops = &instance.spec.plan_operations;
    let status = instance.status.as_ref();
    let mark = status
        .and_then(|s| s.operations_mark.as_deref())
        .and_then(|m| ops.iter().position(|o| o.id == m));
    ops.iter()
        .enumerate()
        .rev()
        .find(|(_, o)| {
            matches!(o.action, PlanAction::Pause | PlanAction::Resume)
                && o.phase.as_deref() == phase
                && o.plan.as_deref().is_none_or(|p| p == plan)
        })
        .filter(|(i, o)| {
            mark.is_none_or(|m| *i > m)
                && !status.is_some_and(|s| s.operations.iter().any(|r| r.id == o.id))
        })
        .map(|(_, o)| o.action)
}

/// What a pause or resume will do to a plan as it stands (with a pause or
/// resume still on its way to the manager, `pending`), or why there is
/// nothing to do (`Err`: nothing is written).
fn pause_effect(
    action: PlanAction,
    status: &InstanceStatus,
    pending: Option<PlanAction>,
    target: &PlanOperationArgs,
    plan: &str,
    command: &KudoCommand<'_>,
) -> std::result::Result<String, String> {
    let ps = status.plan_status.get(plan);
    let phase = target
        .phase
        .as_deref()
        .map(|name| ps.and_then(|p| p.phase(name)));
    let paused = match (pending, phase) {
        (Some(pending), _) => pending == PlanAction::Pause,
        (None, Some(phase)) => phase.and_then(|p| p.paused) == Some(true),
        (None, None) => ps.and_then(|p| p.paused) == Some(true),
    };
    let what = match &target.phase {
        Some(phase) => format!("phase {phase} of plan {plan}"),
        None => format!("plan {plan}"),
    };
    let running = active_plan_name(status).as_deref() == Some(plan)
        && ps.is_some_and(|p| p.status().is_running());
    match (action, paused, running) {
        (PlanAction::Pause, true, _) => Err(format!("{what} is paused already")),
        (PlanAction::Pause, false, true) => Ok(format!(
            "{what} pauses: steps running now finish, no new step starts until `{command}`"
        )),
        (PlanAction::Pause, false, false) => Ok(format!(
            "{what} is not running: its next run starts paused and runs no step until `{command}`"
        )),
        (_, false, _) => Err(format!("{what} is not paused; nothing to resume")),
        (_, true, _) => Ok(format!("{what} goes on")),
    }
}

/// `plan pause|resume|continue|force-complete|restart|cancel`.
pub async fn operation(ctx: &KubeContext, cmd: PlanCommand) -> Result<()> {
    let Some((action, mut target, wait)) = split_operation(cmd) else {
        return Ok(());
    };
    if action == PlanAction::ForceComplete && target.phase.is_none() {
        return Err(CliError::Usage(
            "force-complete needs --phase (and --step for one step): it completes steps, \
             never a whole plan"
                .into(),
        ));
    }
    let instance = get_instance(ctx, &target.instance).await?;
    let status = instance.status.clone().unwrap_or_default();
    let ov = get_operator_version(ctx, &instance).await.ok();
    if action == PlanAction::Continue && target.phase.is_none() {
        let (plan, phase) = waiting_canary_phase(
            &instance,
            ov.as_ref(),
            target.plan.as_deref(),
            &ctx.namespace,
        )?;
        target.plan = Some(plan);
        target.phase = Some(phase);
    }
    if let Some(ov) = &ov {
        check_target(ov, &target)?;
    }
    let active = active_plan_name(&status);
    let note = pause_note(ctx, action, &instance, &target, active.as_deref())?;
    let Some(note) = note else {
        return Ok(());
    };
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
    outln!(
        "{action} requested for {} of instance {}/{} (operation {id})",
        describe_target(&target, active.as_deref()),
        ctx.namespace,
        target.instance
    );
    if !note.is_empty() {
        outln!("{note}");
    }
    if let Some(wait) = wait.filter(|w| w.wait) {
        let plan = target.plan.clone().or(active);
        let baseline = Baseline {
            plan,
            ..Baseline::default()
        };
        wait_for_operation(ctx, &target.instance, &id, wait).await?;
        wait_for_plan(
            &instances(ctx),
            (&ctx.namespace, &target.instance),
            &baseline,
            wait.wait_timeout,
        )
        .await?;
    }
    Ok(())
}

/// What a pause or resume will do (empty for other actions); `None` when
/// there is nothing to do, which is said on stdout.
fn pause_note(
    ctx: &KubeContext,
    action: PlanAction,
    instance: &Instance,
    target: &PlanOperationArgs,
    active: Option<&str>,
) -> Result<Option<String>> {
    let status = instance.status.clone().unwrap_or_default();
    if !matches!(action, PlanAction::Pause | PlanAction::Resume) {
        return Ok(Some(String::new()));
    }
    let Some(plan) = target.plan.as_deref().or(active) else {
        return Err(CliError::Usage(format!(
            "instance {} has run no plan yet; name the plan to {action} with --plan",
            target.instance
        )));
    };
    let resume = KudoCommand::new("plan resume", &target.instance)
        .flag("--plan", plan)
        .flag_if("--phase", target.phase.as_deref())
        .namespace(&ctx.namespace);
    let pending = pending_pause(instance, plan, target.phase.as_deref());
    match pause_effect(action, &status, pending, target, plan, &resume) {
        Ok(note) => Ok(Some(note)),
        Err(nothing) => {
            outln!("{nothing}: nothing changed");
            Ok(None)
        }
    }
}

/// Waits until the manager records the operation, then prints its result.
async fn wait_for_operation(ctx: &KubeContext, name: &str, id: &str, wait: WaitArgs) -> Result<()> {
    let started = Instant::now();
    loop {
        let instance: Instance = get_instance(ctx, name).await?;
        if let Some(record) = instance
            .status
            .as_ref()
            .and_then(|s| s.operations.iter().find(|o| o.id == id))
        {
            if !record.result.is_empty() {
                errln!("manager applied {}: {}", record.action, record.result);
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
#[path = "plan_ops_tests.rs"]
mod tests;
