//! `--wait`: follow a plan execution until it finishes, showing the current
//! phase and step. The decision ([`assess`]) is pure; [`wait_for_plan`]
//! polls the API server.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use kube::Api;
use kudo_api::{ExecutionStatus, Instance, InstanceStatus, PlanStatus};

use crate::error::{CliError, Result, status_code};
use kudo_api::hint::KudoCommand;

/// What was true before the CLI asked for a plan, so an old execution is
/// not mistaken for the new one.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// Execution uids present before the request.
    pub known_uids: BTreeSet<String>,
    /// Only this plan counts (e.g. `plan trigger --name`).
    pub plan: Option<String>,
    /// The Instance's generation after the request: blockers count only
    /// once the manager has seen it (`status.observedGeneration`).
    pub generation: Option<i64>,
}

impl Baseline {
    /// Records the uids of every plan in `status`.
    pub fn from_status(status: Option<&InstanceStatus>, plan: Option<String>) -> Self {
        let known_uids = status
            .map(|s| {
                s.plan_status
                    .values()
                    .filter_map(|p| p.uid.clone())
                    .collect()
            })
            .unwrap_or_default();
        Self {
            known_uids,
            plan,
            generation: None,
        }
    }

    /// The same, counting blockers once the manager saw `generation`.
    #[must_use]
    pub fn seen_at(self, generation: Option<i64>) -> Self {
        Self { generation, ..self }
    }
}

/// Where the awaited execution stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// No new execution yet.
    NotStarted,
    /// Running; the text says which phase/step and why it waits.
    Running(String),
    /// Finished COMPLETE.
    Complete(String),
    /// Finished FATAL_ERROR; the text names the failing step and its message.
    Failed(String),
}

/// The first step that is not complete, as `phase P, step S [STATUS] (message)`.
fn current_position(plan: &PlanStatus) -> Option<String> {
    let order = |s: ExecutionStatus| match s {
        ExecutionStatus::FatalError => 0,
        ExecutionStatus::Error => 1,
        ExecutionStatus::InProgress => 2,
        ExecutionStatus::Waiting => 3,
        ExecutionStatus::Pending => 4,
        _ => 5,
    };
    plan.phases
        .iter()
        .flat_map(|ph| ph.steps.iter().map(move |st| (ph, st)))
        .filter(|(_, st)| order(st.status()) < 5)
        .min_by_key(|(_, st)| order(st.status()))
        .map(|(ph, st)| {
            let mut text = format!("phase {}, step {} [{}]", ph.name, st.name, st.status());
            if !st.message.is_empty() {
                text.push_str(&format!(" ({})", st.message));
            }
            text
        })
}

fn failure_message(name: &str, plan: &PlanStatus) -> String {
    let failed_step = plan.phases.iter().find_map(|ph| {
        ph.steps
            .iter()
            .find(|st| st.status() == ExecutionStatus::FatalError)
            .map(|st| (ph, st))
    });
    match failed_step {
        Some((ph, st)) if !st.message.is_empty() => format!(
            "plan {name} failed (FATAL_ERROR) in phase {}, step {}: {}",
            ph.name, st.name, st.message
        ),
        Some((ph, st)) => format!(
            "plan {name} failed (FATAL_ERROR) in phase {}, step {}{}",
            ph.name,
            st.name,
            if plan.message.is_empty() {
                String::new()
            } else {
                format!(": {}", plan.message)
            }
        ),
        None if !plan.message.is_empty() => {
            format!("plan {name} failed (FATAL_ERROR): {}", plan.message)
        }
        None => format!("plan {name} failed (FATAL_ERROR)"),
    }
}

/// The blockers that keep the awaited plan from starting, once the manager
/// has seen the request: those of that plan, or, when any plan will do,
/// those of any plan and the Instance.
fn start_blockers<'s>(
    status: &'s InstanceStatus,
    baseline: &Baseline,
) -> impl Iterator<Item = &'s kudo_api::Blocker> {
    let seen = baseline
        .generation
        .is_none_or(|g| status.observed_generation.is_some_and(|o| o >= g));
    status.blockers.iter().filter(move |b| {
        seen && match (&baseline.plan, &b.plan) {
            (Some(want), Some(plan)) => want == plan,
            _ => true,
        }
    })
}

