//! `apiextensions.k8s.io/v1beta1` CustomResourceDefinition →
//! `apiextensions.k8s.io/v1` (removed in 1.22).
//!
//! - `spec.version` alone becomes `spec.versions: [{name, served: true,
//!   storage: true}]`;
//! - the top-level `validation` (as `schema`), `subresources` and
//!   `additionalPrinterColumns` move into every version that has none of
//!   its own; a printer column's `JSONPath` is now `jsonPath`;
//! - every version needs a schema: a version without one accepts any
//!   object (`type: object` + `x-kubernetes-preserve-unknown-fields`);
//! - the schema must be structural: a missing `type` is added where it can
//!   be told mechanically (`object` at the root and where `properties` or
//!   `additionalProperties` are given, `array` where `items` is, and
//!   `x-kubernetes-int-or-string` for an `anyOf`/`oneOf` of integer and
//!   string); a field with no type at all keeps accepting anything
//!   (`x-kubernetes-preserve-unknown-fields`);
//! - `spec.preserveUnknownFields`: v1beta1 kept unknown fields unless it was
//!   `false`, v1 prunes them and refuses `true`. The field is removed; when
//!   it was not `false`, every object in the schema gets
//!   `x-kubernetes-preserve-unknown-fields: true`, so nothing is pruned, as
//!   before;
//! - `spec.scope` is required (v1beta1 defaulted it to `Namespaced`);
//! - a Webhook conversion's `webhookClientConfig` and
//!   `conversionReviewVersions` move under `conversion.webhook` (the review
//!   versions defaulting to `[v1beta1]` as before);
//! - a CRD in a group the Kubernetes project owns (`k8s.io`,
//!   `kubernetes.io` and their subdomains) gets the annotation
//!   `api-approved.kubernetes.io: "unapproved, experimental-only"` unless it
//!   has one: v1 refuses such a CRD without it, v1beta1 did not ask.

use serde_json::{Map, Value, json};

use super::Refusal;
use super::json::{missing, object_mut, rename};

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// The annotation `apiextensions.k8s.io/v1` requires on a CRD in a
/// protected group: a URL of the API review, or a reason that begins with
/// `unapproved`.
pub(crate) const API_APPROVED: &str = "api-approved.kubernetes.io";
/// The value Kubernetes documents for an API it has not reviewed (its API
/// review rule for the groups the project owns).
pub(crate) const UNAPPROVED: &str = "unapproved, experimental-only";

pub(super) fn custom_resource_definition(
    obj: &mut Value,
    _: &str,
    notes: &mut Vec<String>,
) -> Result<(), Refusal> {
    // First, so the note survives where long messages are cut (Events).
    api_approval(obj, notes);
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return Ok(());
    };
    build_versions(spec, notes);
    move_top_level(spec, notes);
    if missing(spec, "scope") {
        spec.insert("scope".into(), json!("Namespaced"));
        notes.push("spec.scope set to Namespaced, the v1beta1 default".into());
    }
    let preserve = spec.remove("preserveUnknownFields") != Some(Value::Bool(false));
    let mut schema_fix = SchemaFix::default();
    let versions = spec.get_mut("versions").and_then(Value::as_array_mut);
    for version in versions.into_iter().flatten() {
        let Some(version) = version.as_object_mut() else {
            continue;
        };
        let name = version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        printer_columns(version);
        let has_schema = version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(Value::is_object);
        if !has_schema {
            version.insert(
                "schema".into(),
                json!({ "openAPIV3Schema": { "type": "object", PRESERVE: true } }),
            );
            notes.push(format!(
                "version {name} has no schema; it accepts any object (type: object, {PRESERVE})"
            ));
            continue;
        }
        if let Some(root) = version
            .get_mut("schema")
            .and_then(|s| s.get_mut("openAPIV3Schema"))
        {
            schema_fix.root(root, preserve, &name);
        }
    }
    if preserve {
        notes.push(format!(
            "preserveUnknownFields removed and {PRESERVE}: true set on every object of the \
             schema: v1beta1 kept fields the schema does not list, v1 would prune them"
        ));
    } else {
        notes.push("preserveUnknownFields: false removed: v1 always prunes unknown fields".into());
    }
    schema_fix.report(notes);
    convert_conversion(spec, notes);
    Ok(())
}

/// Whether the Kubernetes project owns `group`, so that a v1 CRD in it
/// needs [`API_APPROVED`]: `k8s.io`, `kubernetes.io` and their subdomains.
pub(crate) fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"].iter().any(|domain| {
        group == *domain
            || group
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.'))
    })
}

