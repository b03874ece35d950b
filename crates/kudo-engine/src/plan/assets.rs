//! Dirtied assets (DC/OS): the objects a running plan is working on or
//! will work on, so that recovery and pod operations keep away from them
//! and go ahead for everything else.
//!
//! Rules:
//! - a step COMPLETE in this run touches nothing any more; every other
//!   step of the running plan (in progress, retrying, pending, paused)
//!   touches the objects of its tasks;
//! - a task's objects are those it applied (or deleted) last time: recorded
//!   in its task status, or, when that step never ran, in the status of the
//!   same OperatorVersion task run by another plan; a `Dummy` task touches
//!   nothing;
//! - a task whose objects are not known (it never ran, or rendered
//!   nothing) may touch anything: its step claims every object and pod, so
//!   whatever is unsure waits for the plan;
//! - objects are compared by kind, namespace and name (not API version);
//!   a pod belongs to an object of its namespace whose name followed by a
//!   dash begins the pod's name (how StatefulSets, Deployments, DaemonSets
//!   and Jobs name their pods), or to a Pod of its name, so a similarly
//!   named workload may hold a pod back, never let one through.

use kudo_api::names::RECOVERY_PLAN;
use kudo_api::{AppliedObject, ExecutionStatus as S, InstanceStatus, OperatorVersion, TaskKind};

use crate::model::subject::StatusFacts;

/// One step of the running plan as the rule reads it.
#[derive(Debug, Clone)]
pub struct StepState<'a> {
    /// Phase name.
    pub phase: &'a str,
    /// Step name.
    pub step: &'a str,
    /// COMPLETE in this run.
    pub complete: bool,
    /// Its tasks: name and the objects its status records.
    pub tasks: Vec<(&'a str, &'a [AppliedObject])>,
}

/// The step of the running plan that claims an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim<'a> {
    /// Phase name.
    pub phase: &'a str,
    /// Step name.
    pub step: &'a str,
    /// The step's objects are known (otherwise it claims everything).
    pub known: bool,
}

impl std::fmt::Display for Claim<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "phase {:?}, step {:?}", self.phase, self.step)?;
        if !self.known {
            f.write_str(", whose objects are not known before it runs")?;
        }
        Ok(())
    }
}

/// What the current and remaining steps of a running plan touch.
#[derive(Debug, Clone, Default)]
pub struct Dirtied<'a> {
    steps: Vec<(Claim<'a>, Vec<&'a AppliedObject>)>,
}

impl<'a> Dirtied<'a> {
    /// The rule on steps in plan order; `elsewhere(task)` gives the objects
    /// the OperatorVersion task of that name applied in another plan.
    pub fn from_steps(
        ov: &OperatorVersion,
        steps: impl IntoIterator<Item = StepState<'a>>,
        elsewhere: impl Fn(&str) -> Option<&'a [AppliedObject]>,
    ) -> Self {
        let mut out = Self::default();
        for s in steps.into_iter().filter(|s| !s.complete) {
            let mut known = true;
            let mut objects = Vec::new();
            for (task, recorded) in &s.tasks {
                let kind = ov
                    .spec
                    .tasks
                    .iter()
                    .find(|t| t.name == *task)
                    .and_then(|t| t.task_kind());
                if kind == Some(TaskKind::Dummy) {
                    continue;
                }
                let found = Some(*recorded)
                    .filter(|r| !r.is_empty())
                    .or_else(|| elsewhere(task).filter(|r| !r.is_empty()));
                match found {
                    Some(r) => objects.extend(r.iter()),
                    None => known = false,
                }
            }
            let claim = Claim {
                phase: s.phase,
                step: s.step,
                known,
            };
            out.steps.push((claim, objects));
        }
        out
    }