/// Why the awaited plan has not started, in the blockers' words.
pub fn not_started_reason(status: Option<&InstanceStatus>, baseline: &Baseline) -> Option<String> {
    let reasons: Vec<&str> = start_blockers(status?, baseline)
        .map(|b| b.message.as_str())
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// A hold that outlasts the wait: a maintenance window or suppression that
/// ends only after `deadline`, or only when someone clears it, or a pause.
/// Waiting longer would only repeat it.
pub fn outlasting_hold(
    status: Option<&InstanceStatus>,
    baseline: &Baseline,
    deadline: jiff::Timestamp,
) -> Option<String> {
    use kudo_api::BlockerKind;
    start_blockers(status?, baseline)
        .find(|b| match b.kind {
            BlockerKind::MaintenanceWindow | BlockerKind::Suppressed => {
                b.until.as_ref().is_none_or(|u| u.0 > deadline)
            }
            BlockerKind::Paused => true,
            _ => false,
        })
        .map(|b| b.message.clone())
}

/// Where the execution the CLI waits for stands, given the Instance status.
pub fn assess(status: Option<&InstanceStatus>, baseline: &Baseline) -> Progress {
    let Some(status) = status else {
        return Progress::NotStarted;
    };
    let mut candidates = status.plan_status.iter().filter(|(name, plan)| {
        baseline.plan.as_ref().is_none_or(|p| p == *name)
            && plan
                .uid
                .as_ref()
                .is_some_and(|u| !baseline.known_uids.contains(u))
            && plan.status() != ExecutionStatus::NeverRun
    });
    let Some((name, plan)) = candidates.next() else {
        return Progress::NotStarted;
    };
    match plan.status() {
        ExecutionStatus::Complete => Progress::Complete(format!("plan {name} is COMPLETE")),
        ExecutionStatus::FatalError => Progress::Failed(failure_message(name, plan)),
        other => {
            let mut text = format!("plan {name} [{other}]");
            if let Some(position) = current_position(plan) {
                text.push_str(": ");
                text.push_str(&position);
            }
            if let Some(blocker) = status.blockers.first() {
                text.push_str(&format!("; blocked: {}", blocker.message));
            }
            Progress::Running(text)
        }
    }
}

/// A spinner on a terminal; plain lines (only when the text changes) otherwise.
pub struct ProgressView {
    bar: Option<ProgressBar>,
    last: String,
    started: Instant,
}

impl ProgressView {
    /// Starts showing progress on stderr.
    pub fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Self {
            bar,
            last: String::new(),
            started: Instant::now(),
        }
    }

    /// Shows `text` as the current state.
    pub fn update(&mut self, text: &str) {
        if text == self.last {
            return;
        }
        self.last = text.to_string();
        match &self.bar {
            Some(bar) => bar.set_message(text.to_string()),
            None => errln!("{text} [{}s]", self.started.elapsed().as_secs()),
        }
    }

    /// Time since the view started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Removes the spinner.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Default for ProgressView {
    fn default() -> Self {
        Self::new()
    }
}

