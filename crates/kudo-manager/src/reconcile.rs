//! One reconcile of one Instance: observe → decide → act (run the tasks
//! the engine chose, deciding again after each round until nothing new is
//! to run) → record (status, finalizer and Events in one write) → requeue
//! only when the decision asks.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::reflector::ObjectRef;
use kudo_api::names::CLEANUP_FINALIZER;
use kudo_api::status_size::{SOFT_LIMIT, is_too_large};
use kudo_api::{Instance, InstanceStatus};
use kudo_engine::{Action, EventType, Input, Observed, TaskKey};
use tracing::Instrument;

use crate::context::{Context, instance_key};
use crate::status_patch::{add_finalizer, remove_finalizer};
use crate::{Error, Result};

#[path = "reconcile_events.rs"]
mod events;
#[path = "reconcile_run.rs"]
mod run;
#[path = "reconcile_writes.rs"]
mod writes;
pub(crate) use events::publish;
use run::Run;
use writes::{fitted, fitted_again, patch_json, write_status};

/// Upper bound of decide/execute rounds in one reconcile (a plan of many
/// instantly-done steps advances this many steps per reconcile).
const MAX_ROUNDS: usize = 500;
/// While a task waits for an object the watches may not cover (cluster-scoped,
/// not owned), look again after this long.
const IN_PROGRESS_RECHECK: Duration = Duration::from_secs(10);

/// When a task waits for what no watch reports (a CRD becoming
/// Established, a new kind being served): usually well under a second.
/// Also the wait before a channel move held for a plan is looked at again
/// once that plan ended, and the shortest wait for a hold time lifts.
const RECHECK_SOON: Duration = Duration::from_secs(1);
/// A reconcile that keeps running quick steps writes status when this much
/// time has passed since it started or last wrote, before the next task:
/// progress shows in `kubectl kudo plan status`, and a crash loses at most
/// this much recorded progress (those steps run again: their applies are
/// idempotent).
const STATUS_WRITE_INTERVAL: Duration = Duration::from_secs(1);
/// After a plan ends, look for drift again this soon: drift that happened
/// while the plan ran was left to it, and no watch event may come later.
const DRIFT_RECHECK: Duration = Duration::from_secs(5);

/// For a task of the maintenance plan started in this reconcile: the
/// Instance with the maintenance it was just told of (its templates read
/// `.Maintenance` from status, which is written after the pass).
fn told_of_maintenance(
    inst: &Arc<Instance>,
    working: &InstanceStatus,
    key: &TaskKey,
) -> Option<Arc<Instance>> {
    let stored = inst.status.as_ref().and_then(|s| s.maintenance.as_ref());
    if !key.reads_maintenance_notice() || stored == working.maintenance.as_ref() {
        return None;
    }
    let mut told = (**inst).clone();
    told.status
        .get_or_insert_with(InstanceStatus::default)
        .maintenance = working.maintenance.clone();
    Some(Arc::new(told))
}

/// Reconcile one Instance (the kube-runtime entry point).
pub async fn reconcile(cached: Arc<Instance>, ctx: Arc<Context>) -> Result<Requeue> {
    let started = Instant::now();
    let span = tracing::info_span!(
        "reconcile",
        instance = %format!("{}/{}", cached.namespace().unwrap_or_default(), cached.name_any())
    );
    let key = instance_key(&cached);
    let res = reconcile_inner(cached, &ctx).instrument(span.clone()).await;
    if res.is_ok() {
        ctx.failures.forget(&key);
    }
    ctx.metrics.observe_reconcile(started.elapsed());
    span.in_scope(|| tracing::debug!(result = ?res, "reconciled"));
    res
}

/// Which copy of the Instance a reconcile starts from.
enum Copy {
    /// The cache's: no write of ours is waiting to show in it.
    Cached(Arc<Instance>),
    /// Our own last write: the cache still holds a version it replaced.
    OurWrite(Arc<Instance>),
    /// The cache holds a version that is neither one our last write
    /// replaced nor the one it made: older or newer, it cannot tell.
    Unsure(Arc<Instance>),
}

