//! Which Instances have pods on scheduled nodes (the frameworks Mesos
//! sends inverse offers to), and their answers from their status.
//!
//! A pod belongs to an Instance by its `kudo.dev/instance` label (the
//! manager stamps it on every pod template it applies), or through its
//! owners: a ReplicaSet, StatefulSet or Job, or a Deployment above a
//! ReplicaSet, that carries the label.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::Api;
use kube::{Client, Resource, ResourceExt};
use kudo_api::names::INSTANCE_LABEL;
use kudo_api::{AffectedInstance, Instance, MaintenanceResponse, PodPlacement};

use crate::{Error, Result};

/// `(namespace, Instance name)`.
type InstanceKey = (String, String);

/// Pods on scheduled nodes, by Instance.
#[derive(Default)]
pub(super) struct Placements {
    by_instance: BTreeMap<InstanceKey, Vec<PodPlacement>>,
    /// Owners already looked up: `namespace/kind/name` → Instance name.
    owners: HashMap<String, Option<String>>,
}

impl Placements {
    /// Notes the pods of `node` that belong to an Instance.
    pub async fn add(&mut self, client: &Client, pods: &[Pod], node: &str) {
        for pod in pods {
            let namespace = pod.namespace().unwrap_or_default();
            let instance = match label(&pod.metadata) {
                Some(name) => Some(name),
                None => self.through_owners(client, &namespace, &pod.metadata).await,
            };
            if let Some(instance) = instance {
                self.by_instance
                    .entry((namespace, instance))
                    .or_default()
                    .push(PodPlacement {
                        pod: pod.name_any(),
                        node: node.to_string(),
                    });
            }
        }
    }

    async fn through_owners(
        &mut self,
        client: &Client,
        namespace: &str,
        meta: &ObjectMeta,
    ) -> Option<String> {
        let owner = controller_of(meta)?;
        let key = format!("{namespace}/{}/{}", owner.kind, owner.name);
        if let Some(known) = self.owners.get(&key) {
            return known.clone();
        }
        let found = match owner_meta(client, namespace, owner).await {
            Some(m) => match label(&m) {
                Some(name) => Some(name),
                // A Deployment's ReplicaSet: one more level.
                None => match controller_of(&m) {
                    Some(up) => owner_meta(client, namespace, up)
                        .await
                        .and_then(|m| label(&m)),
                    None => None,
                },
            },
            None => None,
        };
        self.owners.insert(key, found.clone());
        found
    }

    /// Every affected Instance that still exists, with its answer.
    pub async fn answers(self, client: &Client) -> Result<Vec<AffectedInstance>> {
        let mut out = Vec::new();
        for ((namespace, name), mut pods) in self.by_instance {
            let api = Api::<Instance>::namespaced(client.clone(), &namespace);
            let instance = api
                .get_opt(&name)
                .await
                .map_err(|e| Error::kube(format!("reading Instance {namespace}/{name}"), e))?;
            let Some(instance) = instance else {
                continue;
            };
            let told = instance.status.and_then(|s| s.maintenance);
            let (response, message) = match told {
                // The shared schedule's status must stay writable whatever
                // one Instance says.
                Some(m) => (
                    m.response,
                    kudo_api::message::bounded_to(&m.message, 512).into_owned(),
                ),
                None => (MaintenanceResponse::Pending, String::new()),
            };
            pods.sort_by(|a, b| a.pod.cmp(&b.pod));
            out.push(AffectedInstance {
                namespace,
                name,
                pods,
                response,
                message,
            });
        }
        Ok(out)
    }
}

fn label(meta: &ObjectMeta) -> Option<String> {
    meta.labels.as_ref()?.get(INSTANCE_LABEL).cloned()
}

fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// The owner's metadata, for the kinds a pod's owner chain has; `None`
/// when it cannot be read (gone, or not readable by the manager).
async fn owner_meta(
    client: &Client,
    namespace: &str,
    owner: &OwnerReference,
) -> Option<ObjectMeta> {
    match owner.kind.as_str() {
        "ReplicaSet" => meta_of::<ReplicaSet>(client, namespace, &owner.name).await,
        "StatefulSet" => meta_of::<StatefulSet>(client, namespace, &owner.name).await,
        "Deployment" => meta_of::<Deployment>(client, namespace, &owner.name).await,
        "Job" => meta_of::<Job>(client, namespace, &owner.name).await,
        _ => None,
    }
}

async fn meta_of<K>(client: &Client, namespace: &str, name: &str) -> Option<ObjectMeta>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    match api.get_metadata_opt(name).await {
        Ok(found) => found.map(|m| m.metadata),
        Err(err) => {
            tracing::debug!(namespace, name, error = %err, "cannot read a pod's owner");
            None
        }
    }
}
