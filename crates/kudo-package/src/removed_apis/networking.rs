//! `extensions/v1beta1` and `networking.k8s.io/v1beta1` Ingress →
//! `networking.k8s.io/v1` (removed in 1.22).
//!
//! - `spec.backend` is now `spec.defaultBackend`;
//! - a backend's `serviceName`/`servicePort` are now `service.name` and
//!   `service.port.number` (an integer port) or `service.port.name` (a
//!   named port); a port written as a string of digits is a number;
//! - every path needs a `pathType`; `ImplementationSpecific` is what the
//!   beta versions did when none was given.
//!
//! IngressClass and NetworkPolicy move without change (see `table.rs`).

use serde_json::{Map, Value, json};

use super::Refusal;
use super::json::{missing, object_mut, rename};

pub(super) fn ingress(obj: &mut Value, _: &str, notes: &mut Vec<String>) -> Result<(), Refusal> {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return Ok(());
    };
    let mut converted = 0usize;
    let mut digit_ports = 0usize;
    if rename(spec, "backend", "defaultBackend") {
        notes.push("spec.backend is now spec.defaultBackend".into());
    }
    if let Some(backend) = spec
        .get_mut("defaultBackend")
        .and_then(Value::as_object_mut)
    {
        convert_backend(backend, &mut converted, &mut digit_ports);
    }
    let mut defaulted_types = 0usize;
    let rules = spec.get_mut("rules").and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten() {
        let paths = rule
            .pointer_mut("/http/paths")
            .and_then(Value::as_array_mut);
        for path in paths.into_iter().flatten() {
            let Some(path) = path.as_object_mut() else {
                continue;
            };
            if missing(path, "pathType") {
                path.insert("pathType".into(), json!("ImplementationSpecific"));
                defaulted_types += 1;
            }
            if let Some(backend) = path.get_mut("backend").and_then(Value::as_object_mut) {
                convert_backend(backend, &mut converted, &mut digit_ports);
            }
        }
    }
    if converted > 0 {
        notes.push(format!(
            "{converted} backend{} serviceName/servicePort rewritten as service.name/service.port",
            plural(converted)
        ));
    }
    if digit_ports > 0 {
        notes.push(format!(
            "{digit_ports} servicePort{} written as a string of digits taken as a port number",
            plural(digit_ports)
        ));
    }
    if defaulted_types > 0 {
        notes.push(format!(
            "pathType ImplementationSpecific set on {defaulted_types} path{} without one, the \
             behaviour of the beta versions",
            plural(defaulted_types)
        ));
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `{serviceName, servicePort}` → `{service: {name, port: {number|name}}}`;
/// a `resource` backend is the same in both versions.
fn convert_backend(backend: &mut Map<String, Value>, converted: &mut usize, digits: &mut usize) {
    let name = backend.remove("serviceName");
    let port = backend.remove("servicePort");
    if name.is_none() && port.is_none() {
        return;
    }
    let mut service = Map::new();
    if let Some(name) = name {
        service.insert("name".into(), name);
    }
    if let Some(port) = port {
        let port = match port {
            Value::String(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                *digits += 1;
                match text.parse::<i64>() {
                    Ok(number) => json!({ "number": number }),
                    Err(_) => json!({ "name": text }),
                }
            }
            Value::String(text) => json!({ "name": text }),
            other => json!({ "number": other }),
        };
        service.insert("port".into(), port);
    }
    backend.insert("service".into(), Value::Object(service));
    *converted += 1;
}
