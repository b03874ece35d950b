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
use kudo_api::{
    Blocker, BlockerKind, ExecutionStatus as S, Plan, PlanStatus, StepStatus, Strategy,
};

use crate::decision::{Action, EngineConfig, EventType, Observed, TaskKey, TaskOutcome};
use crate::tree::aggregate;

/// What a walk produced besides the status changes.
#[derive(Debug, Default)]
pub struct WalkOutput {
    /// RunTask and Event actions.
    pub actions: Vec<Action>,
    /// Why steps cannot start.
    pub blockers: Vec<Blocker>,
    /// Earliest time something changes by itself (a retry is due).
    pub wake_at: Option<Timestamp>,
}

impl WalkOutput {
    fn block(&mut self, b: Blocker) {
        if !self.blockers.contains(&b) {
            self.blockers.push(b);
        }
    }

    fn wake(&mut self, t: Timestamp) {
        self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
    }
}

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
    /// Advances `ps` (a running execution of `plan`) as far as it can go now.
    pub fn run(&self, ps: &mut PlanStatus, plan: &Plan, out: &mut WalkOutput) {
        let plan_strategy = match Strategy::parse(plan.strategy.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                ps.status = Some(S::FatalError);
                ps.message = format!("plan {:?}: {e}", self.plan_name);
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
                    phase.status = Some(S::FatalError);
                    phase.message = format!("phase {:?}: {e}", phase.name);
                    earlier_complete = false;
                    continue;
                }
            };
            let phase_paused = phase.paused == Some(true);
            let approvals = phase.canary_approvals.unwrap_or(0);
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
                        step.status = Some(S::Pending);
                        step.message.clear();
                        continue;
                    }
                    let needed = if index == 0 { 1 } else { 2 };
                    let held = if plan_paused {
                        Some(blocker(
                            BlockerKind::Paused,
                            format!(
                                "plan {:?} is paused; resume it with kubectl kudo plan resume",
                                self.plan_name
                            ),
                            self.plan_name,
                            None,
                        ))
                    } else if phase_paused {
                        Some(blocker(
                            BlockerKind::Paused,
                            format!(
                                "phase {:?} of plan {:?} is paused; resume it with kubectl kudo plan resume --phase {}",
                                phase.name, self.plan_name, phase.name
                            ),
                            self.plan_name,
                            Some(&phase.name),
                        ))
                    } else if let Some(h) = self.hold {
                        Some(h.clone())
                    } else if strategy.is_canary() && approvals < needed {
                        Some(blocker(
                            BlockerKind::CanaryApproval,
                            format!(
                                "phase {:?} of plan {:?} waits for canary approval {} of 2 (step {:?}); \
                                 approve with kubectl kudo plan continue --plan {} --phase {}",
                                phase.name,
                                self.plan_name,
                                approvals + 1,
                                step.name,
                                self.plan_name,
                                phase.name
                            ),
                            self.plan_name,
                            Some(&phase.name),
                        ))
                    } else {
                        None
                    };
                    if let Some(b) = held {
                        steps_before_complete = false;
                        step.status = Some(S::Waiting);
                        step.message = b.message.clone();
                        out.block(b);
                        continue;
                    }
                    step.status = Some(S::InProgress);
                    step.message.clear();
                    step.started_at = Some(crate::time(self.now));
                }
                self.run_step(&phase.name, step, out);
                steps_before_complete &= step.status() == S::Complete;
            }
            phase.status = Some(aggregate(
                phase.steps.iter().map(StepStatus::status),
                phase_paused,
            ));
            phase.message = if phase_paused && phase.status() == S::Waiting {
                "paused".to_string()
            } else {
                String::new()
            };
            earlier_complete &= phase.status() == S::Complete;
        }
        ps.status = Some(aggregate(ps.phases.iter().map(|p| p.status()), plan_paused));
        ps.message = plan_message(ps, plan_paused);
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
                until: Some(crate::time(at)),
                plan: Some(self.plan_name.to_string()),
                phase: Some(phase.to_string()),
                step: Some(step.name.clone()),
            });
            return;
        }
        for i in 0..step.tasks.len() {
            if step.tasks[i].status == Some(S::Complete) {
                continue;
            }
            let key = TaskKey {
                plan: self.plan_name.to_string(),
                uid: self.uid.to_string(),
                phase: phase.to_string(),
                step: step.name.clone(),
                task: step.tasks[i].name.clone(),
            };
            let Some(result) = self.observed.tasks.get(&key) else {
                out.actions.push(Action::RunTask {
                    key,
                    previously_applied: step.tasks[i].objects.clone(),
                });
                return;
            };
            let task = &mut step.tasks[i];
            task.objects.clone_from(&result.objects);
            match &result.outcome {
                TaskOutcome::Done => {
                    task.status = Some(S::Complete);
                    task.message.clear();
                }
                TaskOutcome::InProgress { message } => {
                    task.status = Some(S::InProgress);
                    task.message.clone_from(message);
                    step.status = Some(S::InProgress);
                    step.message.clone_from(message);
                    out.block(Blocker {
                        kind: BlockerKind::WaitingForResource,
                        message: message.clone(),
                        until: None,
                        plan: Some(self.plan_name.to_string()),
                        phase: Some(phase.to_string()),
                        step: Some(step.name.clone()),
                    });
                    out.actions.push(Action::RunTask {
                        key,
                        previously_applied: step.tasks[i].objects.clone(),
                    });
                    return;
                }
                TaskOutcome::Transient { message } => {
                    task.status = Some(S::Error);
                    task.message.clone_from(message);
                    let attempts = step.attempts.unwrap_or(0).saturating_add(1);
                    let at = add(self.now, backoff(self.config, attempts));
                    step.status = Some(S::Error);
                    step.message.clone_from(message);
                    step.attempts = Some(attempts);
                    step.next_retry_at = Some(crate::time(at));
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
                        message: format!(
                            "step {:?} of phase {phase:?} failed ({message}); retry {} at {at}",
                            step.name,
                            attempts + 1
                        ),
                        until: Some(crate::time(at)),
                        plan: Some(self.plan_name.to_string()),
                        phase: Some(phase.to_string()),
                        step: Some(step.name.clone()),
                    });
                    return;
                }
                TaskOutcome::Fatal { message } => {
                    task.status = Some(S::FatalError);
                    task.message.clone_from(message);
                    step.status = Some(S::FatalError);
                    step.message.clone_from(message);
                    step.next_retry_at = None;
                    step.finished_at = Some(crate::time(self.now));
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
        step.message.clear();
        step.next_retry_at = None;
        step.finished_at = Some(crate::time(self.now));
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
