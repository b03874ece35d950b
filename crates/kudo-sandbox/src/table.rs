//! `meta.k8s.io/v1` Table output, which `kubectl get` asks for.

use serde_json::{Value, json};

use crate::registry::ResourceInfo;

struct Column {
    name: &'static str,
    kind: &'static str,
    priority: i64,
}

const fn col(name: &'static str, kind: &'static str, priority: i64) -> Column {
    Column {
        name,
        kind,
        priority,
    }
}

/// Whether an Accept header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

/// Formats an age the way kubectl does (`5s`, `3m`, `2d4h`).
pub fn human_age(created: &str) -> String {
    let Ok(ts) = created.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - ts.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s if s < 8 * 86400 => format!("{}d{}h", s / 86400, (s % 86400) / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Evaluates a simple JSONPath (`.a.b`, `.a[0].b`, `.a[?(@.type=="X")].b`).
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut cur = obj;
    let mut rest = path.trim_start_matches('.');
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inner = &after[..end];
            rest = after[end + 1..].trim_start_matches('.');
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (field, value) = filter.split_once("==")?;
                let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|i| i.get(field.trim()).and_then(Value::as_str) == Some(value))?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        cur = cur.get(&rest[..end])?;
        rest = rest[end..].trim_start_matches('.');
    }
    Some(cur)
}

fn text(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => json!("<none>"),
        Some(Value::String(s)) => json!(s),
        Some(Value::Array(a)) => json!(
            a.iter()
                .map(|x| x
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string()))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Some(other) => other.clone(),
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn builtin_columns(res: &ResourceInfo) -> Vec<Column> {
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => vec![
            col("Ready", "string", 0),
            col("Status", "string", 0),
            col("Restarts", "integer", 0),
            col("Age", "string", 0),
            col("IP", "string", 1),
            col("Node", "string", 1),
        ],
        ("apps", "deployments") => vec![
            col("Ready", "string", 0),
            col("Up-to-date", "integer", 0),
            col("Available", "integer", 0),
            col("Age", "string", 0),
        ],
        ("apps", "statefulsets") | ("apps", "replicasets") => {
            vec![col("Ready", "string", 0), col("Age", "string", 0)]
        }
        ("apps", "daemonsets") => vec![
            col("Desired", "integer", 0),
            col("Ready", "integer", 0),
            col("Age", "string", 0),
        ],
        ("batch", "jobs") => vec![
            col("Status", "string", 0),
            col("Completions", "string", 0),
            col("Age", "string", 0),
        ],
        ("", "services") => vec![
            col("Type", "string", 0),
            col("Cluster-IP", "string", 0),
            col("Port(s)", "string", 0),
            col("Age", "string", 0),
        ],
        ("", "namespaces") | ("", "nodes") => {
            vec![col("Status", "string", 0), col("Age", "string", 0)]
        }
        ("", "configmaps") => vec![col("Data", "integer", 0), col("Age", "string", 0)],
        ("", "secrets") => vec![
            col("Type", "string", 0),
            col("Data", "integer", 0),
            col("Age", "string", 0),
        ],
        ("", "events") => vec![
            col("Type", "string", 0),
            col("Reason", "string", 0),
            col("Object", "string", 0),
            col("Message", "string", 0),
        ],
        ("apiextensions.k8s.io", _) => vec![col("Created At", "date", 0)],
        _ => vec![col("Age", "string", 0)],
    }
}

