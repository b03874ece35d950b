//! Admission rules for Instance changes: the validating webhook's logic.
//!
//! KUDO's webhook both validated and *mutated* (it wrote
//! `spec.planExecution`); kudo-rs only validates, and the controller derives
//! the plan to run from spec vs status ([`crate::plan::select`]) with the very same
//! functions used here. Rules, in order (first denial wins):
//!
//! 1. The OperatorVersion must exist (create and update), in the
//!    Instance's namespace or in one that shares it ([`crate::plan::tenancy`]).
//! 2. Create: a name of at most 63 characters (a label value); the
//!    OperatorVersion needs a `deploy` plan; parameters must be defined,
//!    valid and present when required.
//! 3. While being deleted: no parameter change, no upgrade, no manual plan
//!    (cleanup is started by the controller); plan operations are allowed.
//! 4. Unknown parameters, invalid values, changed immutable parameters (and
//!    KEP-30's upgrade rules) are refused.
//! 5. A manual `cleanup`, a manual plan that does not exist, or a
//!    `planName` change without a new `uid` are refused; so are
//!    `planExecution.parameters` without a plan and uid, changed without a
//!    new uid, or not declared and valid (type, enum, required).
//! 6. Several changes at once are refused when they would start different
//!    plans: upgrade + manual plan, upgrade + parameters triggering another
//!    plan than the upgrade's, parameters + manual plan, parameters
//!    triggering several plans.
//! 7. While a plan is running or a request is still pending (not yet
//!    consumed by the controller), a request for a *different* plan is
//!    refused with a message naming the plan, phase and step in the way;
//!    a request for the *same* plan is allowed and restarts it (KUDO's way
//!    out of a stuck deploy). Plan operations are always allowed, so a
//!    running plan can be paused, cancelled or force-completed.
//! 8. Plan operations must name an existing plan, phase and step, with
//!    ids used once; `continue` needs a canary phase, `forceComplete` a phase.
//!    New ones go at the end of the list and only the oldest may be dropped,
//!    so the manager's mark of what it carried out stays sound.
//! 9. Maintenance windows must parse; suppressions need a reason.
//!
//! Time-dependent warnings (suppressed, outside a window) need `now`.
//!
//! The rules read one model, [`Subject`]: the spec whole, and of the
//! metadata and the old object's status only what they read. The webhook
//! decodes it straight from the request; the controller and tests convert
//! an [`Instance`](kudo_api::Instance) with `Subject::from`.

use std::fmt;

use jiff::Timestamp;
use kudo_api::OperatorVersion;
use kudo_api::hint::KudoCommand;
use kudo_api::names::{CLEANUP_PLAN, DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN};

mod limits;
mod parameter_checks;
mod requests;
mod spec_checks;
mod warnings;

pub use limits::{MAX_INSTANCE_NAME, MAX_PARAMETER_BYTES, MAX_PLAN_OPERATIONS, MAX_WINDOWS};
use limits::{check_counts, check_name_length, check_parameter_bytes};
use parameter_checks::check_parameters;
use requests::{Blocking, Request, in_the_way, new_manual_request};
use spec_checks::{check_operations, check_windows_and_suppressions};

use crate::plan::params;

pub use crate::model::subject::{Identity, PhaseFacts, PlanFacts, StatusFacts, StepFacts, Subject};

/// The webhook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The change may go through, possibly with warnings shown to the user.
    Allowed {
        /// Warnings (e.g. the change waits for a window).
        warnings: Vec<String>,
    },
    /// The change is refused.
    Denied {
        /// Why, naming what is in the way and what to do.
        message: String,
    },
}

impl Verdict {
    /// Whether the change is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed { .. })
    }
}

