//! What a change asks for (a manual run, a parameter update, an upgrade),
//! what stands in its way, and how both are worded in messages.

use std::fmt;

use kudo_api::names::CLEANUP_PLAN;
use kudo_api::{ExecutionStatus as S, OperatorVersion};

use super::InstanceName;
use super::{StatusFacts, Subject};
use crate::plan::select::{self, Selection};

/// The plan a change asks for, and why; written into messages as "an
/// upgrade to X (plan P)" and the like.
pub(super) enum Request<'a> {
    Upgrade { ov_name: &'a str, plan: String },
    Parameters { plan: String },
    Manual { plan: &'a str },
}

impl Request<'_> {
    pub(super) fn plan(&self) -> &str {
        match self {
            Self::Upgrade { plan, .. } | Self::Parameters { plan } => plan,
            Self::Manual { plan } => plan,
        }
    }
}

impl Request<'_> {
    /// Writes it as its `Display` does; plain `write_str`s, as a denial
    /// message is built on every refused review.
    pub(super) fn write_to<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        match self {
            Self::Upgrade { ov_name, plan } => {
                out.write_str("an upgrade to ")?;
                out.write_str(ov_name)?;
                out.write_str(" (plan ")?;
                Quoted(plan).write_to(out)?;
                out.write_str(")")
            }
            Self::Parameters { plan } => {
                out.write_str("a parameter update that triggers ")?;
                Quoted(plan).write_to(out)
            }
            Self::Manual { plan } => {
                out.write_str("a manual run of plan ")?;
                Quoted(plan).write_to(out)
            }
        }
    }
}

impl fmt::Display for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

/// The plan a new `spec.planExecution` asks for, if it is a new request.
pub(super) fn new_manual_request<'v>(
    old: &Subject,
    new: &'v Subject,
) -> Result<Option<&'v str>, String> {
    let name = InstanceName::of(new);
    let (Some(pe), old_pe) = (
        new.spec.plan_execution.as_ref(),
        old.spec.plan_execution.as_ref(),
    ) else {
        // Clearing planExecution changes nothing in kudo-rs (cancel is an operation).
        return Ok(None);
    };
    let plan = pe.plan_name.as_deref().unwrap_or("");
    let uid = pe.uid.as_deref().filter(|u| !u.is_empty());
    let old_uid = old_pe.and_then(|p| p.uid.as_deref());
    let old_plan = old_pe.and_then(|p| p.plan_name.as_deref()).unwrap_or("");
    let values = pe.parameters.as_ref().filter(|v| !v.is_empty());
    if uid.is_none() || uid == old_uid {
        if plan != old_plan && !plan.is_empty() {
            return Err(format!(
                "Instance {name}: spec.planExecution.planName changed to {plan:?} without a new uid; \
                 set a new spec.planExecution.uid to request a run (kubectl kudo plan trigger does this)"
            ));
        }
        // Values belong to one run: without a uid there is none, and the
        // run of an unchanged uid started with the values it had then.
        if uid.is_none() && values.is_some() {
            return Err(format!(
                "Instance {name}: spec.planExecution.parameters are given without a plan to run; \
                 they apply to one run only: set planName and a new uid with them \
                 (kubectl kudo plan trigger -p does this), or put lasting values in spec.parameters"
            ));
        }
        if values.is_some() && values != old_pe.and_then(|p| p.parameters.as_ref()) {
            return Err(format!(
                "Instance {name}: spec.planExecution.parameters changed without a new uid; \
                 the run of uid {} keeps the values it started with. Set a new \
                 spec.planExecution.uid to run the plan with these values \
                 (kubectl kudo plan trigger -p does this)",
                uid.unwrap_or_default()
            ));
        }
        return Ok(None);
    }
    if plan.is_empty() {
        return Err(format!(
            "Instance {name}: spec.planExecution has a new uid but no planName; name the plan to run"
        ));
    }
    if plan == CLEANUP_PLAN {
        return Err(format!(
            "Instance {name}: the cleanup plan cannot be triggered by hand; kudo-rs runs it when the Instance is deleted"
        ));
    }
    Ok(Some(plan))
}