/// Adds [`API_APPROVED`] to a CRD in a protected group that has none; a
/// value the package set is kept.
fn api_approval(obj: &mut Value, notes: &mut Vec<String>) {
    let group = obj
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !is_protected_group(&group) {
        return;
    }
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let metadata = root.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    if !metadata.get("annotations").is_some_and(Value::is_object) {
        metadata.insert("annotations".into(), json!({}));
    }
    let Some(annotations) = metadata
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    // The API server reads an empty value as none.
    let set = annotations
        .get(API_APPROVED)
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if set {
        return;
    }
    annotations.insert(API_APPROVED.into(), json!(UNAPPROVED));
    notes.push(format!(
        "annotation {API_APPROVED}: {UNAPPROVED:?} added: v1 refuses a CRD in the protected \
         group {group} (k8s.io, kubernetes.io and their subdomains) without it"
    ));
}

/// `version: v1` alone → `versions: [{name: v1, served: true, storage: true}]`.
fn build_versions(spec: &mut Map<String, Value>, notes: &mut Vec<String>) {
    let version = spec.remove("version");
    let has_list = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    if has_list {
        return;
    }
    if let Some(Value::String(name)) = version {
        spec.insert(
            "versions".into(),
            json!([{ "name": name, "served": true, "storage": true }]),
        );
        notes.push(format!(
            "spec.version {name} became spec.versions [{name}, served, storage]"
        ));
    }
}

/// Top-level `validation`, `subresources` and `additionalPrinterColumns`
/// are copied into each version without its own.
fn move_top_level(spec: &mut Map<String, Value>, notes: &mut Vec<String>) {
    let validation = spec
        .remove("validation")
        .and_then(|v| v.get("openAPIV3Schema").cloned());
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let moved: Vec<(&str, Option<Value>)> = vec![
        (
            "schema",
            validation.map(|s| json!({ "openAPIV3Schema": s })),
        ),
        ("subresources", subresources),
        ("additionalPrinterColumns", columns),
    ];
    let mut names = Vec::new();
    for (field, value) in moved {
        let Some(value) = value else { continue };
        let versions = spec.get_mut("versions").and_then(Value::as_array_mut);
        for version in versions.into_iter().flatten() {
            if let Some(version) = version.as_object_mut()
                && missing(version, field)
            {
                version.insert(field.into(), value.clone());
            }
        }
        names.push(match field {
            "schema" => "validation",
            other => other,
        });
    }
    if !names.is_empty() {
        notes.push(format!(
            "top-level {} moved into each version",
            names.join(", ")
        ));
    }
}

/// A printer column's `JSONPath` is `jsonPath` in v1.
fn printer_columns(version: &mut Map<String, Value>) {
    let columns = version
        .get_mut("additionalPrinterColumns")
        .and_then(Value::as_array_mut);
    for column in columns.into_iter().flatten() {
        if let Some(column) = column.as_object_mut() {
            rename(column, "JSONPath", "jsonPath");
        }
    }
}

/// `conversion: {strategy: Webhook, webhookClientConfig,
/// conversionReviewVersions}` → `conversion: {strategy: Webhook, webhook:
/// {clientConfig, conversionReviewVersions}}`.
fn convert_conversion(spec: &mut Map<String, Value>, notes: &mut Vec<String>) {
    let Some(conversion) = spec.get_mut("conversion").and_then(Value::as_object_mut) else {
        return;
    };
    let client = conversion.remove("webhookClientConfig");
    let reviews = conversion.remove("conversionReviewVersions");
    if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
        return;
    }
    let mut webhook = Map::new();
    if let Some(client) = client {
        webhook.insert("clientConfig".into(), client);
    }
    webhook.insert(
        "conversionReviewVersions".into(),
        reviews.unwrap_or_else(|| json!(["v1beta1"])),
    );
    conversion.insert("webhook".into(), Value::Object(webhook));
    notes.push(
        "conversion webhookClientConfig and conversionReviewVersions moved under \
         conversion.webhook"
            .into(),
    );
}

/// Counts what was done to the schemas, for one note.
#[derive(Default)]
struct SchemaFix {
    typed: Vec<String>,
    int_or_string: Vec<String>,
    open: Vec<String>,
    junctor_types: Vec<String>,
}

impl SchemaFix {
    fn root(&mut self, root: &mut Value, preserve: bool, version: &str) {
        let path = format!("{version}:");
        self.node(root, &path, true, preserve);
    }

