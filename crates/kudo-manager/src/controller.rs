//! The kube-runtime Controller: Instances, the OperatorVersions they name
//! (mapped through the Instance cache, not a list per event), and the
//! owned objects whose health can change after they are applied.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service, ServiceAccount};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use kudo_api::names::API_VERSION;
use kudo_api::{Instance, MaintenanceSchedule, OperatorVersion};
use kudo_engine::EngineConfig;

use crate::admin::{ControllerState, Readiness};
use crate::context::Context;
use crate::metrics::Metrics;
use crate::reconcile::{error_policy, reconcile};
use crate::recovery::Observers;
use crate::{Error, Result};
use watches::{
    Cache, CacheSync, may_list, not_own_applies, owned, owned_if, parents, references, told_of,
};

/// How long an Instance event waits for the response of our own write
/// under way to the same Instance (it usually arrives within a millisecond);
/// other Instances' events are judged meanwhile.
const OWN_WRITE_WAIT: std::time::Duration = std::time::Duration::from_millis(200);
/// How long running reconciles may take to finish after shutdown was asked.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(20);

/// Settings of [`run`].
#[derive(Debug, Clone, Default)]
pub struct ControllerConfig {
    /// Engine settings.
    pub engine: EngineConfig,
    /// Reconciles run at the same time (0 = unbounded).
    pub concurrency: u16,
    /// Whom the objects of Instances that name no ServiceAccount are
    /// written as (default: `kudo-instance` of their namespace, made by the
    /// manager).
    pub write_as: crate::identity::WriteAs,
    /// Render budgets.
    pub render_limits: kudo_package::render::RenderLimits,
    /// Longest a render may take (None: 10 s).
    pub render_deadline: Option<std::time::Duration>,
    /// Secret (`namespace`, `name`) holding the key that signs render
    /// books, made on first start; None: a key in memory (books written
    /// before a restart are not trusted).
    pub book_key_secret: Option<(String, String)>,
    /// The time of day (tests set it; default: the system's).
    pub clock: crate::clock::Clock,
    /// Where the Secrets OperatorRepositories name live (default: the
    /// namespace of `book_key_secret`, the manager's).
    pub secrets_namespace: Option<String>,
}