/// Reviews a create (`old == None`), update or delete (the old object passed
/// as `new` with `deletionTimestamp` set) of an Instance.
///
/// `new_ov == None` means the OperatorVersion `new` names was not found.
/// Of `old`, the status is read; of `new`, only metadata and spec. With
/// `now`, warnings say when the change will wait for a suppression or a
/// maintenance window; without it they are left out.
pub fn review(
    old: Option<&Subject>,
    new: &Subject,
    old_ov: Option<&OperatorVersion>,
    new_ov: Option<&OperatorVersion>,
    now: Option<Timestamp>,
) -> Verdict {
    let mut warnings = Vec::new();
    match check(old, new, old_ov, new_ov, now, &mut warnings) {
        Ok(()) => Verdict::Allowed { warnings },
        Err(message) => Verdict::Denied { message },
    }
}

/// `namespace/name` of an Instance in messages; written only when a
/// message is built (most reviews print none).
#[derive(Clone, Copy)]
struct InstanceName<'v> {
    namespace: &'v str,
    name: &'v str,
}

impl<'v> InstanceName<'v> {
    fn of(instance: &'v Subject) -> Self {
        Self {
            namespace: instance.metadata.namespace.as_deref().unwrap_or("default"),
            name: short_name(instance),
        }
    }
}

impl fmt::Display for InstanceName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn short_name(i: &Subject) -> &str {
    i.metadata.name.as_deref().unwrap_or("")
}

fn check(
    old: Option<&Subject>,
    new: &Subject,
    old_ov: Option<&OperatorVersion>,
    new_ov: Option<&OperatorVersion>,
    now: Option<Timestamp>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let ov_name = new.ov_name();
    let deletion_review = new.metadata.deletion_timestamp.is_some()
        && old.is_none_or(|o| o.metadata.deletion_timestamp.is_none() && o.spec == new.spec);
    if deletion_review {
        return Ok(());
    }
    let name = InstanceName::of(new);
    if old.is_none() {
        check_name_length(name)?;
    }
    crate::plan::tenancy::check_ov_reference(name.namespace, &new.spec.operator_version, new_ov)
        .map_err(|e| format!("Instance {name}: {e}"))?;
    let Some(ov) = new_ov else {
        return Err(format!(
            "OperatorVersion {ov_name:?} not found in namespace {}; install it first (kubectl kudo install) or fix spec.operatorVersion of Instance {name}",
            name.namespace,
        ));
    };
    check_counts(new, ov, name)?;
    // An older OperatorVersion past the counts (made before they held) is
    // not compared with: the Instance may still move away from it.
    let old_ov = old_ov.filter(|o| o.spec.parameters.len() <= kudo_api::MAX_PARAMETERS);
    let Some(old) = old else {
        return check_create(new, ov, now, warnings);
    };
    if old.spec == new.spec {
        return Ok(());
    }
    let no_status = StatusFacts::default();
    let status = old.status.as_ref().unwrap_or(&no_status);
    let (old_params, new_params) = (old.params(), new.params());
    let changed = params::changed_names(old_params, new_params);
    let upgrade = old.ov_name() != ov_name;
    let manual = new_manual_request(old, new)?;
    if let Some(plan) = manual {
        check_plan_exists(ov, plan, name, ov_name)?;
        check_execution_parameters(new, ov, plan, name)?;
        warnings::inherited_execution_values(old, new, warnings);
    }

    check_operations(old, new, ov, status)?;
    check_windows_and_suppressions(new)?;

    if new.metadata.deletion_timestamp.is_some() {
        if upgrade || !changed.is_empty() {
            return Err(format!(
                "Instance {name} is being deleted: parameter changes and upgrades are not allowed; \
                 cleanup runs and then the Instance is gone"
            ));
        }
        if manual.is_some() {
            return Err(format!(
                "Instance {name} is being deleted: only the cleanup plan runs now, and kudo-rs starts it itself"
            ));
        }
        return Ok(());
    }

    check_parameters(
        old_params,
        new_params,
        &changed,
        (old_ov, ov),
        upgrade,
        (name, ov_name),
        warnings,
    )?;
    if !changed.is_empty() {
        check_parameter_bytes(new_params, name)?;
    }

    // What the change asks for.
    let by_params = if changed.is_empty() || upgrade {
        None
    } else {
        params::triggered_plan(&ov.spec, &changed).map_err(|e| format!("Instance {name}: {e}"))?
    };
    let requested = if upgrade {
        let plan = params::first_existing(&ov.spec, &[UPGRADE_PLAN, UPDATE_PLAN, DEPLOY_PLAN])
            .map_err(|e| format!("Instance {name}: cannot upgrade to {ov_name}: {e}"))?;
        let defined_before: Vec<&str> = changed
            .iter()
            .copied()
            .filter(|n| old_ov.is_none_or(|o| o.spec.parameter(n).is_some()))
            .collect();
        let with_params = params::triggered_plan(&ov.spec, &defined_before)
            .map_err(|e| format!("Instance {name}: {e}"))?;
        if let Some(p) = with_params.filter(|p| *p != plan) {
            return Err(format!(
                "Instance {name}: the upgrade to {ov_name} runs plan {plan:?}, and the parameter changes in the same update trigger {p:?}; \
                 upgrade first, then change the parameters"
            ));
        }
        if manual.is_some() {
            return Err(format!(
                "Instance {name}: an upgrade to {ov_name} and a manual plan in the same update are not allowed; \
                 upgrade first, then trigger the plan"
            ));
        }
        Request::Upgrade { ov_name, plan }
    } else {
        match (by_params, manual) {
            (Some(p), Some(m)) => {
                return Err(format!(
                    "Instance {name}: the parameter change triggers plan {p:?} and spec.planExecution asks for {m:?} in the same update; \
                     make one change at a time"
                ));
            }
            (Some(plan), None) => Request::Parameters { plan },
            (None, Some(plan)) => Request::Manual { plan },
            (None, None) => return Ok(()),
        }
    };

    // Something in the way?
    if let Some(blocking) = in_the_way(old, status, old_ov.unwrap_or(ov)) {
        if blocking.plan() == requested.plan() {
            warnings.push(match blocking {
                Blocking::Running { .. } => {
                    format!("{blocking}; {requested} restarts it from the beginning")
                }
                Blocking::Pending { .. } => {
                    format!("{blocking}; {requested} runs it, taking that change with it")
                }
            });
        } else {
            return Err(conflict_message(&blocking, &requested, name));
        }
    }

    warnings::paused(name, status, requested.plan(), warnings);
    if let Some(now) = now {
        let manual = matches!(requested, Request::Manual { .. });
        let downtime = declares_downtime(ov, requested.plan());
        warnings::time(
            new,
            status,
            requested.plan(),
            manual,
            downtime,
            now,
            warnings,
        );
    }
    Ok(())
}

