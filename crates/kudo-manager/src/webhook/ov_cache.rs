//! OperatorVersions for reviews from a watch-fed cache, so a review costs
//! the API server nothing; an OperatorVersion the cache does not have yet
//! (created a moment ago, or the watch is behind) is read live, so it is
//! still seen. A failed live read is an error answer, never an allow.

use std::sync::Arc;

use futures::StreamExt;
use kube::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kudo_api::OperatorVersion;

use super::instance_uses::{InstanceUse, InstanceUses, list_naming};
use super::ov_source::{OperatorVersionReadError, OperatorVersionSource, PodLookup};

/// Stops the watch when the last copy of the source goes.
#[derive(Debug)]
pub(super) struct StopOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A reflector store of every OperatorVersion plus live reads on a miss,
/// and a cache of which Instances name which OperatorVersion.
#[derive(Clone)]
pub struct CachedOperatorVersions {
    store: Store<OperatorVersion>,
    client: kube::Client,
    /// Instances of other namespaces; `None`: listed live at each lookup.
    instances: Option<InstanceUses>,
    _watch: Option<Arc<StopOnDrop>>,
}

impl std::fmt::Debug for CachedOperatorVersions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedOperatorVersions")
            .field("cached", &self.store.state().len())
            .finish()
    }
}

impl CachedOperatorVersions {
    /// Starts watches of all OperatorVersions and all Instances feeding the
    /// caches; they run until the last copy of the source is dropped.
    pub fn start(client: kube::Client) -> Self {
        let (store, writer) = reflector::store();
        let events = watcher(
            Api::<OperatorVersion>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .reflect(writer);
        let watch = tokio::spawn(events.for_each(|event| async move {
            if let Err(e) = event {
                tracing::debug!(error = %e, "webhook OperatorVersion watch");
            }
        }));
        Self {
            store,
            instances: Some(InstanceUses::start(&client)),
            client,
            _watch: Some(Arc::new(StopOnDrop(watch))),
        }
    }

    /// A source over a store someone else keeps (tests: an empty one);
    /// Instances are listed live.
    pub fn with_store(store: Store<OperatorVersion>, client: kube::Client) -> Self {
        Self {
            store,
            client,
            instances: None,
            _watch: None,
        }
    }
}

impl OperatorVersionSource for CachedOperatorVersions {
    async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError> {
        if let Some(ov) = self.store.get(&ObjectRef::new(name).within(namespace)) {
            return Ok(Some(ov));
        }
        self.client.get(namespace, name).await
    }

    async fn pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PodLookup, OperatorVersionReadError> {
        super::ov_source::read_pod(&self.client, namespace, name).await
    }

    async fn instances_naming(
        &self,
        namespace: &str,
        name: &str,
        elsewhere: bool,
    ) -> Result<Vec<InstanceUse>, OperatorVersionReadError> {
        let cached = self
            .instances
            .as_ref()
            .filter(|_| elsewhere)
            .and_then(|c| c.naming(namespace, name));
        let Some(others) = cached else {
            // Not shared, or the cache is not current: all live.
            let scope = (!elsewhere).then_some(namespace);
            return list_naming(&self.client, scope, namespace, name).await;
        };
        let mut found = list_naming(&self.client, Some(namespace), namespace, name).await?;
        found.extend(others.into_iter().filter(|i| i.namespace() != namespace));
        Ok(found)
    }
}