fn current_copy(ctx: &Context, cached: Arc<Instance>) -> Copy {
    let key = ObjectRef::from_obj(cached.as_ref());
    let Ok(mut written) = ctx.written.lock() else {
        return Copy::Cached(cached);
    };
    let cached_rv = cached.resource_version().unwrap_or_default();
    match written.get(&key) {
        Some((stale, fresh)) if stale.contains(&cached_rv) => Copy::OurWrite(fresh.clone()),
        Some((_, fresh)) if fresh.resource_version().as_deref() == Some(cached_rv.as_str()) => {
            written.remove(&key);
            Copy::Cached(cached)
        }
        Some(_) => {
            written.remove(&key);
            Copy::Unsure(cached)
        }
        None => Copy::Cached(cached),
    }
}

/// The Instance to reconcile: a status decided from a version older than
/// our own last write would run finished steps again, so a cached version
/// that cannot be placed is read again from the API server. `None` once
/// the Instance is gone.
async fn starting_copy(ctx: &Context, cached: Arc<Instance>) -> Result<Option<Arc<Instance>>> {
    match current_copy(ctx, cached) {
        Copy::Cached(inst) | Copy::OurWrite(inst) => Ok(Some(inst)),
        Copy::Unsure(inst) => {
            let ns = inst.namespace().unwrap_or_default();
            let api: Api<Instance> = Api::namespaced(ctx.client.clone(), &ns);
            let name = inst.name_any();
            match api.get_opt(&name).await {
                Ok(Some(mut read)) => {
                    // The cache drops them too; nothing reads them.
                    read.managed_fields_mut().clear();
                    Ok(Some(Arc::new(read)))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(Error::kube(format!("reading Instance {ns}/{name}"), e)),
            }
        }
    }
}

async fn reconcile_inner(cached: Arc<Instance>, ctx: &Context) -> Result<Requeue> {
    let Some(inst) = starting_copy(ctx, cached).await? else {
        return Ok(Requeue::await_change());
    };
    let before = crate::dependencies::Before::of(&inst);
    let tracked = crate::upgrades::observe(ctx, inst).await;
    if let Some(message) = &tracked.started {
        publish(
            ctx,
            &tracked.instance,
            EventType::Normal,
            "UpgradeStarted",
            message,
        )
        .await;
    }
    let mut run = Run::observe(ctx, tracked.instance, tracked.made, tracked.status.as_ref()).await;
    run.record_upgrades(tracked.status, tracked.held);
    run.decide(ctx);
    // A plan of quick steps advances several steps per reconcile: decide
    // again after each round of tasks, writing progress now and then.
    while let Some(tasks) = run.tasks_to_run() {
        if run.progress_write_due() && !run.record_progress(ctx).await? {
            return Ok(Requeue::await_change());
        }
        run.act(ctx, tasks).await;
        run.decide(ctx);
    }
    run.observe_readiness(ctx).await;
    let exists = run.record(ctx).await?;
    run.wake_dependents(ctx, exists, &before);
    Ok(run.requeue(ctx, exists))
}

/// What the passes of one reconcile have decided so far. The status is a
/// working copy carried from pass to pass (`decide_in_place`), cloned from
/// the stored one once per reconcile; Events accumulate over the passes
/// (a pass does not repeat what an earlier one already recorded), the other
/// actions and the requeue are the last pass's.
#[derive(Debug)]
struct Working {
    status: InstanceStatus,
    actions: Vec<Action>,
    events: Vec<Action>,
    requeue_after: Option<Duration>,
    /// Some pass changed the status since it was last written or read.
    changed: bool,
}

impl Working {
    fn from_stored(inst: &Instance) -> Self {
        Self {
            status: inst.status.clone().unwrap_or_default(),
            actions: Vec::new(),
            events: Vec::new(),
            requeue_after: None,
            changed: false,
        }
    }

    fn absorb(&mut self, effects: kudo_engine::Effects) {
        self.changed |= effects.changed;
        self.requeue_after = effects.requeue_after;
        self.actions.clear();
        for action in effects.actions {
            match action {
                Action::Event { .. } if self.events.contains(&action) => {}
                Action::Event { .. } => self.events.push(action),
                other => self.actions.push(other),
            }
        }
    }
}

/// The tasks the last pass asks for that this reconcile has not run yet.
fn tasks_to_run(actions: &[Action], ran: &HashSet<TaskKey>) -> Vec<TaskKey> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::RunTask { key } if !ran.contains(key) => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// Where the time of one reconcile went (for the debug log).
#[derive(Debug, Default)]
struct Timing {
    rounds: usize,
    decisions: usize,
    deciding: Duration,
    executing: Duration,
    writing: Duration,
}

impl Timing {
    fn decide(
        &mut self,
        ctx: &Context,
        inst: &Instance,
        ov: Option<&kudo_api::OperatorVersion>,
        observed: &Observed,
        work: &mut Working,
    ) {
        let started = Instant::now();
        decide(ctx, inst, ov, observed, work);
        self.deciding += started.elapsed();
        self.decisions += 1;
    }
}

/// One engine pass on the working status (the stored status in `inst` is
/// not read by the engine here).
fn decide(
    ctx: &Context,
    inst: &Instance,
    ov: Option<&kudo_api::OperatorVersion>,
    observed: &Observed,
    work: &mut Working,
) {
    ctx.metrics.decisions.inc();
    let input = Input {
        instance: inst,
        operator_version: ov,
        observed,
        now: ctx.clock.now(),
        config: &ctx.engine,
    };
    let effects = kudo_engine::decide_in_place(input, &mut work.status);
    work.absorb(effects);
}

/// Carry out the decisions' side effects. Returns the Instance as it is
/// afterwards (as written, or unchanged), `None` once it is gone.
async fn act(ctx: &Context, inst: &Instance, work: &Working) -> Result<Option<Instance>> {
    let ns = inst.namespace().unwrap_or_default();
    let name = inst.name_any();
    let api: Api<Instance> = Api::namespaced(ctx.client.clone(), &ns);
    let label = format!("Instance {ns}/{name}");
    let mut current = inst.clone();
    // Watch events of these writes can overtake their responses; they wait
    // for the version to be recorded instead of starting another reconcile.
    let writing = ctx.own_instance_writes.start(inst.metadata.uid.as_deref());
    let remove_finalizer_requested = work.actions.contains(&Action::RemoveFinalizer);

    if work.actions.contains(&Action::AddFinalizer)
        && !inst.finalizers().iter().any(|f| f == CLEANUP_FINALIZER)
    {
        let finalizers = inst.metadata.finalizers.as_deref();
        let patch = add_finalizer(finalizers, CLEANUP_FINALIZER);
        current = patch_json(&api, &name, patch)
            .await
            .map_err(|e| Error::kube(format!("adding the cleanup finalizer to {label}"), e))?;
        record_own_write(ctx, &current);
        remember_write(ctx, inst, &current);
    }

    let empty = InstanceStatus::default();
    let stored = inst.status.as_ref().unwrap_or(&empty);
    // No pass changed anything: skip the (deep) comparison.
    if work.changed && work.status != *stored {
        let fitted = fitted(&work.status, SOFT_LIMIT, &label);
        let status = fitted.as_ref().unwrap_or(&work.status);
        let mut response = write_status(&api, &name, &label, stored, status).await?;
        if let Err(kube::Error::Api(s)) = &response
            && is_too_large(s.code, &s.message)
            && let Some(smaller) = fitted_again(status, &label)
        {
            response = write_status(&api, &name, &label, stored, &smaller).await?;
        }
        match response {
            Ok(written) => {
                record_own_write(ctx, &written);
                remember_write(ctx, &current, &written);
                current = written;
            }
            // Gone already (finalizer removed elsewhere): nothing to record.
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => return Err(Error::kube(format!("writing the status of {label}"), e)),
        }
        count_plans(ctx, inst, stored, &work.status);
    }

    drop(writing);
    for action in &work.events {
        if let Action::Event {
            event_type,
            reason,
            message,
        } = action
        {
            publish(ctx, inst, *event_type, reason, message).await;
        }
    }

    if remove_finalizer_requested
        && let Some(patch) = remove_finalizer(current.finalizers(), CLEANUP_FINALIZER)
    {
        // The engine lists the cluster-scoped objects to delete first (the
        // garbage collector cannot reach them through an owner reference).
        for action in &work.actions {
            let Action::DeleteClusterScoped { objects } = action else {
                continue;
            };
            match ctx.writers.for_instance(&ctx.client, inst) {
                // A failure a retry can fix keeps the finalizer: the error
                // requeues this Instance (with backoff) and the deletes run again.
                Ok(writer) => {
                    crate::executor::delete_cluster_scoped(ctx, &writer, inst, objects).await?
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cluster-scoped objects of the removed Instance kept")
                }
            }
        }
        match patch_json(&api, &name, patch).await {
            Ok(_) => {
                tracing::info!("removed the cleanup finalizer");
                return Ok(None);
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => {
                return Err(Error::kube(
                    format!("removing the cleanup finalizer from {label}"),
                    e,
                ));
            }
        }
    }
    Ok(Some(current))
}

/// The watch event of our own write needs no reconcile (see [`crate::context::OwnWrites`]).
fn record_own_write(ctx: &Context, written: &Instance) {
    ctx.own_instance_writes.record(
        written.metadata.uid.as_deref(),
        written.metadata.resource_version.as_deref(),
    );
}

/// The cache holds `inst` at this version now: a copy kept of our own
/// write at that version is no longer needed (so the copies kept are the
/// writes the cache has not caught up with, not one per Instance).
pub(crate) fn caught_up(ctx: &Context, inst: &Instance) {
    let Ok(mut written) = ctx.written.lock() else {
        return;
    };
    let key = ObjectRef::from_obj(inst);
    let fresh_rv = written
        .get(&key)
        .and_then(|(_, fresh)| fresh.resource_version());
    if fresh_rv.is_some() && fresh_rv == inst.resource_version() {
        written.remove(&key);
    }
}

fn remember_write(ctx: &Context, before: &Instance, after: &Instance) {
    let (Some(rv), Ok(mut written)) = (before.resource_version(), ctx.written.lock()) else {
        return;
    };
    let key = ObjectRef::from_obj(before);
    let mut stale = match written.remove(&key) {
        // A second write in a row: versions before the first are stale too.
        Some((stale, fresh)) if fresh.resource_version().as_ref() == Some(&rv) => stale,
        _ => Vec::new(),
    };
    stale.push(rv);
    written.insert(key, (stale, Arc::new(after.clone())));
}

/// Plans started / finished and the active-plans gauge, from the status
/// change of every plan (recovery runs beside another plan).
fn count_plans(ctx: &Context, inst: &Instance, old: &InstanceStatus, new: &InstanceStatus) {
    for (name, plan) in &new.plan_status {
        let Some(uid) = plan.uid.as_deref() else {
            continue;
        };
        let before = old.plan_status.get(name);
        let same_run = before.is_some_and(|b| b.uid.as_deref() == Some(uid));
        if !same_run {
            ctx.metrics.plan_started(name);
        }
        let was_running = same_run && before.is_some_and(|b| b.status().is_running());
        if plan.status().is_terminal() && (was_running || !same_run) {
            ctx.metrics.plan_finished(name, &plan.status().to_string());
        }
    }
    let running = new
        .plan_status
        .values()
        .filter(|p| p.status().is_running())
        .count();
    ctx.set_running_plans(inst, running);
}

/// What to do after a failed reconcile: transient errors retry soon, the
/// rest later (a person has to act, the watch brings the fix), each later
/// with every failure of the Instance in a row.
pub fn error_policy(inst: Arc<Instance>, err: &Error, ctx: Arc<Context>) -> Requeue {
    ctx.metrics.count_error(err.metric_kind());
    let failures = ctx.failures.failed(instance_key(&inst));
    let wait = crate::retry::retry_after(err.is_transient(), failures);
    tracing::warn!(error = %err, transient = err.is_transient(), failures, retry_in = ?wait, "reconcile failed");
    Requeue::requeue(wait)
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
