//! Warnings of an allowed change: why the plan it asks for will not run
//! at once (paused, suppressed, outside a window), with the command that
//! changes that. The user sees them where the change was made.

use jiff::Timestamp;
use kudo_api::hint::KudoCommand;

use super::{InstanceName, StatusFacts, Subject};
use crate::plan::{suppression, windows};

/// A pause of `plan` holds its next run too: the run starts and waits.
pub(super) fn paused(
    name: InstanceName<'_>,
    status: &StatusFacts,
    plan: &str,
    warnings: &mut Vec<String>,
) {
    if status.plan_status.get(plan).and_then(|p| p.paused) != Some(true) {
        return;
    }
    warnings.push(format!(
        "plan {plan:?} is paused: it starts, but runs no step until resumed with {}",
        KudoCommand::new("plan resume", name.name)
            .flag("--plan", plan)
            .namespace(name.namespace)
    ));
}

/// Suppressions and the Instance's maintenance windows of the kind `plan`
/// waits for (downtime or not) that hold it now (the manager's default
/// windows are not known here).
#[allow(clippy::too_many_arguments)]
pub(super) fn time(
    new: &Subject,
    status: &StatusFacts,
    plan: &str,
    manual: bool,
    downtime: bool,
    now: Timestamp,
    warnings: &mut Vec<String>,
) {
    let name = InstanceName::of(new);
    let command = |verb| KudoCommand::new(verb, name.name).namespace(name.namespace);
    if let Some(s) = suppression::active_manual(&new.spec.suppressions, now) {
        warnings.push(format!(
            "plan {plan:?} will wait: the Instance is {}; end it with {}",
            suppression::describe_manual(s),
            command("suppress clear")
        ));
        return;
    }
    if let Some(a) = suppression::active_auto(status.auto_suppression.as_ref(), now) {
        let rollback = status.last_successful.as_ref().is_some_and(|ls| {
            ls.operator_version == new.ov_name() && ls.parameters == *new.params()
        });
        if rollback {
            warnings.push(format!(
                "this is a rollback to the last successful configuration; plan {plan:?} runs despite the automatic suppression"
            ));
        } else if !manual {
            warnings.push(format!(
                "plan {plan:?} will wait: the Instance is {}",
                suppression::describe_auto(a, (name.namespace, name.name))
            ));
        }
    }
    let break_glass = manual
        && new
            .spec
            .plan_execution
            .as_ref()
            .is_some_and(|p| p.break_glass == Some(true));
    let windows = windows::Windows::at(&new.spec.maintenance_windows, &[], now);
    let (kind, state) = windows.for_plan(downtime);
    if !break_glass && let Ok(windows::WindowState::Closed { opens_at }) = state {
        // The kind is named only where both kinds are in use.
        let kind = if windows.downtime.is_some() {
            format!("{kind} ")
        } else {
            String::new()
        };
        let now_instead = command("plan trigger")
            .flag("--name", plan)
            .switch("--break-glass");
        warnings.push(match opens_at {
            Some(at) => format!(
                "plan {plan:?} will wait for the {kind}maintenance window opening at {at}; \
                 to run it now: {now_instead}"
            ),
            None => format!(
                "plan {plan:?} will wait: no {kind}maintenance window opens in the next two weeks; \
                 to run it now: {now_instead}"
            ),
        });
    }
}

/// A new run whose values are those of the run before it: what a merge
/// patch of only `planName` and `uid` leaves behind. Allowed (running again
/// with the same values is legitimate), but said, with how to run without.
pub(super) fn inherited_execution_values(old: &Subject, new: &Subject, warnings: &mut Vec<String>) {
    let values = |s: &Subject| {
        s.spec
            .plan_execution
            .as_ref()
            .and_then(|pe| pe.parameters.as_ref())
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let Some(given) = values(new) else {
        return;
    };
    if values(old).as_ref() != Some(&given) {
        return;
    }
    let old_uid = old
        .spec
        .plan_execution
        .as_ref()
        .and_then(|pe| pe.uid.as_deref())
        .unwrap_or_default();
    warnings.push(format!(
        "spec.planExecution.parameters are the values the run of uid {old_uid} was given \
         (a merge patch of planName and uid keeps them); this run gets them too. To run \
         without them set spec.planExecution.parameters to null (kubectl kudo plan trigger does)"
    ));
}