/// `plan "deploy" is IN_PROGRESS (...); a parameter update that triggers
/// "update" cannot start until ...`, with the way out that works for what
/// is in the way: the most common denial, written into one allocation.
fn conflict_message(
    blocking: &Blocking<'_>,
    requested: &Request<'_>,
    name: InstanceName<'_>,
) -> String {
    use fmt::Write as _;
    let mut message = String::with_capacity(320);
    // Writing into a String cannot fail.
    let _ = blocking.write_to(&mut message);
    message.push_str("; ");
    let _ = requested.write_to(&mut message);
    let command = |verb| KudoCommand::new(verb, name.name).namespace(name.namespace);
    let _ = match blocking {
        Blocking::Running { paused: false, .. } => write!(
            message,
            " cannot start until it is COMPLETE or FATAL_ERROR. Wait for it, or stop it with {} \
             (pausing it does not let another plan in)",
            command("plan cancel")
        ),
        Blocking::Running { plan, .. } => write!(
            message,
            " cannot start until it is COMPLETE or FATAL_ERROR, and it starts no step while paused. \
             Resume it with {} and wait, or stop it with {}",
            command("plan resume").flag("--plan", plan),
            command("plan cancel")
        ),
        Blocking::Pending { .. } => write!(
            message,
            " cannot start before it. See what holds it with {}",
            command("plan status")
        ),
    };
    message
}

