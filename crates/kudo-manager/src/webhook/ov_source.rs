//! Where the webhook reads OperatorVersions from: the API server (live, so
//! an OperatorVersion created a moment ago is seen) or, in tests and
//! benchmarks, fixtures in memory.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use kube::Api;
use kudo_api::OperatorVersion;

use super::instance_uses::InstanceUse;

/// Reading an OperatorVersion failed for a reason other than "not found"
/// (forbidden, API server unavailable, timeout, undecodable object).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OperatorVersionReadError(pub String);

/// What a source knows of a pod named by a pod operation.
#[derive(Clone, Debug, PartialEq)]
pub enum PodLookup {
    /// The source reads no pods (fixtures): the pod is not checked.
    Unchecked,
    /// No such pod.
    Missing,
    /// The pod, with its labels.
    Found(Box<k8s_openapi::api::core::v1::Pod>),
}

/// Reads OperatorVersions (and, for pod operations, pods) for a review.
pub trait OperatorVersionSource: Send + Sync + 'static {
    /// The OperatorVersion `namespace/name`; `Ok(None)` when it does not exist.
    /// Shared (`Arc`) so an in-memory source hands it out without copying.
    fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError>> + Send;

    /// The pod `namespace/name` a new `restartPod`/`replacePod` operation
    /// names (rare: read live).
    fn pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<PodLookup, OperatorVersionReadError>> + Send {
        let _ = (namespace, name);
        async { Ok(PodLookup::Unchecked) }
    }

    /// The Instances that name OperatorVersion `namespace/name` (in their
    /// spec, or as the one a channel installed): those of `namespace`,
    /// and with `elsewhere` those of other namespaces too. A source that
    /// reads no Instances answers an error: OperatorVersion writes are
    /// then refused, never admitted unjudged.
    fn instances_naming(
        &self,
        namespace: &str,
        name: &str,
        elsewhere: bool,
    ) -> impl Future<Output = Result<Vec<InstanceUse>, OperatorVersionReadError>> + Send {
        let _ = (namespace, name, elsewhere);
        async {
            Err(OperatorVersionReadError(
                "this webhook reads no Instances".to_string(),
            ))
        }
    }
}

/// A live pod read.
pub(super) async fn read_pod(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<PodLookup, OperatorVersionReadError> {
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map(|p| p.map_or(PodLookup::Missing, |p| PodLookup::Found(Box::new(p))))
        .map_err(|err| OperatorVersionReadError(err.to_string()))
}

/// Live reads through the API server: what [`super::CachedOperatorVersions`]
/// does on a miss (an OperatorVersion created just before its Instance).
impl OperatorVersionSource for kube::Client {
    async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError> {
        Api::<OperatorVersion>::namespaced(self.clone(), namespace)
            .get_opt(name)
            .await
            .map(|ov| ov.map(Arc::new))
            .map_err(|err| OperatorVersionReadError(err.to_string()))
    }

    async fn pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<PodLookup, OperatorVersionReadError> {
        read_pod(self, namespace, name).await
    }

    async fn instances_naming(
        &self,
        namespace: &str,
        name: &str,
        elsewhere: bool,
    ) -> Result<Vec<InstanceUse>, OperatorVersionReadError> {
        let scope = (!elsewhere).then_some(namespace);
        super::instance_uses::list_naming(self, scope, namespace, name).await
    }
}

/// A fixed set of OperatorVersions, by namespace then name (looked up by
/// `&str`, without building a key per read), and of Instances naming them.
#[derive(Clone, Debug, Default)]
pub struct StaticOperatorVersions {
    versions: BTreeMap<String, BTreeMap<String, Arc<OperatorVersion>>>,
    instances: Vec<InstanceUse>,
}

impl StaticOperatorVersions {
    /// An empty set: every read answers "not found".
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an OperatorVersion under its metadata namespace (or `default`)
    /// and name.
    pub fn insert(&mut self, ov: OperatorVersion) {
        let namespace = ov
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let name = ov.metadata.name.clone().unwrap_or_default();
        self.versions
            .entry(namespace)
            .or_default()
            .insert(name, Arc::new(ov));
    }

    /// Adds an Instance: writes to the OperatorVersions it names are
    /// judged by its account.
    pub fn insert_instance(&mut self, instance: &kudo_api::Instance) {
        self.instances.push(InstanceUse::of(instance));
    }
}

impl FromIterator<OperatorVersion> for StaticOperatorVersions {
    fn from_iter<I: IntoIterator<Item = OperatorVersion>>(iter: I) -> Self {
        let mut set = Self::new();
        for ov in iter {
            set.insert(ov);
        }
        set
    }
}

impl OperatorVersionSource for StaticOperatorVersions {
    async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError> {
        Ok(self
            .versions
            .get(namespace)
            .and_then(|by_name| by_name.get(name))
            .cloned())
    }

    async fn instances_naming(
        &self,
        namespace: &str,
        name: &str,
        elsewhere: bool,
    ) -> Result<Vec<InstanceUse>, OperatorVersionReadError> {
        Ok(self
            .instances
            .iter()
            .filter(|i| i.names(namespace, name) && (elsewhere || i.namespace() == namespace))
            .cloned()
            .collect())
    }
}

/// A source backed by a function, for tests that need errors or counting.
#[derive(Clone, Debug)]
pub struct FnSource<F>(pub F);

impl<F> OperatorVersionSource for FnSource<F>
where
    F: Fn(&str, &str) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError>
        + Send
        + Sync
        + 'static,
{
    async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<OperatorVersion>>, OperatorVersionReadError> {
        (self.0)(namespace, name)
    }
}
