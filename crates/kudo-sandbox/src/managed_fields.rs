//! `metadata.managedFields` as kube-apiserver shows it, computed from the
//! ownership at output time and serialised straight from the stored object
//! and its ownership, so neither is copied and writes pay nothing for it.

use std::fmt::{self, Write as _};

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::owners::{FieldPath, Manager, Owned, Owners};
use crate::ssa::parse_item_segment;

/// An object as a client reads it: the apiVersion and kind it asked for,
/// and `metadata.managedFields`.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The stored object.
    pub obj: &'a Value,
    /// apiVersion to show.
    pub api_version: &'a str,
    /// kind to show.
    pub kind: &'a str,
    /// Its field ownership.
    pub owners: &'a Owners,
}

impl Serialize for Shown<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(m) = self.obj.as_object() else {
            return self.obj.serialize(s);
        };
        // Entries name the version the object was written in, not the one read.
        let written = m
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(self.api_version);
        let mut map = s.serialize_map(None)?;
        for (k, v) in m {
            match (k.as_str(), v) {
                ("apiVersion", _) => map.serialize_entry(k, self.api_version)?,
                ("kind", _) => map.serialize_entry(k, self.kind)?,
                ("metadata", Value::Object(meta)) => {
                    let managed = ManagedFields {
                        owners: self.owners,
                        api_version: written,
                    };
                    map.serialize_entry(k, &Meta { meta, managed })?;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        if !m.contains_key("apiVersion") {
            map.serialize_entry("apiVersion", self.api_version)?;
        }
        if !m.contains_key("kind") {
            map.serialize_entry("kind", self.kind)?;
        }
        map.end()
    }
}

/// A list response of [`Shown`] objects.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShownList<'a> {
    /// The list's apiVersion.
    pub api_version: &'a str,
    /// `<Kind>List`.
    pub kind: String,
    /// resourceVersion and paging.
    pub metadata: Value,
    /// The objects.
    pub items: Vec<Shown<'a>>,
}

struct Meta<'a> {
    meta: &'a serde_json::Map<String, Value>,
    managed: ManagedFields<'a>,
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.meta.iter().filter(|(k, _)| *k != "managedFields") {
            map.serialize_entry(k, v)?;
        }
        if !self.managed.owners.is_empty() {
            map.serialize_entry("managedFields", &self.managed)?;
        }
        map.end()
    }
}

/// The `managedFields` list of an object written in `api_version`.
#[derive(Debug, Clone, Copy)]
pub struct ManagedFields<'a> {
    /// Ownership.
    pub owners: &'a Owners,
    /// apiVersion recorded in each entry.
    pub api_version: &'a str,
}

impl Serialize for ManagedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Oldest change first, roughly the order kube-apiserver keeps.
        let mut entries: Vec<(&Manager, &Owned)> = self.owners.iter().collect();
        entries.sort_by(|a, b| (&a.1.time, a.0).cmp(&(&b.1.time, b.0)));
        let mut seq = s.serialize_seq(Some(entries.len()))?;
        for (manager, owned) in entries {
            seq.serialize_element(&EntryOut {
                manager,
                owned,
                api_version: self.api_version,
            })?;
        }
        seq.end()
    }
}

struct EntryOut<'a> {
    manager: &'a Manager,
    owned: &'a Owned,
    api_version: &'a str,
}

impl Serialize for EntryOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("manager", &self.manager.name)?;
        map.serialize_entry("operation", self.manager.op.as_str())?;
        map.serialize_entry("apiVersion", self.api_version)?;
        if !self.owned.time.is_empty() {
            map.serialize_entry("time", &self.owned.time)?;
        }
        map.serialize_entry("fieldsType", "FieldsV1")?;
        let paths: Vec<&FieldPath> = self.owned.fields.iter().filter(|p| !p.is_empty()).collect();
        let fields = Node {
            paths: &paths,
            depth: 0,
            dot: false,
        };
        map.serialize_entry("fieldsV1", &fields)?;
        if self.manager.status {
            map.serialize_entry("subresource", "status")?;
        }
        map.end()
    }
}

/// One level of FieldsV1 over sorted paths that all share their first
/// `depth` segments (sorting keeps each child's paths contiguous).
struct Node<'a> {
    paths: &'a [&'a FieldPath],
    depth: usize,
    /// Whether to emit `".": {}` (the node itself is owned, or a list item).
    dot: bool,
}

struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if self.dot {
            map.serialize_entry(".", &Empty)?;
        }
        let mut rest = self.paths;
        while let Some(first) = rest.first() {
            let seg = &first[self.depth];
            let len = rest
                .iter()
                .position(|p| p[self.depth] != *seg)
                .unwrap_or(rest.len());
            let (group, tail) = rest.split_at(len);
            rest = tail;
            // The path ending here sorts before the longer ones below it.
            let leaf = group[0].len() == self.depth + 1;
            let children = if leaf { &group[1..] } else { group };
            let item = parse_item_segment(seg).is_some();
            map.serialize_key(&FieldKey(seg))?;
            if children.is_empty() && !item {
                map.serialize_value(&Empty)?;
            } else {
                map.serialize_value(&Node {
                    paths: children,
                    depth: self.depth + 1,
                    dot: item || leaf,
                })?;
            }
        }
        map.end()
    }
}

/// `f:<key>` for a map key, `k:{"<key>":<value>}` for an associative list
/// item. Written straight into the output: there is one per owned node.
struct FieldKey<'a>(&'a str);

impl Serialize for FieldKey<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for FieldKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some((key, id)) = parse_item_segment(self.0) else {
            f.write_str("f:")?;
            return f.write_str(self.0);
        };
        f.write_str("k:{")?;
        json_str(f, key)?;
        f.write_char(':')?;
        // Paths keep item keys as text; the numeric list keys are ports.
        if matches!(key, "containerPort" | "port") && id.parse::<serde_json::Number>().is_ok() {
            f.write_str(id)?;
        } else {
            json_str(f, id)?;
        }
        f.write_char('}')
    }
}

fn json_str(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    // Plain runs in one write: each write is escaped again by serde_json.
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            c if c.is_control() => "",
            _ => continue,
        };
        f.write_str(&s[plain..i])?;
        if escaped.is_empty() {
            write!(f, "\\u{:04x}", c as u32)?;
        } else {
            f.write_str(escaped)?;
        }
        plain = i + c.len_utf8();
    }
    f.write_str(&s[plain..])?;
    f.write_char('"')
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::owners::Op;

    fn path(segs: &[&str]) -> FieldPath {
        segs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fields_v1_encodes_keys_items_and_leaves_like_kube_apiserver() {
        let fields = BTreeSet::from([
            path(&["data", "k"]),
            path(&["metadata", "labels", "app"]),
            path(&["spec", "containers", "[name=c]", "image"]),
            path(&["spec", "containers", "[name=c]", "name"]),
            path(&["spec", "ports", "[port=80]", "port"]),
            path(&["spec", "args"]),
        ]);
        let mut owners = Owners::new();
        owners.insert(Manager::new("m", Op::Update, true), Owned::new(fields));
        let out = serde_json::to_value(ManagedFields {
            owners: &owners,
            api_version: "v1",
        })
        .unwrap();
        let entry = &out[0];
        assert_eq!(entry["manager"], "m");
        assert_eq!(entry["operation"], "Update");
        assert_eq!(entry["apiVersion"], "v1");
        assert_eq!(entry["fieldsType"], "FieldsV1");
        assert_eq!(entry["subresource"], "status");
        assert!(entry["time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(
            entry["fieldsV1"],
            json!({
                "f:data": {"f:k": {}},
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:args": {},
                    "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}},
                    "f:ports": {"k:{\"port\":80}": {".": {}, "f:port": {}}},
                },
            })
        );
    }

    #[test]
    fn item_keys_are_json_even_for_odd_names() {
        let key = FieldKey("[name=a\"b\\c]").to_string();
        let json: Value = serde_json::from_str(key.strip_prefix("k:").unwrap()).unwrap();
        assert_eq!(json, json!({"name": "a\"b\\c"}));
        assert_eq!(FieldKey("[port=http]").to_string(), r#"k:{"port":"http"}"#);
    }

    #[test]
    fn shown_objects_carry_managed_fields_and_the_version_asked_for() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "managedFields": "junk"}, "data": {"k": "v"}});
        let mut owners = Owners::new();
        let fields = BTreeSet::from([path(&["data", "k"])]);
        owners.insert(Manager::new("m", Op::Apply, false), Owned::new(fields));
        let shown = |owners| Shown {
            obj: &obj,
            api_version: "v1",
            kind: "ConfigMap",
            owners,
        };
        let out = serde_json::to_value(shown(&owners)).unwrap();
        assert_eq!(out["metadata"]["managedFields"][0]["operation"], "Apply");
        assert_eq!(
            out["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:data": {"f:k": {}}})
        );
        assert!(
            out["metadata"]["managedFields"][0]
                .get("subresource")
                .is_none()
        );
        let none = serde_json::to_value(shown(&Owners::new())).unwrap();
        assert!(none["metadata"].get("managedFields").is_none());
        assert_eq!(none["data"], obj["data"]);
    }
}
