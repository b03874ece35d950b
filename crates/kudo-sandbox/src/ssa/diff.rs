//! What a non-apply write changed, as leaf field paths, found in one walk
//! over the old and new object. Status writers rewrite large objects often,
//! so the walk compares each value once and allocates only for the leaves
//! that changed.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Scope, collect_leaves, in_scope, item_segment, list_key};
use crate::owners::FieldPath;

/// Leaf paths a write set to a new value, and leaf paths it removed.
#[derive(Debug, Default)]
pub(super) struct Diff {
    /// Added or changed.
    pub changed: BTreeSet<FieldPath>,
    /// Present before, gone now.
    pub removed: BTreeSet<FieldPath>,
}

/// A path segment borrowed from the objects during the walk.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Item(&'static str, &'a Value),
}

struct Walk<'a> {
    path: Vec<Seg<'a>>,
    out: Diff,
}

/// The [`Diff`] of the parts of two objects a write in `scope` may own.
pub(super) fn diff_scoped(old: &Value, new: &Value, scope: Scope) -> Diff {
    let empty = Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut walk = Walk {
        path: Vec::new(),
        out: Diff::default(),
    };
    walk.map(o, n, |k| in_scope(k, scope));
    if scope != Scope::Status {
        for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
            walk.path = vec![Seg::Key("metadata"), Seg::Key(field)];
            walk.node(old["metadata"].get(field), new["metadata"].get(field));
        }
    }
    walk.out
}

/// The item of `items` with the same key value as `item`, looked for at
/// `hint` first: lists mostly keep their order.
fn same_item<'a>(items: &'a [Value], hint: usize, key: &str, item: &Value) -> Option<&'a Value> {
    let id = item.get(key);
    match items.get(hint) {
        Some(i) if i.get(key) == id => Some(i),
        _ => items.iter().find(|i| i.get(key) == id),
    }
}

impl<'a> Walk<'a> {
    fn field_path(&self) -> FieldPath {
        self.path
            .iter()
            .map(|s| match *s {
                Seg::Key(k) => k.to_string(),
                Seg::Item(key, item) => item_segment(key, item),
            })
            .collect()
    }

    fn map(
        &mut self,
        o: &'a Map<String, Value>,
        n: &'a Map<String, Value>,
        include: impl Fn(&str) -> bool,
    ) {
        let mut found = 0;
        for (k, v) in n.iter().filter(|(k, _)| include(k)) {
            let before = o.get(k);
            found += usize::from(before.is_some());
            self.path.push(Seg::Key(k));
            self.node(before, Some(v));
            self.path.pop();
        }
        if found == o.len() {
            return;
        }
        for (k, v) in o.iter().filter(|(k, _)| include(k) && !n.contains_key(*k)) {
            self.path.push(Seg::Key(k));
            self.node(Some(v), None);
            self.path.pop();
        }
    }

    fn node(&mut self, old: Option<&'a Value>, new: Option<&'a Value>) {
        if let (Some(Value::Object(o)), Some(Value::Object(n))) = (old, new)
            && !o.is_empty()
            && !n.is_empty()
        {
            return self.map(o, n, |_| true);
        }
        if let (Some(Value::Array(o)), Some(Value::Array(n))) = (old, new)
            && let Some(key) = list_key(n)
            && list_key(o) == Some(key)
        {
            for (i, item) in n.iter().enumerate() {
                // Items are small and mostly unchanged: one comparison skips them.
                let before = same_item(o, i, key, item);
                if before == Some(item) {
                    continue;
                }
                self.path.push(Seg::Item(key, item));
                self.node(before, Some(item));
                self.path.pop();
            }
            for (i, item) in o.iter().enumerate() {
                if same_item(n, i, key, item).is_none() {
                    self.path.push(Seg::Item(key, item));
                    self.node(Some(item), None);
                    self.path.pop();
                }
            }
            return;
        }
        // A leaf, an atomic list, or a change of shape.
        if old == new {
            return;
        }
        let mut path = self.field_path();
        let mut now = BTreeSet::new();
        if let Some(n) = new {
            collect_leaves(n, &mut path, &mut now);
        }
        if let Some(o) = old {
            // Only leaves that are gone: a changed leaf stays owned, by its writer.
            let mut before = BTreeSet::new();
            collect_leaves(o, &mut path, &mut before);
            self.out
                .removed
                .extend(before.into_iter().filter(|p| !now.contains(p)));
        }
        self.out.changed.extend(now);
    }
}