    /// Makes one schema node structural where that is mechanical, then
    /// walks its `properties`, `additionalProperties` and `items`. The
    /// `allOf`/`anyOf`/`oneOf`/`not` branches are left alone: v1 forbids
    /// types there, which cannot be fixed without changing what validates.
    fn node(&mut self, node: &mut Value, path: &str, root: bool, preserve: bool) {
        let Some(map) = node.as_object_mut() else {
            return;
        };
        let untyped = missing(map, "type")
            && map.get(INT_OR_STRING) != Some(&Value::Bool(true))
            && map.get(PRESERVE) != Some(&Value::Bool(true));
        if untyped {
            let object = root
                || map.contains_key("properties")
                || map
                    .get("additionalProperties")
                    .is_some_and(Value::is_object);
            let inferred = if object {
                Some("object")
            } else if map.contains_key("items") {
                Some("array")
            } else {
                None
            };
            match inferred {
                Some(kind) => {
                    map.insert("type".into(), json!(kind));
                    self.typed.push(display(path));
                }
                None if int_or_string(map) => {
                    map.insert(INT_OR_STRING.into(), json!(true));
                    self.int_or_string.push(display(path));
                }
                None => {
                    map.insert(PRESERVE.into(), json!(true));
                    self.open.push(display(path));
                }
            }
        }
        if ["allOf", "anyOf", "oneOf"]
            .iter()
            .filter_map(|k| map.get(*k).and_then(Value::as_array))
            .flatten()
            .chain(map.get("not"))
            .any(|branch| branch.get("type").is_some())
            && !map.contains_key(INT_OR_STRING)
        {
            self.junctor_types.push(display(path));
        }
        // A map (additionalProperties) has no unknown fields to keep.
        let is_object = map.get("type").and_then(Value::as_str) == Some("object")
            && !map.contains_key("additionalProperties");
        if preserve && is_object && !map.contains_key(PRESERVE) {
            map.insert(PRESERVE.into(), json!(true));
        }
        if let Some(properties) = map.get_mut("properties").and_then(Value::as_object_mut) {
            for (name, child) in properties.iter_mut() {
                // The root's metadata may only restrict name and
                // generateName: it is left as written.
                if root && name == "metadata" {
                    continue;
                }
                self.node(child, &format!("{path}.{name}"), false, preserve);
            }
        }
        if let Some(child) = map.get_mut("additionalProperties")
            && child.is_object()
        {
            self.node(child, &format!("{path}.*"), false, preserve);
        }
        if let Some(child) = map.get_mut("items")
            && child.is_object()
        {
            self.node(child, &format!("{path}[]"), false, preserve);
        }
    }

    fn report(&self, notes: &mut Vec<String>) {
        let list = |paths: &[String]| {
            let shown: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
            let more = paths.len().saturating_sub(shown.len());
            if more > 0 {
                format!("{} and {more} more", shown.join(", "))
            } else {
                shown.join(", ")
            }
        };
        if !self.typed.is_empty() {
            notes.push(format!(
                "schema made structural: type added at {}",
                list(&self.typed)
            ));
        }
        if !self.int_or_string.is_empty() {
            notes.push(format!(
                "{INT_OR_STRING} set where anyOf/oneOf allowed an integer or a string: {}",
                list(&self.int_or_string)
            ));
        }
        if !self.open.is_empty() {
            notes.push(format!(
                "fields without a type accept any value ({PRESERVE}): {}",
                list(&self.open)
            ));
        }
        if !self.junctor_types.is_empty() {
            notes.push(format!(
                "type inside allOf/anyOf/oneOf/not is not structural and may be refused by the \
                 API server: {}",
                list(&self.junctor_types)
            ));
        }
    }
}

/// The schema root is shown as `v1:`, a field as `v1:.spec.size`.
fn display(path: &str) -> String {
    if path.ends_with(':') {
        format!("{path}<root>")
    } else {
        path.to_string()
    }
}

/// `anyOf` (or `oneOf`) of exactly `{type: integer}` and `{type: string}`:
/// the v1beta1 way of saying int-or-string. The branches are removed.
fn int_or_string(map: &mut Map<String, Value>) -> bool {
    for key in ["anyOf", "oneOf"] {
        let Some(branches) = map.get(key).and_then(Value::as_array) else {
            continue;
        };
        let mut types: Vec<&str> = branches
            .iter()
            .filter_map(|b| {
                let b = b.as_object()?;
                (b.len() == 1).then(|| b.get("type")?.as_str())?
            })
            .collect();
        types.sort_unstable();
        if branches.len() == 2 && types == ["integer", "string"] {
            map.remove(key);
            return true;
        }
    }
    false
}
