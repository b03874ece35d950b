//! The plan status tree: building it from the OperatorVersion, resetting it
//! for a new execution, and aggregating child statuses into parents.
//!
//! # Aggregation (DC/OS `getAggregateStatus`, restated for our statuses)
//!
//! A phase's status from its steps, and a plan's from its phases; first
//! match wins:
//!
//! | # | condition                                   | result        |
//! |---|---------------------------------------------|---------------|
//! | 1 | any child FATAL_ERROR                       | FATAL_ERROR   |
//! | 2 | all children COMPLETE (also: no children)   | COMPLETE      |
//! | 3 | any child ERROR                             | ERROR         |
//! | 4 | the parent is paused                        | WAITING       |
//! | 5 | any child IN_PROGRESS                       | IN_PROGRESS   |
//! | 6 | any child WAITING                           | WAITING       |
//! | 7 | some child COMPLETE and some PENDING        | IN_PROGRESS   |
//! | 8 | any child PENDING                           | PENDING       |
//! | 9 | otherwise (all NEVER_RUN)                   | NEVER_RUN     |
//!
//! Differences from DC/OS: FATAL_ERROR (absent there) beats everything and
//! ERROR is the retrying state (DC/OS `DELAYED`), still ranked above
//! progress so that a retrying step is visible at the top; a paused parent
//! is WAITING even while started children finish (DC/OS: interrupted).

use kudo_api::{ExecutionStatus as S, PhaseStatus, Plan, PlanStatus, StepStatus, TaskStatus, Time};

/// Aggregates child statuses (see the module docs), in one pass over them.
pub fn aggregate(children: impl IntoIterator<Item = S>, paused: bool) -> S {
    let mut seen = 0u8;
    for child in children {
        seen |= bit(child);
    }
    let any = |s: S| seen & bit(s) != 0;
    if any(S::FatalError) {
        S::FatalError
    } else if seen & !bit(S::Complete) == 0 {
        S::Complete
    } else if any(S::Error) {
        S::Error
    } else if paused {
        S::Waiting
    } else if any(S::InProgress) {
        S::InProgress
    } else if any(S::Waiting) {
        S::Waiting
    } else if any(S::Complete) && any(S::Pending) {
        S::InProgress
    } else if any(S::Pending) {
        S::Pending
    } else {
        S::NeverRun
    }
}

/// One bit per status, for [`aggregate`]'s set of seen statuses.
fn bit(s: S) -> u8 {
    1 << (s as u8)
}

/// A plan status built for `plan` from `existing` (see
/// [`sync_plan_in_place`]).
pub fn sync_plan(name: &str, plan: &Plan, existing: Option<&PlanStatus>) -> PlanStatus {
    let mut out = existing.cloned().unwrap_or_default();
    sync_plan_in_place(name, plan, &mut out);
    out
}

/// Brings `ps` in line with `plan`: phases and steps in OperatorVersion
/// order, statuses kept by name, new entries NEVER_RUN (or PENDING when
/// the plan is running), entries the OperatorVersion dropped removed.
/// Returns whether anything changed. When the shape already matches (the
/// common case) this only compares names and allocates nothing.
pub fn sync_plan_in_place(name: &str, plan: &Plan, ps: &mut PlanStatus) -> bool {
    let mut changed = false;
    if ps.name != name {
        ps.name = name.to_string();
        changed = true;
    }
    if ps.status.is_none() {
        ps.status = Some(S::NeverRun);
        changed = true;
    }
    if same_shape(ps, plan) {
        return changed;
    }
    reshape(ps, plan);
    true
}

/// Rebuilds the phases, steps and tasks of `ps` in the order of `plan`,
/// moving existing entries by name.
fn reshape(ps: &mut PlanStatus, plan: &Plan) {
    let fresh = if ps.status().is_running() {
        S::Pending
    } else {
        S::NeverRun
    };
    let mut old_phases = std::mem::take(&mut ps.phases);
    ps.phases = plan
        .phases
        .iter()
        .map(|phase| {
            let mut ps = old_phases
                .iter()
                .position(|p| p.name == phase.name)
                .map(|i| std::mem::take(&mut old_phases[i]))
                .unwrap_or_else(|| PhaseStatus {
                    name: phase.name.clone(),
                    status: Some(fresh),
                    ..Default::default()
                });
            let mut old_steps: std::collections::HashMap<String, StepStatus> =
                std::mem::take(&mut ps.steps)
                    .into_iter()
                    .map(|s| (s.name.clone(), s))
                    .collect();
            ps.steps = phase
                .steps
                .iter()
                .map(|step| {
                    let mut ss = old_steps.remove(&step.name).unwrap_or_else(|| StepStatus {
                        name: step.name.clone(),
                        status: Some(fresh),
                        ..Default::default()
                    });
                    let old_tasks = std::mem::take(&mut ss.tasks);
                    ss.tasks = step
                        .tasks
                        .iter()
                        .map(|t| {
                            old_tasks
                                .iter()
                                .find(|o| &o.name == t)
                                .cloned()
                                .unwrap_or_else(|| TaskStatus {
                                    name: t.clone(),
                                    ..Default::default()
                                })
                        })
                        .collect();
                    ss
                })
                .collect();
            ps
        })
        .collect();
}