    /// The running plan `plan` of a status.
    pub fn of_status(ov: &'a OperatorVersion, plan: &str, st: &'a InstanceStatus) -> Self {
        let Some(ps) = st.plan_status.get(plan) else {
            return Self::default();
        };
        let steps = ps.phases.iter().flat_map(move |ph| {
            ph.steps.iter().map(move |s| {
                step_state(ov, plan, &ph.name, &s.name, s.status, &|task| {
                    s.tasks
                        .iter()
                        .find(|t| t.name == task)
                        .map(|t| t.objects.as_slice())
                })
            })
        });
        let elsewhere = |task: &str| {
            st.plan_status
                .iter()
                .filter(|(name, _)| name.as_str() != plan && name.as_str() != RECOVERY_PLAN)
                .flat_map(|(_, p)| &p.phases)
                .flat_map(|ph| &ph.steps)
                .flat_map(|s| &s.tasks)
                .find(|t| t.name == task && !t.objects.is_empty())
                .map(|t| t.objects.as_slice())
        };
        Self::from_steps(ov, steps.collect::<Vec<_>>(), elsewhere)
    }

    /// The running plan `plan` of a status as admission reads it.
    pub fn of_facts(ov: &'a OperatorVersion, plan: &str, st: &'a StatusFacts) -> Self {
        let Some(ps) = st.plan_status.get(plan) else {
            return Self::default();
        };
        let steps = ps.phases.iter().flat_map(move |ph| {
            ph.steps.iter().map(move |s| {
                step_state(ov, plan, &ph.name, &s.name, s.status, &|task| {
                    s.tasks
                        .iter()
                        .find(|t| t.name == task)
                        .map(|t| t.objects.as_slice())
                })
            })
        });
        let elsewhere = |task: &str| {
            st.plan_status
                .iter()
                .filter(|(name, _)| name.as_str() != plan && name.as_str() != RECOVERY_PLAN)
                .flat_map(|(_, p)| &p.phases)
                .flat_map(|ph| &ph.steps)
                .flat_map(|s| &s.tasks)
                .find(|t| t.name == task && !t.objects.is_empty())
                .map(|t| t.objects.as_slice())
        };
        Self::from_steps(ov, steps.collect::<Vec<_>>(), elsewhere)
    }

    /// The first step (in plan order) that touches `object`, or may.
    pub fn claim(&self, object: &AppliedObject) -> Option<&Claim<'a>> {
        self.steps
            .iter()
            .find(|(c, objects)| !c.known || objects.iter().any(|o| same_object(o, object)))
            .map(|(c, _)| c)
    }

    /// The first step (in plan order) that touches the workload of pod
    /// `pod` in `namespace` (any namespace when not known), or may.
    pub fn claim_pod(&self, namespace: Option<&str>, pod: &str) -> Option<&Claim<'a>> {
        self.steps
            .iter()
            .find(|(c, objects)| !c.known || objects.iter().any(|o| owns_pod(o, namespace, pod)))
            .map(|(c, _)| c)
    }

    /// Whether nothing is touched any more (every step COMPLETE).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// A step of the status with the tasks its OperatorVersion definition
/// lists (a status need not list them: KUDO's does not), each with the
/// objects the status records for it.
fn step_state<'a>(
    ov: &'a OperatorVersion,
    plan: &str,
    phase: &'a str,
    step: &'a str,
    status: Option<S>,
    recorded: &dyn Fn(&str) -> Option<&'a [AppliedObject]>,
) -> StepState<'a> {
    let defined = ov
        .spec
        .plan(plan)
        .and_then(|p| p.phases.iter().find(|ph| ph.name == phase))
        .and_then(|ph| ph.steps.iter().find(|s| s.name == step));
    let tasks = match defined {
        Some(d) => d
            .tasks
            .iter()
            .map(|t| (t.as_str(), recorded(t).unwrap_or_default()))
            .collect(),
        // Not in the OperatorVersion (any more): may touch anything.
        None => vec![("", &[][..])],
    };
    StepState {
        phase,
        step,
        complete: status == Some(S::Complete),
        tasks,
    }
}

fn same_object(a: &AppliedObject, b: &AppliedObject) -> bool {
    a.kind == b.kind && a.namespace == b.namespace && a.name == b.name
}

fn owns_pod(o: &AppliedObject, namespace: Option<&str>, pod: &str) -> bool {
    if namespace.is_some_and(|ns| o.namespace.as_deref() != Some(ns)) {
        return false;
    }
    if o.kind == "Pod" {
        return o.name == pod;
    }
    pod.strip_prefix(o.name.as_str())
        .is_some_and(|rest| rest.starts_with('-'))
}

#[cfg(test)]
#[path = "assets_tests.rs"]
mod tests;
