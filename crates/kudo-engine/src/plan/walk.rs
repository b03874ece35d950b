//! Walking a running plan: which steps may start under the strategies and
//! holds, consuming task outcomes, and emitting the tasks to run.
//!
//! - Plan strategy over phases: `serial` (a phase starts when all earlier
//!   phases are COMPLETE) or `parallel` (all at once; the default).
//! - Phase strategy over steps: `serial`, `parallel` (default),
//!   `serial-canary`/`canary` and `parallel-canary`: step 0 needs one
//!   `continue` approval, every later step needs two; after that the base
//!   strategy applies.
//! - Tasks of a step run in order: task k+1 is emitted only once task k is
//!   done.
//! - A step that has not started yet may start only when eligible and not
//!   held (plan or phase paused, a maintenance window or suppression,
//!   a missing canary approval); a held step is WAITING with the reason.
//!   Started steps (IN_PROGRESS, ERROR) keep running under every hold.

use jiff::Timestamp;
use kudo_api::hint::KudoCommand;
use kudo_api::message::{MAX_STATUS_MESSAGE, bounded, bounded_to};
use kudo_api::{
    Blocker, BlockerKind, ExecutionStatus as S, PhaseStatus, Plan, PlanStatus, StepStatus, Strategy,
};

use crate::model::keys::TaskKeyRef;
use crate::model::{Action, EngineConfig, EventType, Observed, TaskOutcome};
use crate::plan::tree::aggregate;
pub use crate::plan::walk_output::WalkOutput;
use crate::plan::walk_output::{set_message, set_status};

/// Retry delay after `attempts` failures: initial × 2^(attempts-1), capped.
pub fn backoff(config: &EngineConfig, attempts: u32) -> std::time::Duration {
    let factor = 2u32.saturating_pow(attempts.saturating_sub(1).min(30));
    config
        .initial_backoff
        .saturating_mul(factor)
        .min(config.max_backoff)
}

fn add(now: Timestamp, d: std::time::Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|sd| now.checked_add(sd).ok())
        .unwrap_or(Timestamp::MAX)
}

/// Context of one walk.
pub struct Walk<'a> {
    /// The Instance's namespace and name (for the commands blockers name).
    pub instance: (&'a str, &'a str),
    /// Plan name.
    pub plan_name: &'a str,
    /// Execution uid.
    pub uid: &'a str,
    /// Task outcomes of this reconcile.
    pub observed: &'a Observed,
    /// Current time.
    pub now: Timestamp,
    /// Settings.
    pub config: &'a EngineConfig,
    /// A hold on all new steps (window closed, suppressed).
    pub hold: Option<&'a Blocker>,
}