fn builtin_cell(res: &ResourceInfo, name: &str, obj: &Value) -> Value {
    let st = &obj["status"];
    let age = || {
        json!(human_age(
            obj["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
        ))
    };
    match name {
        "Age" => age(),
        "Created At" => text(obj["metadata"].get("creationTimestamp")),
        "Ready" => match res.plural.as_str() {
            "pods" => json!(format!(
                "{}/{}",
                st["containerStatuses"]
                    .as_array()
                    .map_or(0, |cs| cs.iter().filter(|c| c["ready"] == true).count()),
                obj["spec"]["containers"].as_array().map_or(0, Vec::len)
            )),
            "daemonsets" => json!(int(&st["numberReady"])),
            _ => json!(format!(
                "{}/{}",
                int(&st["readyReplicas"]),
                obj["spec"]["replicas"].as_i64().unwrap_or(1)
            )),
        },
        "Status" => match res.plural.as_str() {
            "jobs" => {
                let done = |t: &str| {
                    st["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|x| x["type"] == t && x["status"] == "True"))
                };
                json!(if done("Complete") {
                    "Complete"
                } else if done("Failed") {
                    "Failed"
                } else {
                    "Running"
                })
            }
            "pods" if crate::objects::is_deleting(obj) => json!("Terminating"),
            "nodes" => {
                let ready = st["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
                    .map_or("Unknown", |c| {
                        if c["status"] == "True" {
                            "Ready"
                        } else {
                            "NotReady"
                        }
                    });
                if obj["spec"]["unschedulable"] == true {
                    json!(format!("{ready},SchedulingDisabled"))
                } else {
                    json!(ready)
                }
            }
            _ => text(st.get("phase")),
        },
        "Restarts" => json!(0),
        "IP" => text(st.get("podIP")),
        "Node" => text(obj["spec"].get("nodeName")),
        "Up-to-date" => json!(int(&st["updatedReplicas"])),
        "Available" => json!(int(&st["availableReplicas"])),
        "Desired" => json!(int(&st["desiredNumberScheduled"])),
        "Completions" => json!(format!(
            "{}/{}",
            int(&st["succeeded"]),
            obj["spec"]["completions"].as_i64().unwrap_or(1)
        )),
        "Type" if res.plural == "events" => text(obj.get("type")),
        "Type" if res.plural == "secrets" => text(obj.get("type")),
        "Type" => text(obj["spec"].get("type")),
        "Cluster-IP" => text(obj["spec"].get("clusterIP")),
        "Port(s)" => json!(
            obj["spec"]["ports"]
                .as_array()
                .map(|ps| ps
                    .iter()
                    .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                    .collect::<Vec<_>>()
                    .join(","))
                .unwrap_or_else(|| "<none>".into())
        ),
        "Data" => json!(
            obj["data"].as_object().map_or(0, |m| m.len())
                + obj["binaryData"].as_object().map_or(0, |m| m.len())
        ),
        "Reason" => text(obj.get("reason")),
        "Object" => json!(format!(
            "{}/{}",
            obj["involvedObject"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase(),
            obj["involvedObject"]["name"].as_str().unwrap_or_default()
        )),
        "Message" => text(obj.get("message")),
        _ => json!("<none>"),
    }
}

fn column_definitions(res: &ResourceInfo) -> Vec<Value> {
    let mut defs = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    if res.from_crd {
        for c in &res.printer_columns {
            defs.push(json!({"name": c.name, "type": c.column_type, "format": "", "description": "", "priority": c.priority}));
        }
        if !res.printer_columns.iter().any(|c| c.name == "Age") {
            defs.push(json!({"name": "Age", "type": "date", "format": "", "description": "", "priority": 0}));
        }
    } else {
        for c in builtin_columns(res) {
            defs.push(json!({"name": c.name, "type": c.kind, "format": "", "description": "", "priority": c.priority}));
        }
    }
    defs
}

fn row(res: &ResourceInfo, obj: &Value) -> Value {
    let mut cells = vec![obj["metadata"]["name"].clone()];
    if res.from_crd {
        for c in &res.printer_columns {
            let v = json_path(obj, &c.json_path);
            cells.push(if c.column_type == "date" {
                v.and_then(Value::as_str)
                    .map(|s| json!(human_age(s)))
                    .unwrap_or_else(|| json!("<none>"))
            } else {
                text(v)
            });
        }
        if !res.printer_columns.iter().any(|c| c.name == "Age") {
            cells.push(json!(human_age(
                obj["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or_default()
            )));
        }
    } else {
        for c in builtin_columns(res) {
            cells.push(builtin_cell(res, c.name, obj));
        }
    }
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]},
    })
}

/// A Table for a list of objects. `with_columns` false for watch events after the first.
pub fn table<'a>(
    res: &ResourceInfo,
    objs: impl Iterator<Item = &'a Value>,
    resource_version: &str,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objs.map(|o| row(res, o)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": if with_columns { column_definitions(res) } else { Vec::new() },
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn json_path_supports_filters_and_indexes() {
        let obj = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            json_path(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            Some(&json!("True"))
        );
        assert_eq!(
            json_path(&obj, ".status.conditions[0].type"),
            Some(&json!("A"))
        );
        assert_eq!(json_path(&obj, ".status.missing"), None);
    }

    #[test]
    fn deployment_rows_show_ready_counts() {
        let res = Registry::builtin()
            .find("apps", "v1", "deployments")
            .cloned()
            .unwrap();
        let obj = json!({"metadata": {"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"}, "spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
        let t = table(&res, [&obj].into_iter(), "5", true);
        assert_eq!(t["rows"][0]["cells"][1], "2/3");
        assert_eq!(t["columnDefinitions"][1]["name"], "Ready");
    }

    #[test]
    fn wants_table_only_when_table_is_preferred() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
