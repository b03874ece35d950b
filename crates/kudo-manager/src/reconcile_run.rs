//! The four stages of one reconcile as methods of [`Run`]: observe,
//! decide, act, record (and when to look again).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use kube::runtime::controller::Action as Requeue;
use kudo_api::Instance;
use kudo_engine::automatic::upgrades::Lifts;
use kudo_engine::{Observed, TaskKey, TaskKind, TaskOutcome};

use super::{
    DRIFT_RECHECK, IN_PROGRESS_RECHECK, MAX_ROUNDS, RECHECK_SOON, STATUS_WRITE_INTERVAL, Timing,
    Working, act, tasks_to_run, told_of_maintenance,
};
use crate::Result;
use crate::context::Context;
use crate::executor::{PassState, Recorded, run_task};
use crate::ov_verify::Verification;
use crate::recovery;

/// How often a channel move held for another Instance is looked at again:
/// a backstop for what no event announces (the Instance a dependency hold
/// names was deleted, or moved by another hand).
const HELD_MOVE_RECHECK: std::time::Duration = std::time::Duration::from_secs(300);
/// The longest wait for a hold that time lifts, against a clock that jumps.
const TIMED_HOLD_RECHECK: std::time::Duration = std::time::Duration::from_secs(3600);

/// One reconcile of one Instance: what was observed, what the engine
/// decided so far, and what the tasks did.
pub(super) struct Run {
    inst: Arc<Instance>,
    ov: Option<Arc<kudo_api::OperatorVersion>>,
    /// Whether the OperatorVersion may be used (its `package verify`).
    verification: Verification,
    notice: Option<kudo_engine::maintenance::Notice>,
    observed: Observed,
    work: Working,
    timing: Timing,
    /// The render book, read when drift is judged or a task needs it.
    book: Option<BookGuard>,
    /// What this reconcile knows about drift from the book.
    judgment: Judgment,
    /// Drift could not be read whole: look again soon.
    look_again: bool,
    /// Tasks run in this reconcile, also across a progress write (which
    /// starts `observed` afresh): each runs at most once per reconcile, so
    /// a task that waits for an object ends the reconcile.
    ran: HashSet<TaskKey>,
    pass: PassState,
    waiting_on_objects: bool,
    last_write: Instant,
    /// What lifts the hold on the channel's move, if one is held.
    held_move: Option<Lifts>,
}

type BookGuard = tokio::sync::OwnedMutexGuard<recovery::RenderBook>;

/// Drift as this reconcile judged it.
#[derive(Debug, Default)]
enum Judgment {
    /// Not looked at (recovery off, running, or the Instance going).
    #[default]
    NotWatched,
    /// Nothing changed since the last clean judgment: the book was not read.
    StillClean,
    /// Judged from the book: the versions judged when no drift was found
    /// from the caches alone.
    Judged(Option<recovery::Versions>),
}

/// The book in `slot`, read (and locked) the first time it is needed.
async fn book_in<'a>(
    slot: &'a mut Option<BookGuard>,
    ctx: &Context,
    inst: &Instance,
) -> &'a mut recovery::RenderBook {
    let guard = match slot.take() {
        Some(guard) => guard,
        None => ctx.books.of(ctx, inst).await.lock_owned().await,
    };
    slot.insert(guard)
}

impl Run {
    /// After the record: when the versions the Instance counts as for
    /// dependency holds changed from `before` (the stored status'), or its
    /// spec changed, the moves of its namespace held for it are judged
    /// again.
    pub(super) fn wake_dependents(
        &self,
        ctx: &Context,
        exists: bool,
        before: &crate::dependencies::Before,
    ) {
        if exists {
            let for_peer = self.held_move == Some(Lifts::PeerMove);
            ctx.waiting_moves.record(&self.inst, for_peer);
            let after = crate::dependencies::counted(Some(&self.work.status));
            crate::dependencies::wake_if_moved(ctx, &self.inst, before, &after);
        }
    }

    /// `status.upgrades` as observed (`None`: the Instance tracks nothing
    /// and runs what spec names), and what lifts a move held.
    pub(super) fn record_upgrades(
        &mut self,
        mut upgrades: Option<kudo_api::upgrades::UpgradeStatus>,
        held: Option<Lifts>,
    ) {
        self.held_move = held;
        // Reasons carry what a repository answered.
        if let Some(reason) = upgrades.as_mut().and_then(|u| u.reason.as_mut())
            && let std::borrow::Cow::Owned(cut) = kudo_api::message::bounded(reason)
        {
            *reason = cut;
        }
        if self.work.status.upgrades != upgrades {
            self.work.status.upgrades = upgrades;
            self.work.changed = true;
        }
    }