impl Walk<'_> {
    /// A `kubectl kudo` command for this Instance, as blockers name it.
    fn command<'c>(&'c self, command: &'c str) -> KudoCommand<'c> {
        let (namespace, name) = self.instance;
        KudoCommand::new(command, name).namespace(namespace)
    }

    /// Advances `ps` (a running execution of `plan`) as far as it can go
    /// now. Statuses are only written where they change (see
    /// [`WalkOutput::changed`]); steps that cannot move cost a status check.
    pub fn run(&self, ps: &mut PlanStatus, plan: &Plan, out: &mut WalkOutput) {
        let plan_strategy = match Strategy::parse(plan.strategy.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                set_status(&mut ps.status, S::FatalError, &mut out.changed);
                let message = format!("plan {:?}: {e}", self.plan_name);
                set_message(&mut ps.message, &message, &mut out.changed);
                return;
            }
        };
        let plan_paused = ps.paused == Some(true);
        let mut earlier_complete = true;
        for (phase_def, phase) in plan.phases.iter().zip(ps.phases.iter_mut()) {
            let reachable = !plan_strategy.is_serial() || earlier_complete;
            let strategy = match Strategy::parse(phase_def.strategy.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    set_status(&mut phase.status, S::FatalError, &mut out.changed);
                    let message = format!("phase {:?}: {e}", phase.name);
                    set_message(&mut phase.message, &message, &mut out.changed);
                    earlier_complete = false;
                    continue;
                }
            };
            self.run_phase(phase, strategy, reachable, plan_paused, out);
            earlier_complete &= phase.status() == S::Complete;
        }
        let status = aggregate(ps.phases.iter().map(PhaseStatus::status), plan_paused);
        set_status(&mut ps.status, status, &mut out.changed);
        let message = plan_message(ps, plan_paused);
        set_message(&mut ps.message, &message, &mut out.changed);
    }

    fn run_phase(
        &self,
        phase: &mut PhaseStatus,
        strategy: Strategy,
        reachable: bool,
        plan_paused: bool,
        out: &mut WalkOutput,
    ) {
        let phase_paused = phase.paused == Some(true);
        let approvals = phase.canary_approvals.unwrap_or(0);
        // A hold on every step of this phase; built once, and only if one
        // applies.
        let phase_hold = if plan_paused {
            Some(blocker(
                BlockerKind::Paused,
                format!(
                    "plan {:?} is paused; resume it with {}",
                    self.plan_name,
                    self.command("plan resume").flag("--plan", self.plan_name)
                ),
                self.plan_name,
                None,
            ))
        } else if phase_paused {
            Some(blocker(
                BlockerKind::Paused,
                format!(
                    "phase {:?} of plan {:?} is paused; resume it with {}",
                    phase.name,
                    self.plan_name,
                    self.command("plan resume")
                        .flag("--plan", self.plan_name)
                        .flag("--phase", &phase.name)
                ),
                self.plan_name,
                Some(&phase.name),
            ))
        } else {
            self.hold.cloned()
        };
        let mut steps_before_complete = true;
        for (index, step) in phase.steps.iter_mut().enumerate() {
            let status = step.status();
            if status.is_terminal() {
                steps_before_complete &= status == S::Complete;
                continue;
            }
            if !matches!(status, S::InProgress | S::Error) {
                let eligible = reachable && (!strategy.is_serial() || steps_before_complete);
                if !eligible {
                    steps_before_complete = false;
                    set_status(&mut step.status, S::Pending, &mut out.changed);
                    set_message(&mut step.message, "", &mut out.changed);
                    continue;
                }
                let needed = if index == 0 { 1 } else { 2 };
                if let Some(b) = &phase_hold {
                    steps_before_complete = false;
                    hold_step(step, b, out);
                    continue;
                }
                if strategy.is_canary() && approvals < needed {
                    steps_before_complete = false;
                    let b = blocker(
                        BlockerKind::CanaryApproval,
                        format!(
                            "phase {:?} of plan {:?} waits for canary approval {} of 2 (step {:?}); \
                             approve with {}",
                            phase.name,
                            self.plan_name,
                            approvals + 1,
                            step.name,
                            self.command("plan continue")
                                .flag("--plan", self.plan_name)
                                .flag("--phase", &phase.name)
                        ),
                        self.plan_name,
                        Some(&phase.name),
                    );
                    hold_step(step, &b, out);
                    continue;
                }
                step.status = Some(S::InProgress);
                step.message.clear();
                step.started_at = Some(crate::model::time(self.now));
                out.changed = true;
            }
            self.run_step(&phase.name, step, out);
            steps_before_complete &= step.status() == S::Complete;
        }
        let status = aggregate(phase.steps.iter().map(StepStatus::status), phase_paused);
        set_status(&mut phase.status, status, &mut out.changed);
        let message = if phase_paused && status == S::Waiting {
            "paused"
        } else {
            ""
        };
        set_message(&mut phase.message, message, &mut out.changed);
    }

    fn run_step(&self, phase: &str, step: &mut StepStatus, out: &mut WalkOutput) {
        if step.status() == S::Error
            && let Some(at) = step.next_retry_at.as_ref().map(|t| t.0)
            && at > self.now
        {
            out.wake(at);
            out.block(Blocker {
                kind: BlockerKind::Backoff,
                message: format!(
                    "step {:?} of phase {phase:?} failed ({}); retry {} at {at}",
                    step.name,
                    step.message,
                    step.attempts.unwrap_or(0) + 1
                ),
                until: Some(crate::model::time(at)),
                plan: Some(self.plan_name.to_string()),
                phase: Some(phase.to_string()),
                step: Some(step.name.clone()),
                since: None,
            });
            return;
        }
        for i in 0..step.tasks.len() {
            if step.tasks[i].status == Some(S::Complete) {
                continue;
            }
            let key = TaskKeyRef {
                plan: self.plan_name,
                uid: self.uid,
                phase,
                step: &step.name,
                task: &step.tasks[i].name,
            };
            let Some(result) = self.observed.get(&key) else {
                out.actions.push(Action::RunTask {
                    key: key.to_owned_key(),
                });
                return;
            };
            // Only a task still in progress is run again, under its own key.
            let rerun = matches!(result.outcome, TaskOutcome::InProgress { .. })
                .then(|| key.to_owned_key());
            let task = &mut step.tasks[i];
            if task.objects != result.objects {
                task.objects.clone_from(&result.objects);
                out.changed = true;
            }
            match &result.outcome {
                TaskOutcome::Done => {
                    set_status(&mut task.status, S::Complete, &mut out.changed);
                    set_message(
                        &mut task.message,
                        &result
                            .notes
                            .iter()
                            .map(|n| n.message.as_str())
                            .collect::<Vec<_>>()
                            .join("; "),
                        &mut out.changed,
                    );
                }
                TaskOutcome::InProgress { message } => {
                    let message = &*bounded(message);
                    set_status(&mut task.status, S::InProgress, &mut out.changed);
                    set_message(&mut task.message, message, &mut out.changed);
                    set_status(&mut step.status, S::InProgress, &mut out.changed);
                    set_message(&mut step.message, message, &mut out.changed);
                    out.block(Blocker {
                        kind: BlockerKind::WaitingForResource,
                        message: message.to_string(),
                        until: None,
                        plan: Some(self.plan_name.to_string()),
                        phase: Some(phase.to_string()),
                        step: Some(step.name.clone()),
                        since: None,
                    });
                    if let Some(key) = rerun {
                        out.actions.push(Action::RunTask { key });
                    }
                    return;
                }
                TaskOutcome::Transient { message: full } => {
                    let message = &*bounded(full);
                    task.status = Some(S::Error);
                    message.clone_into(&mut task.message);
                    let attempts = step.attempts.unwrap_or(0).saturating_add(1);
                    let at = add(self.now, backoff(self.config, attempts));
                    step.status = Some(S::Error);
                    message.clone_into(&mut step.message);
                    step.attempts = Some(attempts);
                    step.next_retry_at = Some(crate::model::time(at));
                    out.changed = true;
                    out.wake(at);
                    out.actions.push(step_failed(
                        self.plan_name,
                        phase,
                        &step.name,
                        message,
                        false,
                    ));
                    out.block(Blocker {
                        kind: BlockerKind::Backoff,
                        // The error leaves room for the rest of the sentence.
                        message: format!(
                            "step {:?} of phase {phase:?} failed ({}); retry {} at {at}",
                            step.name,
                            bounded_to(full, MAX_STATUS_MESSAGE / 2),
                            attempts + 1
                        ),
                        until: Some(crate::model::time(at)),
                        plan: Some(self.plan_name.to_string()),
                        phase: Some(phase.to_string()),
                        step: Some(step.name.clone()),
                        since: None,
                    });
                    return;
                }
                TaskOutcome::Fatal { message } => {
                    let message = &*bounded(message);
                    task.status = Some(S::FatalError);
                    message.clone_into(&mut task.message);
                    step.status = Some(S::FatalError);
                    message.clone_into(&mut step.message);
                    step.next_retry_at = None;
                    step.finished_at = Some(crate::model::time(self.now));
                    out.changed = true;
                    out.actions.push(step_failed(
                        self.plan_name,
                        phase,
                        &step.name,
                        message,
                        true,
                    ));
                    return;
                }
            }
        }
        step.status = Some(S::Complete);
        // A completed step keeps what its tasks wanted said (their notes).
        let notes = step
            .tasks
            .iter()
            .map(|t| t.message.as_str())
            .filter(|m| !m.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        step.message = bounded(&notes).into_owned();
        step.next_retry_at = None;
        step.finished_at = Some(crate::model::time(self.now));
        out.changed = true;
    }
}

