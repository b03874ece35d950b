//! The kube-runtime Controller: Instances, the OperatorVersions they name
//! (mapped through the Instance cache, not a list per event), and the
//! objects they own.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use kudo_api::names::{API_VERSION, HERITAGE_LABEL, HERITAGE_VALUE};
use kudo_api::{Instance, OperatorVersion};
use kudo_engine::EngineConfig;

use crate::admin::Readiness;
use crate::context::Context;
use crate::metrics::Metrics;
use crate::reconcile::{error_policy, reconcile};
use crate::{Error, Result};

/// Settings of [`run`].
#[derive(Debug, Clone, Default)]
pub struct ControllerConfig {
    /// Engine settings.
    pub engine: EngineConfig,
    /// Reconciles run at the same time (0 = unbounded).
    pub concurrency: u16,
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
    let owned = watcher::Config::default().labels(&format!("{HERITAGE_LABEL}={HERITAGE_VALUE}"));

    let (ov_store, ov_writer) = reflector::store::<OperatorVersion>();
    let ov_events = reflector::reflector(
        ov_writer,
        watcher(
            Api::<OperatorVersion>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff()
    .touched_objects();

    let controller = Controller::new(
        Api::<Instance>::all(client.clone()),
        watcher::Config::default(),
    )
    .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency));
    let instances = controller.store();
    let ctx = Arc::new(Context::new(
        client.clone(),
        metrics,
        config.engine,
        ov_store.clone(),
    ));

    {
        let (instances, ov_store, ready) = (instances.clone(), ov_store.clone(), ready.clone());
        tokio::spawn(async move {
            if instances.wait_until_ready().await.is_ok()
                && ov_store.wait_until_ready().await.is_ok()
            {
                tracing::info!("caches synced; ready");
                ready.set(true);
            }
        });
    }

    let by_ov = instances.clone();
    controller
        .owns(Api::<Deployment>::all(client.clone()), owned.clone())
        .owns(Api::<StatefulSet>::all(client.clone()), owned.clone())
        .owns(Api::<DaemonSet>::all(client.clone()), owned.clone())
        .owns(Api::<Job>::all(client.clone()), owned.clone())
        .owns(Api::<Service>::all(client.clone()), owned.clone())
        .owns(Api::<Pod>::all(client.clone()), owned.clone())
        .owns(Api::<ConfigMap>::all(client.clone()), owned)
        .watches_stream(ov_events, move |ov: OperatorVersion| {
            let (name, ns) = (ov.name_any(), ov.namespace());
            by_ov
                .state()
                .into_iter()
                .filter(|i| references(i, &name, ns.as_deref()))
                .map(|i| ObjectRef::from_obj(i.as_ref()))
                .collect::<Vec<_>>()
        })
        // Child Instances carry a non-controller owner reference to their parent.
        .watches(
            Api::<Instance>::all(client),
            watcher::Config::default(),
            |child: Instance| {
                let ns = child.namespace();
                child
                    .owner_references()
                    .iter()
                    .filter(|o| o.kind == "Instance" && o.api_version == API_VERSION)
                    .map(|o| {
                        let r = ObjectRef::new(&o.name);
                        match ns.as_deref() {
                            Some(ns) => r.within(ns),
                            None => r,
                        }
                    })
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
    ready.set(false);
    Ok(())
}

/// Whether an Instance names this OperatorVersion.
fn references(inst: &Instance, ov_name: &str, ov_ns: Option<&str>) -> bool {
    let r = &inst.spec.operator_version;
    let ns = r
        .namespace
        .as_deref()
        .or(inst.metadata.namespace.as_deref());
    r.name.as_deref() == Some(ov_name) && ns == ov_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_api::{InstanceSpec, ObjectReference};

    fn inst(ns: &str, ov: &str) -> Instance {
        let mut i = Instance::new(
            "i",
            InstanceSpec {
                operator_version: ObjectReference {
                    name: Some(ov.into()),
                    ..ObjectReference::default()
                },
                ..InstanceSpec::default()
            },
        );
        i.metadata.namespace = Some(ns.into());
        i
    }

    #[test]
    fn operator_version_maps_only_to_instances_naming_it_in_the_same_namespace() {
        assert!(references(&inst("a", "ov-1"), "ov-1", Some("a")));
        assert!(!references(&inst("b", "ov-1"), "ov-1", Some("a")));
        assert!(!references(&inst("a", "ov-2"), "ov-1", Some("a")));
    }
}