    /// Observe: the OperatorVersion and whether it may be used, node
    /// maintenance, the render book and drift from it. `made`: an
    /// OperatorVersion this reconcile created, used while the cache lacks it;
    /// `tracked`: the channel status this reconcile records (a move's
    /// OperatorVersion runs only while it is the package moved to).
    pub(super) async fn observe(
        ctx: &Context,
        inst: Arc<Instance>,
        made: Option<Arc<kudo_api::OperatorVersion>>,
        tracked: Option<&kudo_api::upgrades::UpgradeStatus>,
    ) -> Self {
        // The one just made is newer than the cache's, if that has it.
        let ov = made.or_else(|| ctx.operator_version_of(&inst));
        let namespace = inst.metadata.namespace.as_deref().unwrap_or("default");
        let changed = |ov: &kudo_api::OperatorVersion| {
            tracked.and_then(|t| crate::upgrades::changed_since_move(t, namespace, ov))
        };
        let verification = match &ov {
            Some(ov) => match changed(ov) {
                Some(problem) => Verification::Failed(problem),
                None => ctx.verified.check(&ctx.renders, ov).await,
            },
            None => Verification::Passed,
        };
        let notice = ctx.maintenance_notice(&inst);
        let namespace = ctx
            .namespace_counts
            .observe(&inst, ctx.engine.namespace_suppression_threshold);
        let mut observed = observed_afresh(&notice, &verification, namespace);
        let work = Working::from_stored(&inst);
        // The account the render book is read as (tasks report a failure).
        if let Err(e) = ctx.writers.prepare(&ctx.client, &inst).await {
            tracing::warn!(error = %e, "the Instance's account is not ready");
        }
        let mut book = None;
        let mut judgment = Judgment::NotWatched;
        let mut look_again = false;
        if recovery::watching(ctx, &inst, &work.status) {
            if ctx.judged_clean.still_clean(&inst, &ctx.observers) {
                judgment = Judgment::StillClean;
            } else {
                let seen = recovery::drift(ctx, &inst, book_in(&mut book, ctx, &inst).await).await;
                judgment = Judgment::Judged(seen.judged.filter(|_| seen.drift.is_empty()));
                observed.drift = seen.drift;
                look_again = seen.incomplete;
            }
        }
        Self {
            inst,
            ov,
            verification,
            notice,
            observed,
            work,
            timing: Timing::default(),
            book,
            judgment,
            look_again,
            ran: HashSet::new(),
            pass: PassState::default(),
            waiting_on_objects: false,
            last_write: Instant::now(),
            held_move: None,
        }
    }

    /// Decide: one engine pass on the working status.
    pub(super) fn decide(&mut self, ctx: &Context) {
        let Self {
            inst,
            ov,
            observed,
            work,
            timing,
            ..
        } = self;
        timing.decide(ctx, inst, ov.as_deref(), observed, work);
    }

    /// The tasks the last decision asks for that have not run yet; None
    /// when there are none, the OperatorVersion may not be used, or the
    /// reconcile ran its rounds.
    pub(super) fn tasks_to_run(&self) -> Option<Vec<TaskKey>> {
        if self.ov.is_none()
            || self.verification != Verification::Passed
            || self.timing.rounds >= MAX_ROUNDS
        {
            return None;
        }
        let todo = tasks_to_run(&self.work.actions, &self.ran);
        (!todo.is_empty()).then_some(todo)
    }

    pub(super) fn progress_write_due(&self) -> bool {
        self.last_write.elapsed() >= STATUS_WRITE_INTERVAL
    }

    /// A long run of quick steps records its progress before going on.
    /// False when the Instance is gone.
    pub(super) async fn record_progress(&mut self, ctx: &Context) -> Result<bool> {
        let started = Instant::now();
        if let Some(book) = self.book.as_mut() {
            recovery::save(ctx, &self.inst, book).await?;
        }
        let written = act(ctx, &self.inst, &self.work).await?;
        self.timing.writing += started.elapsed();
        let Some(written) = written else {
            return Ok(false);
        };
        // The working status is what was just written and its Events are
        // out; the last pass's tasks still stand (their outcomes are in the
        // working status), so no new pass is needed.
        self.inst = Arc::new(written);
        self.work.events.clear();
        self.work.changed = false;
        self.observed = observed_afresh(
            &self.notice,
            &self.verification,
            self.observed.namespace.take(),
        );
        self.last_write = Instant::now();
        Ok(true)
    }

