//! Writes that would change nothing: answered with the stored object, as the
//! API server does, without a new resourceVersion or watch event.

use serde_json::Value;

use super::{Operation, Planned, State};

impl State {
    /// The stored object when an update (or the delete of an object already
    /// being deleted) would leave it and its field ownership exactly as they are.
    pub(super) fn unchanged_by(&self, p: &Planned) -> Option<Value> {
        let (Operation::Update | Operation::Delete, Some(old), Some(new)) = (p.op, &p.old, &p.new)
        else {
            return None;
        };
        let stored = self
            .store
            .get(&p.res.group, &p.res.plural, &p.namespace, &p.name)?;
        (stored.owners == p.owners && same_ignoring_resource_version(old, new))
            .then(|| (**old).clone())
    }
}

/// Equality of two objects, not counting `metadata.resourceVersion`.
fn same_ignoring_resource_version(old: &Value, new: &Value) -> bool {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return old == new;
    };
    o.len() == n.len()
        && o.iter().all(|(k, ov)| match (n.get(k), k.as_str()) {
            (Some(nv), "metadata") => match (ov.as_object(), nv.as_object()) {
                (Some(om), Some(nm)) => same_metadata(om, nm),
                _ => ov == nv,
            },
            (Some(nv), _) => ov == nv,
            (None, _) => false,
        })
}

fn same_metadata(o: &serde_json::Map<String, Value>, n: &serde_json::Map<String, Value>) -> bool {
    let rv = "resourceVersion";
    let counted = |m: &serde_json::Map<String, Value>| m.keys().filter(|k| *k != rv).count();
    counted(o) == counted(n)
        && o.iter()
            .filter(|(k, _)| *k != rv)
            .all(|(k, ov)| n.get(k) == Some(ov))
}