/// Holds a step that has not started: WAITING with the blocker's message.
fn hold_step(step: &mut StepStatus, b: &Blocker, out: &mut WalkOutput) {
    set_status(&mut step.status, S::Waiting, &mut out.changed);
    set_message(&mut step.message, &b.message, &mut out.changed);
    if !out.has_blocker(b) {
        out.push_blocker(b.clone());
    }
}

fn blocker(kind: BlockerKind, message: String, plan: &str, phase: Option<&str>) -> Blocker {
    Blocker {
        kind,
        message,
        until: None,
        plan: Some(plan.to_string()),
        phase: phase.map(str::to_string),
        step: None,
        since: None,
    }
}

fn step_failed(plan: &str, phase: &str, step: &str, message: &str, fatal: bool) -> Action {
    Action::Event {
        event_type: EventType::Warning,
        reason: "StepFailed".to_string(),
        message: format!(
            "Step {step} of phase {phase} of plan {plan} failed{}: {message}",
            if fatal { " fatally" } else { ", will retry" }
        ),
    }
}

/// The plan message: the failing or waiting step, if any.
fn plan_message(ps: &PlanStatus, paused: bool) -> String {
    let wanted = match ps.status() {
        S::FatalError => S::FatalError,
        S::Error => S::Error,
        S::Waiting if paused => return "paused".to_string(),
        S::Waiting => S::Waiting,
        _ => return String::new(),
    };
    ps.phases
        .iter()
        .find_map(|phase| {
            if phase.status() == S::FatalError && !phase.message.is_empty() {
                return Some(phase.message.clone());
            }
            phase
                .steps
                .iter()
                .find(|s| s.status() == wanted)
                .map(|s| format!("phase {:?}, step {:?}: {}", phase.name, s.name, s.message))
        })
        .unwrap_or_default()
}