    /// Act: run the tasks, each by the kind the engine gives it.
    pub(super) async fn act(&mut self, ctx: &Context, tasks: Vec<TaskKey>) {
        let Some(ov) = self.ov.clone() else {
            return;
        };
        self.timing.rounds += 1;
        // Tasks may change the book: a clean judgment no longer stands,
        // also if this reconcile ends in an error before its record.
        self.judgment = Judgment::NotWatched;
        ctx.judged_clean
            .forget(&crate::context::instance_key(&self.inst));
        let started = Instant::now();
        for key in tasks {
            // The working status holds what the task applied before (the
            // last pass decided from it).
            let result = match key.kind(Some(&*ov)) {
                TaskKind::PodOperation => recovery::pod_task(ctx, &self.inst, &key).await,
                TaskKind::Reapply => {
                    let book = book_in(&mut self.book, ctx, &self.inst).await;
                    recovery::reapply(ctx, &self.inst, &self.work.status, book, &key).await
                }
                TaskKind::PlanTask | TaskKind::ChildInstance => {
                    let recorded = Recorded::of(&key, &self.work.status);
                    let mut changes = recovery::Changes::default();
                    let told = told_of_maintenance(&self.inst, &self.work.status, &key);
                    let inst = told.as_ref().unwrap_or(&self.inst);
                    let result =
                        run_task(ctx, inst, &ov, &key, recorded, &mut changes, &mut self.pass)
                            .await;
                    if !changes.is_empty() {
                        changes.record(key.plan(), book_in(&mut self.book, ctx, &self.inst).await);
                    }
                    result
                }
            };
            self.waiting_on_objects |= matches!(result.outcome, TaskOutcome::InProgress { .. });
            self.ran.insert(key.clone());
            self.observed.tasks.insert(key, result);
        }
        self.timing.executing += started.elapsed();
    }

    /// No plan work this time: Ready follows what the last plan applied.
    pub(super) async fn observe_readiness(&mut self, ctx: &Context) {
        if self.ran.is_empty()
            && self.inst.metadata.deletion_timestamp.is_none()
            && let Some(conditions) =
                crate::readiness::workload_condition(ctx, &self.inst, &self.work.status).await
        {
            self.work.status.conditions = conditions;
            self.work.changed = true;
        }
    }

    /// Record: the render book, then status, finalizer and Events in one
    /// write. False when the Instance is gone.
    pub(super) async fn record(&mut self, ctx: &Context) -> Result<bool> {
        let started = Instant::now();
        if self.inst.metadata.deletion_timestamp.is_none()
            && let Some(book) = self.book.as_mut()
        {
            recovery::save(ctx, &self.inst, book).await?;
        }
        let exists = act(ctx, &self.inst, &self.work).await?.is_some();
        // An Instance with nothing to run keeps no render book in memory
        // (it is saved): the next reconcile reads it from its Secret.
        let idle = self.ran.is_empty()
            && self.inst.metadata.deletion_timestamp.is_none()
            && !self
                .work
                .actions
                .iter()
                .any(|a| matches!(a, kudo_engine::Action::RunTask { .. }));
        if !exists {
            ctx.forget_instance(&self.inst);
        } else if idle {
            ctx.books
                .forget(self.inst.metadata.uid.as_deref().unwrap_or_default());
        }
        self.remember_judgment(ctx, exists && idle);
        self.timing.writing += started.elapsed();
        tracing::debug!(
            rounds = self.timing.rounds,
            tasks = self.ran.len(),
            decisions = self.timing.decisions,
            deciding = ?self.timing.deciding,
            executing = ?self.timing.executing,
            writing = ?self.timing.writing,
            "decided and executed"
        );
        Ok(exists)
    }

    /// Keeps a clean judgment for the next reconcile, or forgets it when
    /// tasks ran (the book may have changed) or drift was not judged clean.
    fn remember_judgment(&mut self, ctx: &Context, idle: bool) {
        match std::mem::take(&mut self.judgment) {
            Judgment::StillClean if idle => {}
            Judgment::Judged(Some(versions)) if idle => {
                ctx.judged_clean.remember(&self.inst, versions);
            }
            _ => ctx
                .judged_clean
                .forget(&crate::context::instance_key(&self.inst)),
        }
    }