/// A manual request must name a plan of the OperatorVersion; otherwise the
/// controller would have nothing to run and the request would be ignored.
/// Whether the OperatorVersion declares `plan` as needing downtime.
fn declares_downtime(ov: &OperatorVersion, plan: &str) -> bool {
    ov.spec.plan(plan).and_then(|p| p.downtime) == Some(true)
}

fn check_plan_exists(
    ov: &OperatorVersion,
    plan: &str,
    name: InstanceName<'_>,
    ov_name: &str,
) -> Result<(), String> {
    if ov.spec.plan(plan).is_some() {
        return Ok(());
    }
    let plans: Vec<&str> = ov.spec.plans.keys().map(String::as_str).collect();
    Err(format!(
        "Instance {name}: spec.planExecution.planName {plan:?} is not a plan of OperatorVersion {ov_name}; its plans are {}",
        plans.join(", ")
    ))
}

/// The values of a manual run (`spec.planExecution.parameters`) must be
/// declared parameters with valid values, as the Instance's own.
fn check_execution_parameters(
    new: &Subject,
    ov: &OperatorVersion,
    plan: &str,
    name: InstanceName<'_>,
) -> Result<(), String> {
    let Some(values) = new
        .spec
        .plan_execution
        .as_ref()
        .and_then(|pe| pe.parameters.as_ref())
    else {
        return Ok(());
    };
    crate::plan::execution::check(&ov.spec, plan, new.params(), values)
        .map_err(|e| format!("Instance {name}: {e}"))?;
    limits::check_run_parameter_bytes(values, name)
}

fn check_create(
    new: &Subject,
    ov: &OperatorVersion,
    now: Option<Timestamp>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = InstanceName::of(new);
    let ov_name = new.ov_name();
    if ov.spec.plan(DEPLOY_PLAN).is_none() {
        return Err(format!(
            "cannot create Instance {name}: OperatorVersion {ov_name} has no deploy plan; fix the package"
        ));
    }
    let values = new.params();
    let unknown = params::unknown(&ov.spec, values.keys().map(String::as_str));
    if !unknown.is_empty() {
        return Err(format!(
            "cannot create Instance {name}: parameters {} are not defined by OperatorVersion {ov_name}",
            kudo_api::message::listed(&unknown)
        ));
    }
    if let Some(invalid) = params::invalid_values_message(&ov.spec, values) {
        return Err(format!(
            "cannot create Instance {name}: invalid parameters: {invalid}"
        ));
    }
    check_parameter_bytes(values, name)?;
    if let Some(pe) = new.spec.plan_execution.as_ref()
        && pe.parameters.as_ref().is_some_and(|v| !v.is_empty())
        && (pe.plan_name.as_deref().unwrap_or("").is_empty()
            || pe.uid.as_deref().unwrap_or("").is_empty())
    {
        return Err(format!(
            "cannot create Instance {name}: spec.planExecution.parameters are given without a plan \
             and uid; they apply to one run only (put lasting values in spec.parameters)"
        ));
    }
    if let Some(pe) = new.spec.plan_execution.as_ref()
        && let Some(plan) = pe.plan_name.as_deref().filter(|p| !p.is_empty())
    {
        if plan == CLEANUP_PLAN {
            return Err(format!(
                "cannot create Instance {name}: the cleanup plan runs only when the Instance is deleted"
            ));
        }
        check_plan_exists(ov, plan, name, ov_name)?;
        check_execution_parameters(new, ov, plan, name)?;
        warnings.push(format!(
            "spec.planExecution ({plan}) is ignored on create: deploy runs first"
        ));
    }
    check_windows_and_suppressions(new)?;
    let no_status = StatusFacts::default();
    check_operations(&Subject::default(), new, ov, &no_status)?;
    if let Some(now) = now {
        let downtime = declares_downtime(ov, DEPLOY_PLAN);
        warnings::time(new, &no_status, DEPLOY_PLAN, false, downtime, now, warnings);
    }
    Ok(())
}
