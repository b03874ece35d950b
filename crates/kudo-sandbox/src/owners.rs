//! Who owns which fields of an object: one entry per field manager,
//! operation and subresource, as `metadata.managedFields` shows them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::objects::now_rfc3339;

/// A field path inside an object (map keys, and `[key=value]` for list items).
pub type FieldPath = Vec<String>;

/// Fields owned per manager entry.
pub type Owners = BTreeMap<Manager, Owned>;

/// How a manager came to own its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Server-side apply.
    Apply,
    /// Create, update, or a patch other than apply.
    Update,
}

impl Op {
    /// The `operation` of a managedFields entry.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Apply => "Apply",
            Op::Update => "Update",
        }
    }
}

/// One managedFields entry's identity. Like kube-apiserver, the same
/// manager name applying and updating (or writing `/status`) holds separate
/// entries, and they conflict with each other on apply.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Manager {
    /// The fieldManager.
    pub name: String,
    /// Apply or Update.
    pub op: Op,
    /// Written through the `status` subresource.
    pub status: bool,
}

impl Manager {
    /// An entry key.
    pub fn new(name: &str, op: Op, status: bool) -> Self {
        Self {
            name: name.to_string(),
            op,
            status,
        }
    }
}

/// The fields of one entry and when the manager last changed them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Owned {
    /// Leaf paths owned. Shared, so planning a write copies only the sets it changes.
    pub fields: Arc<BTreeSet<FieldPath>>,
    /// RFC 3339 time of the manager's last change ("" if unknown).
    pub time: String,
}

impl Owned {
    /// Entry fields stamped now.
    pub fn new(fields: BTreeSet<FieldPath>) -> Self {
        Self {
            fields: Arc::new(fields),
            time: now_rfc3339(),
        }
    }

    /// Removes a path; copies the shared set only if it holds the path.
    pub fn remove(&mut self, path: &FieldPath) {
        if self.fields.contains(path) {
            Arc::make_mut(&mut self.fields).remove(path);
        }
    }
}

/// Longest fieldManager kube-apiserver accepts.
const MAX_MANAGER_LEN: usize = 128;

/// The manager of a non-apply write, as kube-apiserver names it: the
/// `fieldManager` parameter, else the User-Agent up to its first `/`
/// (`kubectl-edit/v1.30.0 (linux/amd64) ...` is `kubectl-edit`).
pub fn update_manager(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let mut name = String::new();
    let prefix = user_agent.unwrap_or_default().split('/').next();
    for c in prefix
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
    {
        if name.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        name.push(c);
    }
    if name.is_empty() {
        "unknown".to_string()
    } else {
        name
    }
}

/// Snapshot form of an entry.
#[derive(Deserialize)]
struct Entry {
    manager: String,
    operation: Op,
    #[serde(default)]
    status: bool,
    #[serde(default)]
    time: String,
    fields: BTreeSet<FieldPath>,
}

/// [`Entry`] as written, borrowing from the owners.
#[derive(Serialize)]
struct EntryRef<'a> {
    manager: &'a str,
    operation: Op,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    status: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    time: &'a str,
    fields: &'a BTreeSet<FieldPath>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Entries(Vec<Entry>),
    /// Snapshots from before entries had operations: every owner had applied.
    ByManager(BTreeMap<String, BTreeSet<FieldPath>>),
}

/// Serde for [`Owners`] in snapshots (map keys must be strings in JSON).
pub mod snapshot {
    use super::*;

    /// Writes the entries as a list.
    pub fn serialize<S: serde::Serializer>(owners: &Owners, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(owners.iter().map(|(m, o)| EntryRef {
            manager: &m.name,
            operation: m.op,
            status: m.status,
            time: &o.time,
            fields: &o.fields,
        }))
    }

    /// Reads the list, or the older map of appliers.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Owners, D::Error> {
        Ok(match Stored::deserialize(d)? {
            Stored::Entries(entries) => entries
                .into_iter()
                .map(|e| {
                    let owned = Owned {
                        fields: Arc::new(e.fields),
                        time: e.time,
                    };
                    (Manager::new(&e.manager, e.operation, e.status), owned)
                })
                .collect(),
            Stored::ByManager(map) => map
                .into_iter()
                .map(|(name, fields)| {
                    let owned = Owned {
                        fields: Arc::new(fields),
                        time: String::new(),
                    };
                    (Manager::new(&name, Op::Apply, false), owned)
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_manager_prefers_the_parameter_then_the_user_agent_prefix() {
        let ua = Some("kubectl-edit/v1.30.0 (linux/amd64) kubernetes/7c48c2b");
        assert_eq!(update_manager(Some("mine"), ua), "mine");
        assert_eq!(update_manager(Some(""), ua), "kubectl-edit");
        assert_eq!(
            update_manager(None, Some("kubectl-client-side-apply/v1.30.0")),
            "kubectl-client-side-apply"
        );
        assert_eq!(update_manager(None, None), "unknown");
        assert_eq!(update_manager(None, Some("/x")), "unknown");
        assert_eq!(update_manager(None, Some(&"a".repeat(300))).len(), 128);
    }

    #[test]
    fn snapshots_keep_entries_and_read_the_older_map() {
        let mut owners = Owners::new();
        let fields = BTreeSet::from([vec!["data".to_string(), "k".to_string()]]);
        owners.insert(
            Manager::new("m", Op::Update, true),
            Owned::new(fields.clone()),
        );
        #[derive(Serialize, Deserialize)]
        struct W(#[serde(with = "snapshot")] Owners);
        let text = serde_json::to_string(&W(owners.clone())).unwrap();
        let back: W = serde_json::from_str(&text).unwrap();
        assert_eq!(back.0, owners);
        let old: W = serde_json::from_str(r#"{"a":[["data","k"]]}"#).unwrap();
        let (m, o) = old.0.into_iter().next().unwrap();
        assert_eq!((m.name.as_str(), m.op, m.status), ("a", Op::Apply, false));
        assert_eq!(*o.fields, fields);
    }
}