/// Whether `ps` lists exactly the phases, steps and tasks of `plan`, in order.
fn same_shape(ps: &PlanStatus, plan: &Plan) -> bool {
    ps.phases.len() == plan.phases.len()
        && ps.phases.iter().zip(&plan.phases).all(|(p, d)| {
            p.name == d.name
                && p.steps.len() == d.steps.len()
                && p.steps.iter().zip(&d.steps).all(|(s, sd)| {
                    s.name == sd.name
                        && s.tasks.len() == sd.tasks.len()
                        && s.tasks.iter().zip(&sd.tasks).all(|(t, td)| &t.name == td)
                })
        })
}

/// Puts a plan back to PENDING for a new execution `uid`, keeping the
/// objects each task applied last time (pruning input) and its pauses: a
/// pause holds the next run too, until it is resumed.
pub fn reset_plan(ps: &mut PlanStatus, uid: &str, now: Time) {
    ps.status = Some(S::Pending);
    ps.message.clear();
    ps.uid = Some(uid.to_string());
    ps.started_at = Some(now.clone());
    ps.finished_at = None;
    ps.last_updated_timestamp = Some(now);
    for phase in &mut ps.phases {
        reset_phase(phase);
        phase.canary_approvals = None;
    }
}

/// Puts a phase and its steps back to PENDING (keeps canary approvals and
/// a pause).
pub fn reset_phase(phase: &mut PhaseStatus) {
    phase.status = Some(S::Pending);
    phase.message.clear();
    for step in &mut phase.steps {
        reset_step(step);
    }
}

/// Puts a step back to PENDING: clears timing, retries, forced flag and
/// task statuses (keeps applied objects).
pub fn reset_step(step: &mut StepStatus) {
    step.status = Some(S::Pending);
    step.message.clear();
    step.started_at = None;
    step.finished_at = None;
    step.attempts = None;
    step.next_retry_at = None;
    step.forced = None;
    for task in &mut step.tasks {
        task.status = None;
        task.message.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{Phase, Step};

    #[test]
    fn aggregation_table() {
        use S::*;
        let cases: &[(&[S], bool, S)] = &[
            (&[Complete, FatalError, InProgress], false, FatalError),
            (&[Complete, Complete], true, Complete),
            (&[], false, Complete),
            (&[Error, InProgress], false, Error),
            (&[InProgress, Pending], true, Waiting),
            (&[InProgress, Waiting], false, InProgress),
            (&[Waiting, Pending], false, Waiting),
            (&[Complete, Pending], false, InProgress),
            (&[Pending, Pending], false, Pending),
            (&[NeverRun, NeverRun], false, NeverRun),
        ];
        for (children, paused, want) in cases {
            assert_eq!(
                aggregate(children.iter().copied(), *paused),
                *want,
                "{children:?} paused={paused}"
            );
        }
    }

    fn plan(phases: &[(&str, &[&str])]) -> Plan {
        Plan {
            strategy: None,
            phases: phases
                .iter()
                .map(|(p, steps)| Phase {
                    name: p.to_string(),
                    strategy: None,
                    steps: steps
                        .iter()
                        .map(|s| Step {
                            name: s.to_string(),
                            tasks: vec!["t".into()],
                        })
                        .collect(),
                })
                .collect(),
            downtime: None,
        }
    }

    #[test]
    fn sync_keeps_statuses_by_name_in_operator_version_order() {
        let first = sync_plan("deploy", &plan(&[("a", &["s1", "s2"])]), None);
        assert_eq!(first.status(), S::NeverRun);
        let mut done = first.clone();
        done.phases[0].steps[1].status = Some(S::Complete);
        let again = sync_plan(
            "deploy",
            &plan(&[("a", &["s0", "s2"]), ("b", &["x"])]),
            Some(&done),
        );
        let names: Vec<_> = again.phases[0]
            .steps
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["s0", "s2"]);
        assert_eq!(again.phases[0].steps[1].status(), S::Complete);
        assert_eq!(again.phases[0].steps[0].status(), S::NeverRun);
        assert_eq!(again.phases[1].name, "b");
        assert_eq!(
            sync_plan(
                "deploy",
                &plan(&[("a", &["s0", "s2"]), ("b", &["x"])]),
                Some(&again)
            ),
            again
        );
    }
}