/// A name in double quotes, exactly as `{:?}` writes it, without its
/// character-by-character escaping for the usual plain names (every denial
/// message has a few).
pub(super) struct Quoted<'a>(pub(super) &'a str);

impl Quoted<'_> {
    fn write_to<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        let plain = self
            .0
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\');
        if plain {
            out.write_str("\"")?;
            out.write_str(self.0)?;
            out.write_str("\"")
        } else {
            write!(out, "{:?}", self.0)
        }
    }
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

/// What stands in the way of a new plan; written as `plan "deploy" is
/// IN_PROGRESS (phase "nodes", step "node-2")` and the like.
pub(super) enum Blocking<'a> {
    /// The active plan runs, possibly at a step that is not done.
    Running {
        plan: &'a str,
        status: S,
        at: Option<(&'a str, &'a str)>,
        /// Paused: it stays in the way until resumed and finished, or cancelled.
        paused: bool,
    },
    /// A request in spec that the controller has not started yet.
    Pending {
        plan: String,
        trigger: select::Trigger,
    },
}

impl Blocking<'_> {
    pub(super) fn plan(&self) -> &str {
        match self {
            Self::Running { plan, .. } => plan,
            Self::Pending { plan, .. } => plan,
        }
    }
}

impl Blocking<'_> {
    /// Writes it as its `Display` does, with plain `write_str`s.
    pub(super) fn write_to<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        out.write_str("plan ")?;
        Quoted(self.plan()).write_to(out)?;
        out.write_str(" is ")?;
        match self {
            Self::Running {
                status, at, paused, ..
            } => {
                out.write_str(status.as_str())?;
                if *paused {
                    out.write_str(", paused,")?;
                }
                match at {
                    Some((phase, step)) => {
                        out.write_str(" (phase ")?;
                        Quoted(phase).write_to(out)?;
                        out.write_str(", step ")?;
                        Quoted(step).write_to(out)?;
                        out.write_str(")")
                    }
                    None => Ok(()),
                }
            }
            Self::Pending { trigger, .. } => {
                write!(out, "requested ({trigger}) and not started yet")
            }
        }
    }
}

impl fmt::Display for Blocking<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

/// The running plan, or the request still pending in spec, with where it is.
pub(super) fn in_the_way<'s>(
    old: &Subject,
    status: &'s StatusFacts,
    ov: &OperatorVersion,
) -> Option<Blocking<'s>> {
    // A running recovery yields to any plan asked for.
    if let Some(active) = status.active_plan.as_ref().map(|a| a.name.as_str())
        && active != kudo_api::names::RECOVERY_PLAN
        && let Some(ps) = status.plan_status.get(active)
        && ps.status().is_running()
    {
        let at = ps.phases.iter().find_map(|ph| {
            ph.steps
                .iter()
                .find(|s| matches!(s.status(), S::InProgress | S::Error | S::Waiting))
                .map(|s| (ph.name.as_str(), s.name.as_str()))
        });
        return Some(Blocking::Running {
            plan: active,
            status: ps.status(),
            at,
            paused: ps.paused == Some(true),
        });
    }
    let consumed = select::Consumed::from(status);
    match select::select(&old.metadata, &old.spec, ov, consumed) {
        Selection::Start(req)
            if req.trigger != select::Trigger::Create || status.active_plan.is_some() =>
        {
            Some(Blocking::Pending {
                plan: req.plan,
                trigger: req.trigger,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Quoted;

    #[test]
    fn quoted_names_read_as_debug_formatting_writes_them() {
        for name in [
            "deploy",
            "",
            "a b",
            "quo\"te",
            "back\\slash",
            "tab\t",
            "ünï",
            "\u{7f}",
        ] {
            assert_eq!(Quoted(name).to_string(), format!("{name:?}"), "{name}");
        }
    }
}
