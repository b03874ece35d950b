//! A discovery cache: `(apiVersion, kind)` → API resource and scope,
//! resolved lazily against the API server and refreshed on a miss (a CRD
//! applied a moment ago becomes known once it is Established).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use kube::Client;
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use kudo_package::render::{Discovery, StaticDiscovery};

/// What discovery knows about a kind.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The resource (plural, group, version) for dynamic API calls.
    pub resource: ApiResource,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

/// The cache, shared by all reconciles (a clone shares it too: renders
/// read it from the blocking pool).
#[derive(Clone)]
pub struct ApiCache {
    client: Client,
    known: Arc<RwLock<HashMap<(String, String), Resolved>>>,
    built_in: Arc<StaticDiscovery>,
}

impl ApiCache {
    /// An empty cache.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            known: Arc::default(),
            built_in: Arc::default(),
        }
    }

    fn cached(&self, api_version: &str, kind: &str) -> Option<Resolved> {
        self.known
            .read()
            .ok()?
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
    }

    /// Resolve a kind, asking the API server on a miss. `Ok(None)`: the
    /// server does not serve this kind.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Resolved>, kube::Error> {
        if let Some(hit) = self.cached(api_version, kind) {
            return Ok(Some(hit));
        }
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok((resource, caps)) => {
                let resolved = Resolved {
                    resource,
                    namespaced: caps.scope == Scope::Namespaced,
                };
                if let Ok(mut known) = self.known.write() {
                    known.insert(
                        (api_version.to_string(), kind.to_string()),
                        resolved.clone(),
                    );
                }
                Ok(Some(resolved))
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl Resolved {
    /// The dynamic API through `client` for an object of this kind in
    /// `namespace` (ignored for cluster-scoped kinds).
    pub fn api(
        &self,
        client: &Client,
        namespace: Option<&str>,
    ) -> kube::Api<kube::api::DynamicObject> {
        match (namespace, self.namespaced) {
            (Some(ns), true) => kube::Api::namespaced_with(client.clone(), ns, &self.resource),
            _ => kube::Api::all_with(client.clone(), &self.resource),
        }
    }
}

impl Discovery for ApiCache {
    fn is_namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.cached(api_version, kind)
            .map(|r| r.namespaced)
            .or_else(|| self.built_in.is_namespaced(api_version, kind))
    }
}
