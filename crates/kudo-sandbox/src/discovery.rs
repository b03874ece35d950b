//! Discovery documents: /version, /api, /apis and the per-group-version
//! resource lists.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-kudo-sandbox",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "none (kudo-sandbox is written in Rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let (g, vs) = registry.groups().into_iter().find(|(g, _)| g == name)?;
    let mut entry = group_entry(&g, &vs);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

fn resource_entries(r: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": VERBS,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        main["categories"] = json!(r.categories);
    }
    let mut out = vec![main];
    if r.status {
        out.push(json!({
            "name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced,
            "kind": r.kind, "verbs": ["get", "patch", "update"],
        }));
    }
    if r.group.is_empty() && r.plural == "pods" {
        out.push(json!({
            "name": "pods/eviction", "singularName": "", "namespaced": true,
            "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"],
        }));
    }
    if r.scale {
        out.push(json!({
            "name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced,
            "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
        }));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`; None if nothing is served there.
pub fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let list: Vec<Value> = registry
        .in_group_version(group, version)
        .flat_map(resource_entries)
        .collect();
    if list.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_list_has_namespaced_flags_and_subresources() {
        let doc = resources(&Registry::builtin(), "", "v1").unwrap();
        let res = doc["resources"].as_array().unwrap();
        let ns = res.iter().find(|r| r["name"] == "namespaces").unwrap();
        assert_eq!(ns["namespaced"], false);
        assert!(res.iter().any(|r| r["name"] == "pods/status"));
        let eviction = res.iter().find(|r| r["name"] == "pods/eviction").unwrap();
        assert_eq!(
            (&eviction["group"], &eviction["kind"]),
            (&json!("policy"), &json!("Eviction"))
        );
        let cm = res.iter().find(|r| r["name"] == "configmaps").unwrap();
        assert_eq!(cm["shortNames"], json!(["cm"]));
    }

    #[test]
    fn groups_list_preferred_versions() {
        let doc = groups(&Registry::builtin());
        let apps = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        assert!(resources(&Registry::builtin(), "apps", "v2").is_none());
    }
}
