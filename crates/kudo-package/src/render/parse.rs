//! Rendered text into Kubernetes objects: every document a mapping with
//! apiVersion, kind and a name, and no Namespace from a task's template.

use serde_json::Value;

use super::api_group;
use crate::RenderError;

/// `package verify` refuses a template that renders a Namespace, but it
/// renders with placeholder values only: checking every render keeps the
/// rule for values that take another branch of the template.
pub(super) fn refuse_namespaces(
    task: &str,
    template: &str,
    objects: &[Value],
) -> Result<(), RenderError> {
    let namespace = objects.iter().find(|o| {
        o.get("kind").and_then(Value::as_str) == Some("Namespace")
            && api_group(o.get("apiVersion").and_then(Value::as_str).unwrap_or("")).is_empty()
    });
    match namespace {
        None => Ok(()),
        Some(ns) => Err(RenderError::NamespaceInTemplate {
            task: task.to_string(),
            template: template.to_string(),
            name: ns
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .chars()
                .take(253)
                .collect(),
        }),
    }
}

/// Parses rendered text into Kubernetes objects.
pub fn parse_objects(task: &str, template: &str, text: &str) -> Result<Vec<Value>, RenderError> {
    let yaml_err = |detail: String| RenderError::Yaml {
        task: task.to_string(),
        template: template.to_string(),
        detail,
    };
    let docs = crate::yaml::parse_documents(text).map_err(yaml_err)?;
    for (i, doc) in docs.iter().enumerate() {
        let Some(obj) = doc.as_object() else {
            return Err(yaml_err(format!(
                "document {} is not a mapping (a Kubernetes object)",
                i + 1
            )));
        };
        for field in ["apiVersion", "kind"] {
            if !obj.get(field).is_some_and(Value::is_string) {
                return Err(yaml_err(format!(
                    "document {} has no {field}; every object needs apiVersion, kind and metadata.name",
                    i + 1
                )));
            }
        }
        let has_name = obj
            .get("metadata")
            .and_then(|m| m.get("name").or_else(|| m.get("generateName")))
            .is_some_and(Value::is_string);
        if !has_name {
            return Err(yaml_err(format!(
                "document {} ({}) has no metadata.name",
                i + 1,
                obj.get("kind").and_then(Value::as_str).unwrap_or("")
            )));
        }
    }
    Ok(docs)
}
