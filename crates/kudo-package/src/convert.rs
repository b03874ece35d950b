//! Package → Operator and OperatorVersion, as KUDO's `FilesToResources`
//! does it.

use kudo_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kudo_api::package::PackageParameter;
use kudo_api::{
    ObjectReference, Operator, OperatorSpec, OperatorVersion, OperatorVersionSpec, Parameter,
    ParameterType,
};
use serde_json::Value;

use crate::Package;

pub(crate) fn to_operator(pkg: &Package, namespace: &str) -> Operator {
    let op = &pkg.operator;
    let mut operator = Operator::new(
        &op.name,
        OperatorSpec {
            description: op.description.clone(),
            kudo_version: op.kudo_version.clone(),
            kubernetes_version: op.kubernetes_version.clone(),
            maintainers: op.maintainers.clone(),
            url: op.url.clone(),
            namespace_manifest: op.namespace_manifest.clone(),
        },
    );
    operator.metadata.namespace = Some(namespace.to_string());
    operator
}

pub(crate) fn to_operator_version(pkg: &Package, namespace: &str) -> OperatorVersion {
    let op = &pkg.operator;
    let spec = OperatorVersionSpec {
        operator: Some(ObjectReference {
            name: Some(op.name.clone()),
            kind: Some("Operator".to_string()),
            ..Default::default()
        }),
        version: Some(op.operator_version.clone()),
        app_version: op.app_version.clone().filter(|v| !v.is_empty()),
        templates: pkg.templates.clone(),
        tasks: op.tasks.clone(),
        parameters: pkg.params.parameters.iter().map(to_crd_parameter).collect(),
        plans: op.plans.clone(),
        connection_string: None,
        upgradable_from: Vec::new(),
        dependencies: pkg.operator.dependencies.clone(),
    };
    OperatorVersion {
        metadata: ObjectMeta {
            name: Some(pkg.operator_version_name()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// The package an OperatorVersion stands for, as far as the object holds it
/// (the Operator's description, maintainers and URL are not in it): what
/// [`crate::verify::verify_operator_version`] checks.
pub(crate) fn package_of(ov: &OperatorVersion) -> Package {
    let spec = &ov.spec;
    let operator = kudo_api::package::OperatorFile {
        api_version: Some(kudo_api::names::API_VERSION.to_string()),
        name: spec
            .operator
            .as_ref()
            .and_then(|o| o.name.clone())
            .unwrap_or_default(),
        description: None,
        operator_version: spec.version.clone().unwrap_or_default(),
        app_version: spec.app_version.clone(),
        kudo_version: None,
        kubernetes_version: None,
        maintainers: Vec::new(),
        url: None,
        tasks: spec.tasks.clone(),
        plans: spec.plans.clone(),
        namespace_manifest: None,
        channels: Vec::new(),
        dependencies: spec.dependencies.clone(),
    };
    let params = kudo_api::package::ParamsFile {
        api_version: Some(kudo_api::names::API_VERSION.to_string()),
        groups: Vec::new(),
        parameters: spec.parameters.iter().map(from_crd_parameter).collect(),
    };
    Package {
        operator,
        params,
        templates: spec.templates.clone(),
        source: format!(
            "OperatorVersion {}/{}",
            ov.metadata.namespace.as_deref().unwrap_or_default(),
            ov.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

/// A CRD parameter back in its `params.yaml` form: map and array values are
/// YAML text in the CRD and are read back; the others stay strings.
fn from_crd_parameter(p: &Parameter) -> PackageParameter {
    let kind = p.value_type.unwrap_or_default();
    let value = |text: &String| match kind {
        ParameterType::Map | ParameterType::Array => {
            crate::yaml::parse_value(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        _ => Value::String(text.clone()),
    };
    PackageParameter {
        name: p.name.clone(),
        display_name: p.display_name.clone(),
        description: p.description.clone(),
        required: p.required.unwrap_or(true),
        default: p.default.as_ref().map(value),
        trigger: p.trigger.clone(),
        value_type: p.value_type,
        immutable: p.immutable.unwrap_or(false),
        enum_values: p
            .enum_values
            .as_ref()
            .map(|values| values.iter().map(value).collect()),
        ..Default::default()
    }
}

/// A `params.yaml` parameter in its CRD form.
pub fn to_crd_parameter(p: &PackageParameter) -> Parameter {
    let kind = p.value_type.unwrap_or_default();
    Parameter {
        name: p.name.clone(),
        display_name: p.display_name.clone(),
        description: p.description.clone(),
        required: Some(p.required),
        default: p.default.as_ref().and_then(|v| wrap_param_value(v, kind)),
        trigger: p.trigger.clone(),
        value_type: p.value_type,
        immutable: Some(p.immutable),
        enum_values: p.enum_values.as_ref().map(|values| {
            values
                .iter()
                .filter_map(|v| wrap_param_value(v, kind))
                .collect()
        }),
    }
}

/// KUDO's `WrapParamValue`: map and array types become YAML text, every
/// other type Go's `%v` of the decoded value (`2` → `"2"`, `true` →
/// `"true"`). A null value stays unset.
pub fn wrap_param_value(value: &Value, kind: ParameterType) -> Option<String> {
    if value.is_null() {
        return None;
    }
    match kind {
        ParameterType::Map | ParameterType::Array => {
            // sigs.k8s.io/yaml goes through JSON: numbers are float64.
            let floats = crate::gofmt::numbers_as_floats(value.clone());
            Some(crate::yaml::v2::to_string(&floats))
        }
        _ => Some(crate::gofmt::sprint_v(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalar_defaults_are_stringified_like_go() {
        assert_eq!(
            wrap_param_value(&json!(3), ParameterType::Integer).as_deref(),
            Some("3")
        );
        assert_eq!(
            wrap_param_value(&json!(true), ParameterType::Boolean).as_deref(),
            Some("true")
        );
        assert_eq!(
            wrap_param_value(&json!(1000000), ParameterType::Integer).as_deref(),
            Some("1e+06")
        );
        assert_eq!(wrap_param_value(&json!(null), ParameterType::String), None);
    }

    #[test]
    fn map_and_array_defaults_become_yaml_text() {
        assert_eq!(
            wrap_param_value(&json!({"b": 1, "a": "x"}), ParameterType::Map).as_deref(),
            Some("a: x\nb: 1\n")
        );
        assert_eq!(
            wrap_param_value(&json!(["x", 2]), ParameterType::Array).as_deref(),
            Some("- x\n- 2\n")
        );
    }

    #[test]
    fn crd_parameter_keeps_required_and_immutable_explicit() {
        let p = PackageParameter {
            name: "REPLICAS".into(),
            default: Some(json!(3)),
            value_type: Some(ParameterType::Integer),
            enum_values: Some(vec![json!(1), json!(3)]),
            ..Default::default()
        };
        let crd = to_crd_parameter(&p);
        assert_eq!(crd.required, Some(true));
        assert_eq!(crd.immutable, Some(false));
        assert_eq!(crd.default.as_deref(), Some("3"));
        assert_eq!(
            crd.enum_values,
            Some(vec!["1".to_string(), "3".to_string()])
        );
    }
}
