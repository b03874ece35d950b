//! Install an operator package as plain objects (Operator, OperatorVersion,
//! Instance) with server-side apply: what `make run` and the end-to-end
//! tests use, and what `kubectl kudo install` does in full.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use kudo_api::names::FIELD_MANAGER;
use kudo_api::{Instance, InstanceSpec, ObjectReference};

use crate::{Error, Result};

/// Apply the kudo.dev CRDs and the `kudo-instance` ClusterRole Instances'
/// objects are written with (dev mode and tests start from an empty server;
/// `kubectl kudo init --crd-only` installs the same).
pub async fn install_crds(client: &Client) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kudo_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .map_err(|e| Error::kube(format!("installing CustomResourceDefinition {name}"), e))?;
    }
    let role: k8s_openapi::api::rbac::v1::ClusterRole =
        serde_json::from_value(kudo_api::rbac::instance_cluster_role())
            .map_err(|e| Error::Config(format!("the kudo-instance ClusterRole: {e}")))?;
    Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(client.clone())
        .patch(
            kudo_api::names::INSTANCE_ROLE,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&role),
        )
        .await
        .map_err(|e| Error::kube("installing the kudo-instance ClusterRole", e))?;
    Ok(())
}

/// What [`install_package`] created.
#[derive(Debug, Clone)]
pub struct Installed {
    /// OperatorVersion name.
    pub operator_version: String,
    /// Instance name.
    pub instance: String,
}

/// An Instance to create with the package.
#[derive(Debug, Clone, Default)]
pub struct InstanceRequest {
    /// Instance name (default: the operator name).
    pub name: Option<String>,
    /// Parameter values.
    pub parameters: BTreeMap<String, String>,
}

/// Load a package directory (or .tgz) and apply its Operator and
/// OperatorVersion in `namespace`; then, when `instance` is given, an
/// Instance of it.
pub async fn install_package(
    client: &Client,
    package: &Path,
    namespace: &str,
    instance: Option<InstanceRequest>,
) -> Result<Installed> {
    let pkg = kudo_package::load(package)
        .map_err(|e| Error::Config(format!("package {}: {e}", package.display())))?;
    let operator = pkg.to_operator(namespace);
    let ov = pkg.to_operator_version(namespace);
    let ov_name = ov.metadata.name.clone().unwrap_or_default();
    kudo_package::verify::check_operator_version_size(&ov)
        .map_err(|e| Error::Config(format!("package {}: {e}", package.display())))?;
    apply(client, namespace, &operator).await?;
    apply(client, namespace, &ov).await?;
    let instance_name = instance
        .as_ref()
        .and_then(|i| i.name.clone())
        .unwrap_or_else(|| pkg.operator.name.clone());
    if let Some(InstanceRequest { parameters, .. }) = instance {
        let mut inst = Instance::new(
            &instance_name,
            InstanceSpec {
                operator_version: ObjectReference {
                    name: Some(ov_name.clone()),
                    ..ObjectReference::default()
                },
                parameters: (!parameters.is_empty()).then_some(parameters),
                ..InstanceSpec::default()
            },
        );
        inst.metadata.namespace = Some(namespace.to_string());
        let labels = inst.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(
            kudo_api::names::OPERATOR_LABEL.into(),
            pkg.operator.name.clone(),
        );
        apply(client, namespace, &inst).await?;
    }
    Ok(Installed {
        operator_version: ov_name,
        instance: instance_name,
    })
}

async fn apply<K>(client: &Client, namespace: &str, obj: &K) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let mut value = serde_json::to_value(obj).map_err(|source| Error::Serde {
        context: format!("{} {name}", K::kind(&())),
        source,
    })?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), K::api_version(&()).into());
        map.insert("kind".into(), K::kind(&()).into());
        map.remove("status");
    }
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&value),
    )
    .await
    .map_err(|e| Error::kube(format!("applying {} {namespace}/{name}", K::kind(&())), e))?;
    Ok(())
}