    /// When to look again: what the engine asked for, sooner while a task
    /// waits for objects or for what no watch reports, and after a plan
    /// to see drift that happened while it ran.
    pub(super) fn requeue(&self, ctx: &Context, exists: bool) -> Requeue {
        let mut requeue = match (self.work.requeue_after, self.waiting_on_objects && exists) {
            (Some(d), true) => Some(d.min(IN_PROGRESS_RECHECK)),
            (Some(d), false) => Some(d),
            (None, true) => Some(IN_PROGRESS_RECHECK),
            (None, false) => None,
        };
        let verifying = matches!(self.verification, Verification::Unfinished(_));
        if (self.pass.recheck_soon || verifying) && exists {
            requeue = Some(requeue.map_or(RECHECK_SOON, |d| d.min(RECHECK_SOON)));
        }
        if (self.look_again || !self.ran.is_empty())
            && exists
            && recovery::watching(ctx, &self.inst, &self.work.status)
        {
            requeue = Some(requeue.map_or(DRIFT_RECHECK, |d| d.min(DRIFT_RECHECK)));
        }
        if let Some(recheck) = self.held_move_recheck(ctx).filter(|_| exists) {
            requeue = Some(requeue.map_or(recheck, |d| d.min(recheck)));
        }
        requeue.map_or_else(Requeue::await_change, Requeue::requeue)
    }

    /// When a held channel move is looked at again: when time lifts its
    /// hold, soon after the plan it waited for ended, now and then while
    /// it waits for another Instance. A hold only a change lifts needs no
    /// timer: the change triggers a reconcile.
    fn held_move_recheck(&self, ctx: &Context) -> Option<std::time::Duration> {
        match self.held_move? {
            Lifts::Change => None,
            Lifts::At(at) => {
                let left = at.duration_since(ctx.clock.now());
                let left = std::time::Duration::try_from(left).unwrap_or_default();
                Some(left.clamp(RECHECK_SOON, TIMED_HOLD_RECHECK))
            }
            Lifts::PlanEnd => {
                let running = self
                    .work
                    .status
                    .active_plan
                    .as_ref()
                    .is_some_and(|p| p.status.is_running());
                // A running plan brings its own reconciles until it ends.
                (!running).then_some(RECHECK_SOON)
            }
            Lifts::PeerMove => Some(HELD_MOVE_RECHECK),
        }
    }
}

/// What a pass starts from before its tasks report: the maintenance notice,
/// whether the OperatorVersion may be used, and the namespace's holds.
fn observed_afresh(
    notice: &Option<kudo_engine::maintenance::Notice>,
    verification: &Verification,
    namespace: Option<kudo_engine::namespace::NamespaceSuppressions>,
) -> Observed {
    Observed {
        maintenance: notice.clone(),
        operator_version_problem: verification.problem(),
        operator_version_pending: matches!(verification, Verification::Unfinished(_)),
        namespace,
        ..Observed::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reconcile that moves an Instance to a channel's release records
    /// the package's digest in the status it writes at its end; the
    /// OperatorVersion it runs meanwhile is judged by that status, not the
    /// stored one (which names no digest yet).
    #[tokio::test]
    async fn the_reconcile_that_moves_runs_the_new_version_only_while_it_is_the_package() {
        // Nothing listens there: requests fail at once.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let ctx = Context::for_tests(kube::Client::try_from(config).unwrap());
        let version = |template: &str| {
            let mut ov = kudo_api::OperatorVersion::new("web-0.3.0", Default::default());
            ov.metadata.namespace = Some("team".into());
            ov.spec.templates.insert("cm.yaml".into(), template.into());
            Arc::new(ov)
        };
        let package = version("a: 1");
        let mut inst = Instance::new("web", Default::default());
        inst.metadata.namespace = Some("team".into());
        inst.spec.operator_version.name = Some("web-0.3.0".into());
        let tracked = kudo_api::upgrades::UpgradeStatus {
            operator_version: Some("web-0.3.0".into()),
            operator_version_digest: Some(crate::upgrades::spec_digest(&package.spec)),
            ..Default::default()
        };
        let inst = Arc::new(inst);
        let changed = Some(version("a: 2"));
        let run = Run::observe(&ctx, inst.clone(), changed, Some(&tracked)).await;
        let Verification::Failed(problem) = &run.verification else {
            panic!("a changed version was let run: {:?}", run.verification)
        };
        assert!(
            problem.contains("was changed since its channel moved"),
            "{problem}"
        );
        let run = Run::observe(&ctx, inst, Some(package), Some(&tracked)).await;
        assert!(
            !matches!(&run.verification, Verification::Failed(p) if p.contains("was changed")),
            "{:?}",
            run.verification
        );
    }
}
