//! Node maintenance (Mesos' primitives on Kubernetes): a controller of the
//! one `MaintenanceSchedule`, run by the leader beside the Instance
//! controller.
//!
//! ```text
//! MaintenanceSchedule spec ─► targets (engine) ─► Node taints / annotations / cordon
//!                                             └─► Down: evictions (Eviction API, PDBs respected)
//! pods on scheduled nodes ─► affected Instances ─► status.instances ─► Instance controller
//!                                                      ▲                  (notice → maintenance plan)
//! Instance status.maintenance (the answer) ────────────┘
//! ```
//!
//! Everything is judged again from the schedule's spec, the Nodes and the
//! pods on every pass, so a manager killed in the middle of a drain goes
//! on where it stopped. The pure rules are `kudo_engine::maintenance`.

mod affected;
mod drain;
mod pass;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::controller::Action as Requeue;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Client, ResourceExt};
use kudo_api::maintenance::SCHEDULE_NAME;
use kudo_api::names::API_VERSION;
use kudo_api::{Instance, MaintenanceSchedule};
use tracing::Instrument;

use crate::{Error, Result};

/// While nothing is draining, look again this often: pods move onto
/// scheduled nodes and nodes register without any event this controller
/// watches.
const IDLE_RECHECK: Duration = Duration::from_secs(30);
/// While a Down node still has pods (evictions under way or refused by a
/// budget), look again this soon.
const DRAIN_RECHECK: Duration = Duration::from_secs(3);

/// What the schedule's reconcile needs.
struct Ctx {
    client: Client,
}

/// Whether the MaintenanceSchedule CRD is served (older installs lack it:
/// node maintenance is then off, said once here, and the rest of the
/// manager runs).
pub async fn served(client: &Client) -> bool {
    let cache = crate::discovery::ApiCache::new(client.clone());
    let served = matches!(
        cache.resolve(API_VERSION, "MaintenanceSchedule").await,
        Ok(Some(_))
    );
    if !served {
        tracing::warn!(
            "the MaintenanceSchedule CRD is not installed; node maintenance is off \
             (kubectl kudo init --upgrade installs it)"
        );
    }
    served
}

/// Runs the schedule's controller until `shutdown` completes; call it only
/// when [`served`] said the CRD is there.
pub async fn run(client: Client, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let schedules = Api::<MaintenanceSchedule>::all(client.clone());
    let instances = Api::<Instance>::all(client.clone());
    let ctx = Arc::new(Ctx { client });
    Controller::new(schedules, watcher::Config::default())
        // An Instance's answer changes in its status.
        .watches(instances, watcher::Config::default(), |inst: Instance| {
            inst.status
                .as_ref()
                .and_then(|s| s.maintenance.as_ref())
                .map(|_| ObjectRef::new(SCHEDULE_NAME))
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "maintenance controller event");
            }
        })
        .await;
}

async fn reconcile(schedule: Arc<MaintenanceSchedule>, ctx: Arc<Ctx>) -> Result<Requeue> {
    let span = tracing::info_span!("maintenance", schedule = %schedule.name_any());
    let outcome = pass::run(&ctx.client, &schedule).instrument(span).await?;
    Ok(if outcome.draining {
        Requeue::requeue(DRAIN_RECHECK)
    } else if outcome.scheduled {
        Requeue::requeue(IDLE_RECHECK)
    } else {
        Requeue::await_change()
    })
}

fn error_policy(_schedule: Arc<MaintenanceSchedule>, err: &Error, _ctx: Arc<Ctx>) -> Requeue {
    tracing::warn!(error = %err, "node maintenance pass failed");
    Requeue::requeue(if err.is_transient() {
        DRAIN_RECHECK
    } else {
        IDLE_RECHECK
    })
}
