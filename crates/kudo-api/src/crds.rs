//! CustomResourceDefinitions generated from the types, as committed in `crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{Instance, MaintenanceSchedule, Operator, OperatorRepository, OperatorVersion};

/// The CRDs, in the order they should be applied.
pub fn all() -> Vec<CustomResourceDefinition> {
    vec![
        Operator::crd(),
        OperatorVersion::crd(),
        Instance::crd(),
        MaintenanceSchedule::crd(),
        OperatorRepository::crd(),
    ]
}

/// File name used in `crds/`: `kudo.dev_<plural>.yaml`, as KUDO names them.
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// A CRD could not be serialised.
#[derive(Debug, thiserror::Error)]
#[error("cannot serialise CRD {name} to YAML: {source}")]
pub struct CrdYamlError {
    name: String,
    #[source]
    source: serde_saphyr::ser::Error,
}

/// YAML text of a CRD, with a header saying it is generated.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, CrdYamlError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let body = serde_saphyr::to_string(crd).map_err(|source| CrdYamlError { name, source })?;
    Ok(format!(
        "# Generated from crates/kudo-api by `make crds`; do not edit.\n{body}"
    ))
}
