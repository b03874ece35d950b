//! The Namespace `kubectl kudo install --create-namespace` creates from a
//! package's `namespaceManifest` template, made as KUDO's CLI makes it: the
//! template is rendered with the instance's names and versions and only the
//! parameter values given on the command line (no defaults), and the
//! Namespace is named after the target namespace and marked `created-by:
//! kudo-cli`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::{Package, RenderError};

/// A Namespace `namespace` with no manifest behind it, marked as the
/// CLI's.
pub fn plain_namespace(namespace: &str) -> Value {
    let mut object = json!({"kind": "Namespace"});
    // A fresh object has the shape `claim` needs.
    let _ = claim(&mut object, namespace);
    object
}

/// Names the object `namespace` and marks it `created-by: kudo-cli`; the
/// error names the part that is not a mapping.
fn claim(object: &mut Value, namespace: &str) -> Result<(), &'static str> {
    let fields = object.as_object_mut().ok_or("must render a mapping")?;
    fields.insert("apiVersion".into(), json!("v1"));
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("metadata must be a mapping")?;
    metadata.insert("name".into(), json!(namespace));
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("metadata.annotations must be a mapping")?;
    annotations.insert("created-by".into(), json!("kudo-cli"));
    Ok(())
}

/// The Namespace object to create: the package's `namespaceManifest`
/// rendered, or a plain one when it has none.
pub fn namespace_manifest(
    package: &Package,
    instance_name: &str,
    namespace: &str,
    values: &BTreeMap<String, String>,
) -> Result<Value, RenderError> {
    let Some(template) = package
        .operator
        .namespace_manifest
        .as_deref()
        .filter(|t| !t.is_empty())
    else {
        return Ok(plain_namespace(namespace));
    };
    let fail = |detail: String| RenderError::NamespaceManifest {
        template: template.to_string(),
        detail,
    };
    let text = package
        .templates
        .get(template)
        .ok_or_else(|| fail("the package has no such template".into()))?;
    let params: Map<String, Value> = values
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let data = json!({
        "Name": instance_name,
        "Namespace": namespace,
        "OperatorName": package.operator.name,
        "OperatorVersion": package.operator.operator_version,
        "AppVersion": package.operator.app_version.clone().unwrap_or_default(),
        "Params": params,
    });
    let rendered = kudo_template::Template::parse(template, text)
        .and_then(|t| t.render(&data))
        .map_err(|e| {
            fail(format!(
                "{e} (the namespace manifest sees only the parameter values given on the \
                 command line, not defaults)"
            ))
        })?;
    let mut documents = crate::yaml::parse_documents(&rendered).map_err(fail)?;
    documents.retain(|d| !d.is_null());
    let [mut object] = <[Value; 1]>::try_from(documents).map_err(|docs| {
        fail(format!(
            "must render exactly one Namespace, rendered {} documents",
            docs.len()
        ))
    })?;
    if object.get("kind").and_then(Value::as_str) != Some("Namespace") {
        return Err(fail("must render an object of kind Namespace".into()));
    }
    claim(&mut object, namespace).map_err(|e| fail(e.into()))?;
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(manifest: &str) -> Package {
        let mut files = BTreeMap::from([(
            "operator.yaml".to_string(),
            b"name: web\noperatorVersion: 0.2.0\nappVersion: 1.4.0\nkubernetesVersion: 1.27.0\n\
              namespaceManifest: ns.yaml\ntasks: []\nplans: {}\n"
                .to_vec(),
        )]);
        files.insert("templates/ns.yaml".into(), manifest.as_bytes().to_vec());
        crate::load_from_files(files, "mem").unwrap()
    }

    #[test]
    fn the_manifest_sees_names_versions_and_only_the_values_given() {
        let pkg = package(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ignored\n  labels:\n    \
             instance: {{ .Name }}\n    app: \"{{ .AppVersion }}\"\n    \
             team: {{ .Params.TEAM }}\n",
        );
        let values = BTreeMap::from([("TEAM".to_string(), "data".to_string())]);

        let ns = namespace_manifest(&pkg, "web-1", "prod", &values).unwrap();

        assert_eq!(ns["metadata"]["name"], "prod");
        assert_eq!(ns["metadata"]["annotations"]["created-by"], "kudo-cli");
        let labels = &ns["metadata"]["labels"];
        assert_eq!(labels["instance"], "web-1");
        assert_eq!(labels["app"], "1.4.0");
        assert_eq!(labels["team"], "data");
    }

    #[test]
    fn a_parameter_not_given_on_the_command_line_is_an_error_naming_it() {
        // Defaults are not in `.Params` here, as in KUDO; a missing key is
        // an error as in every KUDO template.
        let pkg = package(
            "kind: Namespace
metadata:
  labels:
    size: \"{{ .Params.SIZE }}\"\n",
        );
        let err = namespace_manifest(&pkg, "i", "n", &BTreeMap::new()).unwrap_err();
        assert!(
            err.to_string()
                .contains("map has no entry for key \"SIZE\""),
            "{err}"
        );
    }

    #[test]
    fn a_manifest_that_is_not_one_namespace_is_refused_naming_it() {
        let pkg = package("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
        let err = namespace_manifest(&pkg, "i", "n", &BTreeMap::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "namespace manifest ns.yaml: must render an object of kind Namespace"
        );
        let two = package("kind: Namespace\n---\nkind: Namespace\n");
        let err = namespace_manifest(&two, "i", "n", &BTreeMap::new()).unwrap_err();
        assert!(err.to_string().contains("rendered 2 documents"), "{err}");
    }

    #[test]
    fn packages_without_a_manifest_get_a_plain_namespace_marked_as_the_clis() {
        let mut pkg = package("kind: Namespace\n");
        pkg.operator.namespace_manifest = None;
        assert_eq!(
            namespace_manifest(&pkg, "i", "n", &BTreeMap::new()).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "n", "annotations": {"created-by": "kudo-cli"}}})
        );
    }
}