/// How often `--wait` looks at the Instance.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Polls the Instance until the awaited execution finishes. Prints a final
/// line on stderr; FATAL_ERROR and the timeout are errors.
pub async fn wait_for_plan(
    api: &Api<Instance>,
    (namespace, name): (&str, &str),
    baseline: &Baseline,
    timeout: Duration,
) -> Result<()> {
    let mut view = ProgressView::new();
    let deadline = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::try_from(timeout).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(jiff::Timestamp::MAX);
    let result = loop {
        let instance = match api.get(name).await {
            Ok(i) => i,
            Err(e) if status_code(&e) == Some(404) => {
                break Err(CliError::NotFound(format!(
                    "instance {name} was deleted while waiting for its plan"
                )));
            }
            Err(e) => break Err(CliError::api(format!("reading Instance {name}"), e)),
        };
        match assess(instance.status.as_ref(), baseline) {
            Progress::Complete(text) => {
                view.finish();
                errln!("{text} after {}s", view.elapsed().as_secs());
                break Ok(());
            }
            Progress::Failed(text) => {
                break Err(CliError::PlanFailed(format!(
                    "{text}\nsee `{}`",
                    KudoCommand::new("plan status", name).namespace(namespace)
                )));
            }
            Progress::Running(text) => view.update(&text),
            Progress::NotStarted => {
                let status = instance.status.as_ref();
                if let Some(hold) = outlasting_hold(status, baseline, deadline) {
                    break Err(CliError::Timeout(format!(
                        "the plan will not start within --wait-timeout ({}s): {hold}\nfollow it with `{}`",
                        timeout.as_secs(),
                        KudoCommand::new("plan status", name).namespace(namespace)
                    )));
                }
                match not_started_reason(status, baseline) {
                    Some(why) => view.update(&format!("waiting for the plan to start: {why}")),
                    None => view.update("waiting for the plan to start"),
                }
            }
        }
        if view.elapsed() >= timeout {
            let last = if view.last.is_empty() {
                "no progress seen".to_string()
            } else {
                view.last.clone()
            };
            break Err(CliError::Timeout(format!(
                "timed out after {}s waiting for instance {name}: {last}",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    view.finish();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use kudo_api::{PhaseStatus, StepStatus};

    fn plan(status: ExecutionStatus, uid: &str, step_message: &str) -> PlanStatus {
        PlanStatus {
            status: Some(status),
            uid: Some(uid.into()),
            phases: vec![PhaseStatus {
                name: "main".into(),
                status: Some(status),
                steps: vec![StepStatus {
                    name: "web".into(),
                    status: Some(status),
                    message: step_message.into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn status_with(name: &str, plan: PlanStatus) -> InstanceStatus {
        InstanceStatus {
            plan_status: BTreeMap::from([(name.to_string(), plan)]),
            ..Default::default()
        }
    }

    #[test]
    fn an_execution_seen_before_the_request_does_not_count() {
        let old = status_with("deploy", plan(ExecutionStatus::Complete, "u1", ""));
        let baseline = Baseline::from_status(Some(&old), None);
        assert_eq!(assess(Some(&old), &baseline), Progress::NotStarted);
        let new = status_with("deploy", plan(ExecutionStatus::Complete, "u2", ""));
        assert!(matches!(
            assess(Some(&new), &baseline),
            Progress::Complete(_)
        ));
    }

    #[test]
    fn running_progress_names_phase_step_and_message() {
        let status = status_with(
            "deploy",
            plan(
                ExecutionStatus::InProgress,
                "u1",
                "waiting for Deployment web",
            ),
        );
        assert_eq!(
            assess(Some(&status), &Baseline::default()),
            Progress::Running(
                "plan deploy [IN_PROGRESS]: phase main, step web [IN_PROGRESS] (waiting for Deployment web)"
                    .into()
            )
        );
    }

    #[test]
    fn fatal_error_fails_fast_with_the_step_message() {
        let status = status_with(
            "deploy",
            plan(ExecutionStatus::FatalError, "u1", "image not found"),
        );
        assert_eq!(
            assess(Some(&status), &Baseline::default()),
            Progress::Failed(
                "plan deploy failed (FATAL_ERROR) in phase main, step web: image not found".into()
            )
        );
    }

    #[test]
    fn waiting_for_a_named_plan_ignores_other_plans() {
        let status = status_with("deploy", plan(ExecutionStatus::Complete, "u1", ""));
        let baseline = Baseline {
            plan: Some("backup".into()),
            ..Default::default()
        };
        assert_eq!(assess(Some(&status), &baseline), Progress::NotStarted);
    }
}