/// Fail with a clear message when the kudo.dev CRDs are not installed.
pub async fn check_crds(client: &Client) -> Result<()> {
    let cache = crate::discovery::ApiCache::new(client.clone());
    for (kind, plural) in [
        ("Operator", "operators"),
        ("OperatorVersion", "operatorversions"),
        ("Instance", "instances"),
    ] {
        match cache.resolve(API_VERSION, kind).await {
            Ok(Some(_)) => {}
            Ok(None) => return Err(Error::CrdMissing(format!("{plural}.kudo.dev"))),
            Err(e) => {
                return Err(Error::kube(
                    "checking that the kudo.dev CRDs are installed",
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// The `kudo-instance` ClusterRole the accounts the manager makes are bound
/// to: made here when missing and the manager may (an administrator's
/// kubeconfig), else a clear error (a RoleBinding to a missing role grants
/// nothing, and every write would be refused).
async fn check_instance_role(client: &Client) -> Result<()> {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let name = kudo_api::names::INSTANCE_ROLE;
    let api: Api<ClusterRole> = Api::all(client.clone());
    match api.get_opt(name).await {
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
        Err(e) => {
            return Err(Error::kube(format!("reading ClusterRole {name}"), e));
        }
    }
    let missing = |why: String| {
        Error::Config(format!(
            "ClusterRole {name} is missing ({why}): Instances' objects are written as the \
             kudo-instance account of their namespace, bound to it; install it with \
             `kubectl kudo init` (or `init --crd-only`), or start the manager with \
             --manager-writes-as-itself"
        ))
    };
    let role: ClusterRole = serde_json::from_value(kudo_api::rbac::instance_cluster_role())
        .map_err(|e| missing(e.to_string()))?;
    api.create(&kube::api::PostParams::default(), &role)
        .await
        .map(|_| tracing::info!("made ClusterRole {name}"))
        .or_else(|e| match e {
            kube::Error::Api(s) if s.code == 409 => Ok(()),
            other => Err(missing(format!("and it cannot be made: {other}"))),
        })
}

/// Run the controller until `shutdown` resolves. `ready` turns true once
/// the Instance and OperatorVersion caches have synced.
pub async fn run(
    client: Client,
    config: ControllerConfig,
    metrics: Metrics,
    ready: Readiness,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<()> {
    check_crds(&client).await?;
    if matches!(
        config.write_as,
        crate::identity::WriteAs::Account { create: true, .. }
    ) {
        check_instance_role(&client).await?;
    }
    let book_key = match &config.book_key_secret {
        Some((namespace, name)) => {
            match crate::recovery::BookKey::load_or_create(&client, namespace, name).await {
                Ok(key) => key,
                Err(e) => {
                    tracing::warn!(error = %e, "render book key kept in memory: books written before a restart will not be trusted");
                    crate::recovery::BookKey::random()
                }
            }
        }
        None => crate::recovery::BookKey::random(),
    };
    let shutdown = futures::FutureExt::shared(shutdown);
    let client_for_maintenance = client.clone();

    ready.set_controller(ControllerState::Syncing);
    let synced = CacheSync::new(ready.clone());
    let (ov_store, ov_writer) = reflector::store::<OperatorVersion>();
    let ov_events = reflector::reflector(
        ov_writer,
        watcher(
            Api::<OperatorVersion>::all(client.clone()),
            watcher::Config::default(),
        )
        .inspect_ok(synced.marker(Cache::OperatorVersions)),
    )
    .default_backoff()
    .touched_objects();

    let mut observers = Observers::default();
    let deployments = owned::<Deployment>(&client, &mut observers, "apps", true);
    let statefulsets = owned::<StatefulSet>(&client, &mut observers, "apps", true);
    let daemonsets = owned::<DaemonSet>(&client, &mut observers, "apps", true);
    let services = owned::<Service>(&client, &mut observers, "", true);
    // Watched for drift only where the manager may list them (a manager
    // that writes as Instances' accounts has no right on Secrets).
    let (may_list_config_maps, may_list_secrets, may_list_accounts) = futures::join!(
        may_list::<ConfigMap>(&client),
        may_list::<Secret>(&client),
        may_list::<ServiceAccount>(&client)
    );
    let config_maps = owned_if::<ConfigMap>(may_list_config_maps, &client, &mut observers);
    let secrets = owned_if::<Secret>(may_list_secrets, &client, &mut observers);
    let accounts = owned_if::<ServiceAccount>(may_list_accounts, &client, &mut observers);
    // Jobs and Pods run to completion and may be removed on purpose (a Job's
    // TTL): watched for health, never recovered.
    let jobs = owned::<Job>(&client, &mut observers, "batch", false);
    let pods = owned::<Pod>(&client, &mut observers, "", false);
    // Node maintenance: the schedule's status names the Instances with pods
    // on scheduled nodes; a change of it reconciles them (and those told
    // before, so a lifted maintenance is cleared).
    let (schedules, schedule_writer) = reflector::store::<MaintenanceSchedule>();
    let maintenance_on = crate::maintenance::served(&client).await;
    let schedule_events = if maintenance_on {
        reflector::reflector(
            schedule_writer,
            watcher(
                Api::<MaintenanceSchedule>::all(client.clone()),
                watcher::Config::default(),
            ),
        )
        .default_backoff()
        .touched_objects()
        .boxed()
    } else {
        futures::stream::pending().boxed()
    };
    let repositories_on = crate::repositories::served(&client).await;
    let indexes = crate::repositories::Indexes::default();
    let secrets_namespace = config
        .secrets_namespace
        .clone()
        .or_else(|| config.book_key_secret.as_ref().map(|(ns, _)| ns.clone()));
    let (instances, instance_writer) = reflector::store::<Instance>();
    let ctx = Arc::new(
        Context::new(client.clone(), metrics, config.engine, ov_store.clone())
            .with_instances(instances.clone())
            .with_schedules(schedules)
            .with_repositories(indexes.clone())
            .with_write_as(config.write_as)
            .with_book_key(book_key)
            .with_render_limits(config.render_limits)
            .with_render_deadline(
                config
                    .render_deadline
                    .unwrap_or(crate::render_pool::DEFAULT_DEADLINE),
            )
            .with_observers(observers)
            .with_clock(config.clock),
    );
    // Our own status writes update the cache but trigger nothing. The cache
    // is updated before the filter, so events may be judged concurrently
    // (one waiting for our write's response does not hold up the others).
    let instance_events = watcher(
        Api::<Instance>::all(client.clone()),
        watcher::Config::default(),
    )
    .inspect_ok(synced.marker(Cache::Instances))
    .inspect_ok({
        let ctx = ctx.clone();
        move |event| ctx.namespace_counts.apply(event)
    })
    .default_backoff()
    // Nothing reads an Instance's field managers; at scale they are a
    // good part of the cache.
    .modify(|i| i.managed_fields_mut().clear())
    .reflect(instance_writer)
    .applied_objects()
    .map_ok({
        let ctx = ctx.clone();
        move |i| {
            let ctx = ctx.clone();
            async move {
                let own = ctx
                    .own_instance_writes
                    .is_own_after_writes(
                        i.metadata.uid.as_deref(),
                        i.metadata.resource_version.as_deref(),
                        OWN_WRITE_WAIT,
                    )
                    .await;
                if own {
                    // The cache has our write now (it is updated before
                    // this filter).
                    crate::reconcile::caught_up(&ctx, &i);
                }
                Ok((!own).then_some(i))
            }
        }
    })
    .try_buffer_unordered(64)
    .try_filter_map(|i| std::future::ready(Ok(i)));
    let controller = Controller::for_stream(instance_events, instances.clone())
        .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency));

    let repository_events = if repositories_on {
        watcher(
            Api::<kudo_api::OperatorRepository>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .touched_objects()
        .boxed()
    } else {
        futures::stream::pending().boxed()
    };
    let namespace_triggers = ctx
        .namespace_counts
        .triggers(&client, may_list::<Namespace>(&client).await);
    let by_ov = instances.clone();
    let moves = ctx.clone();
    // Owned kinds whose health can change after they are applied, and the
    // kinds whose drift is recovered (their metadata, managed fields
    // included, is cached for that). Our own applies trigger nothing. A step
    // waiting on an unwatched object (a custom health rule) is rechecked on
    // a timer instead.
    let running = controller
        .owns_stream(not_own_applies(deployments, &ctx))
        .owns_stream(not_own_applies(statefulsets, &ctx))
        .owns_stream(not_own_applies(daemonsets, &ctx))
        .owns_stream(not_own_applies(jobs, &ctx))
        .owns_stream(not_own_applies(services, &ctx))
        .owns_stream(not_own_applies(pods, &ctx))
        .owns_stream(not_own_applies(config_maps, &ctx))
        .owns_stream(not_own_applies(secrets, &ctx))
        .owns_stream(not_own_applies(accounts, &ctx))
        .watches_stream(ov_events, move |ov: OperatorVersion| {
            let (name, ns) = (ov.name_any(), ov.namespace());
            // Those it names, and those whose channel move it holds up.
            let waits = |i: &Instance| {
                ns.as_deref().is_some_and(|ns| {
                    i.metadata.namespace.as_deref() == Some(ns)
                        && moves.moves.waits_for(ns, &name, &i.name_any())
                })
            };
            by_ov
                .state()
                .into_iter()
                .filter(|i| references(i, &name, ns.as_deref()) || waits(i))
                .map(|i| ObjectRef::from_obj(i.as_ref()))
                .collect::<Vec<_>>()
        })
        // Child Instances carry a non-controller owner reference to their
        // parent; their metadata is enough to map them.
        .watches_stream(
            not_own_applies(
                watcher(
                    Api::<PartialObjectMeta<Instance>>::all(client),
                    watcher::Config::default(),
                )
                .default_backoff()
                .touched_objects(),
                &ctx,
            ),
            |child: PartialObjectMeta<Instance>| parents(&child),
        )
        // A repository's status changes when its index does: the
        // Instances that track it look again.
        .watches_stream(repository_events, {
            let instances = instances.clone();
            move |repo: kudo_api::OperatorRepository| {
                let name = repo.name_any();
                instances
                    .state()
                    .into_iter()
                    .filter(|i| {
                        i.spec
                            .upgrades
                            .as_ref()
                            .is_some_and(|u| u.repository == name)
                    })
                    .map(|i| ObjectRef::from_obj(i.as_ref()))
                    .collect::<Vec<_>>()
            }
        })
        // An Instance that started running another version wakes the
        // moves of its namespace held for it (dependency constraints).
        .reconcile_on(
            ctx.wakes
                .take()
                .map_or_else(|| futures::stream::pending().boxed(), StreamExt::boxed),
        )
        // A namespace whose count of suppressed Instances dropped, or whose
        // threshold may have changed: the Instances it held look again.
        .watches_stream(namespace_triggers, {
            let instances = instances.clone();
            move |ns| crate::namespace_hold::held_in(&ns, &instances)
        })
        .watches_stream(schedule_events, {
            let instances = instances.clone();
            move |schedule: MaintenanceSchedule| told_of(&schedule, &instances)
        })
        .graceful_shutdown_on(shutdown.clone())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(move |res| {
            // An Instance deleted without a finalizer gets no reconcile:
            // what is kept for it by name goes here.
            if let Err(kube::runtime::controller::Error::ObjectNotFound(gone)) = &res {
                ctx.forget_gone(gone.namespace.as_deref(), &gone.name);
            }
            async move {
                if let Err(e) = res {
                    tracing::debug!(error = %e, "controller event");
                }
            }
        });
    // kube-runtime's runner waits for the Instance cache before it starts,
    // also when asked to stop: stopped before that cache listed, it would
    // wait forever. Running reconciles get a grace period.
    let maintenance = {
        let shutdown = shutdown.clone();
        let client = client_for_maintenance.clone();
        async move {
            if maintenance_on {
                crate::maintenance::run(client, shutdown).await;
            }
        }
    };
    let repositories = {
        let shutdown = shutdown.clone();
        async move {
            if repositories_on {
                crate::repositories::run(
                    client_for_maintenance,
                    indexes,
                    secrets_namespace,
                    shutdown,
                )
                .await;
            }
        }
    };
    let give_up = async {
        shutdown.await;
        if !synced.is_synced() {
            return;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
        tracing::warn!("reconciles still running {SHUTDOWN_GRACE:?} after shutdown; leaving them");
    };
    tokio::select! {
        ((), (), ()) = futures::future::join3(running, maintenance, repositories) => {}
        () = give_up => {}
    }
    ready.set_controller(ControllerState::Standby);
    Ok(())
}

mod watches;
