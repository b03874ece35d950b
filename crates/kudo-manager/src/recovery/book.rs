//! The render book of an Instance: for every object its plans applied and
//! have not deleted since, the object exactly as last applied (after
//! dependency hashing) and the fields kudo-manager owned right after that
//! apply. Recovery re-applies from it; drift is judged against it.
//!
//! It is kept in a Secret next to the Instance (rendered Secrets are in
//! it), owned by the Instance so that it goes with it.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use kudo_api::AppliedObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most bytes the compressed book may take: a Secret holds at most 1 MiB.
pub const MAX_STORED: usize = 900 * 1024;
/// Most bytes a book may take as JSON: what [`RenderBook::encode`] writes
/// and [`RenderBook::decode`] reads (a damaged or hostile Secret must not
/// grow the manager, and renders that compress well must not make every
/// reload parse tens of MiB).
const MAX_DECODED: u64 = 16 * 1024 * 1024;
/// Key of the book in the Secret's data.
pub const DATA_KEY: &str = "renders.json.gz";

/// One object as last applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The object.
    pub object: AppliedObject,
    /// Plan that applied it.
    pub plan: String,
    /// The object as applied; `None` when the book had no room for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<Value>,
    /// `fieldsV1` of kudo-manager's apply right after it (`null` if the
    /// response had none).
    #[serde(default)]
    pub fields: Value,
}

/// The render book of one Instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderBook {
    entries: BTreeMap<AppliedObject, Entry>,
    /// Changed since it was loaded or saved.
    dirty: bool,
    /// Its Secret could not be read: record nothing, save nothing (saving
    /// would overwrite the stored book with a partial one).
    unavailable: bool,
}

impl RenderBook {
    /// A book whose Secret could not be read: it records and saves
    /// nothing, so drift of this Instance is not recovered until it can be.
    pub fn unavailable() -> Self {
        Self {
            unavailable: true,
            ..Self::default()
        }
    }

    /// Whether it stands for a Secret that could not be read.
    pub fn is_unavailable(&self) -> bool {
        self.unavailable
    }

    /// Records an apply.
    pub fn applied(&mut self, plan: &str, object: AppliedObject, render: Value, fields: Value) {
        if self.unavailable {
            return;
        }
        let entry = Entry {
            object: object.clone(),
            plan: plan.to_string(),
            render: Some(render),
            fields,
        };
        if self.entries.get(&object) != Some(&entry) {
            self.entries.insert(object, entry);
            self.dirty = true;
        }
    }

    /// Records a deletion by a plan (nothing to recover any more).
    pub fn removed(&mut self, object: &AppliedObject) {
        self.dirty |= self.entries.remove(object).is_some();
    }

    /// The entry of `object`.
    pub fn get(&self, object: &AppliedObject) -> Option<&Entry> {
        self.entries.get(object)
    }

    /// All entries.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    /// Whether it changed since it was loaded or last saved.
    pub fn is_dirty(&self) -> bool {
        self.dirty && !self.unavailable
    }

    /// Marks it saved.
    pub fn saved(&mut self) {
        self.dirty = false;
    }

    /// The gzip-compressed JSON to store, at most [`MAX_STORED`] bytes:
    /// when the renders do not fit, the largest are left out (their fields
    /// stay, so drift is still seen) and named in the second value.
    ///
    /// Linear in the book's size: each render's size is measured once, and
    /// each round leaves out as many of the largest renders as the last
    /// compression ratio says are too much (a few rounds at most), instead
    /// of compressing the whole book again per render left out.
    pub fn encode(&self) -> (Vec<u8>, Vec<AppliedObject>) {
        // Usually the whole book fits: serialised from borrowed entries,
        // once; copies are made only to leave renders out.
        let json =
            serde_json::to_vec(&self.entries.values().collect::<Vec<_>>()).unwrap_or_default();
        let mut raw = json.len();
        let max_raw = usize::try_from(MAX_DECODED).unwrap_or(usize::MAX);
        let mut bytes = gzip(&json);
        if bytes.len() <= MAX_STORED && raw <= max_raw {
            return (bytes, Vec::new());
        }
        let mut entries: Vec<Entry> = self.entries.values().cloned().collect();
        // Renders, largest first, with their JSON sizes.
        let mut by_size: Vec<(usize, usize)> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.render
                    .as_ref()
                    .map(|r| (kudo_package::render::json_size(r), i))
            })
            .collect();
        by_size.sort_unstable_by(|a, b| b.cmp(a));
        let mut next = 0;
        let mut dropped = Vec::new();
        for _ in 0..MAX_ROUNDS {
            // Raw bytes that would compress to what fits, at the ratio just
            // seen (aim a little lower so the next round usually fits).
            let ratio = bytes.len() as f64 / raw.max(1) as f64;
            let target =
                ((MAX_STORED as f64 * 0.95 / ratio.max(f64::EPSILON)) as usize).min(max_raw);
            while raw > target && next < by_size.len() {
                let (size, i) = by_size[next];
                next += 1;
                if let Some(e) = entries.get_mut(i) {
                    e.render = None;
                    dropped.push(e.object.clone());
                }
                raw = raw.saturating_sub(size);
            }
            bytes = compress(&entries);
            if bytes.len() <= MAX_STORED && raw <= max_raw {
                return (bytes, dropped);
            }
            if next >= by_size.len() {
                break;
            }
            raw = serde_json_size(&entries);
        }
        // Even the fields alone do not fit: keep nothing.
        (
            compress(&[]),
            entries.into_iter().map(|e| e.object).collect(),
        )
    }

    /// Keeps only the entries that can be what this manager applied for an
    /// Instance of `namespace` (see [`Entry::fits`]); the rest are named in
    /// the result.
    pub fn keep_fitting(
        &mut self,
        namespace: &str,
        cluster_scoped: &[AppliedObject],
    ) -> Vec<(AppliedObject, String)> {
        let mut refused = Vec::new();
        self.entries.retain(
            |object, entry| match entry.fits(namespace, cluster_scoped) {
                Ok(()) => true,
                Err(why) => {
                    refused.push((object.clone(), why));
                    false
                }
            },
        );
        self.dirty |= !refused.is_empty();
        refused
    }

    /// Reads a stored book.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut json = Vec::new();
        GzDecoder::new(bytes)
            .take(MAX_DECODED + 1)
            .read_to_end(&mut json)
            .map_err(|e| format!("not gzip: {e}"))?;
        if json.len() as u64 > MAX_DECODED {
            return Err(format!("decompresses to more than {MAX_DECODED} bytes"));
        }
        let entries: Vec<Entry> =
            serde_json::from_slice(&json).map_err(|e| format!("not a render book: {e}"))?;
        Ok(Self {
            entries: entries.into_iter().map(|e| (e.object.clone(), e)).collect(),
            dirty: false,
            unavailable: false,
        })
    }
}

/// Rounds of [`RenderBook::encode`] before it gives up on renders.
const MAX_ROUNDS: usize = 8;

fn serde_json_size(entries: &[Entry]) -> usize {
    kudo_package::render::json_size(&entries)
}

impl Entry {
    /// Whether this entry can be what this manager applied for an
    /// Instance of `namespace`: its render is the object it is filed under,
    /// a namespaced object lies in the Instance's namespace, and a
    /// cluster-scoped one is among `cluster_scoped`, the objects the
    /// Instance's plans applied (its status, which only the manager writes).
    pub fn fits(&self, namespace: &str, cluster_scoped: &[AppliedObject]) -> Result<(), String> {
        if let Some(render) = &self.render {
            let rendered = crate::executor::object_identity(render);
            if rendered != self.object {
                return Err(format!(
                    "its render is {} {}, not the object it is filed under",
                    rendered.kind, rendered.name
                ));
            }
        }
        match self.object.namespace.as_deref() {
            Some(ns) if ns == namespace => Ok(()),
            Some(ns) => Err(format!(
                "it is in namespace {ns}, not the Instance's namespace {namespace}"
            )),
            None if cluster_scoped.contains(&self.object) => Ok(()),
            None => Err("it is cluster-scoped and no plan of the Instance applied it".to_string()),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Compressions done on this thread (tests count rounds with it).
    static COMPRESSIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn compress(entries: &[Entry]) -> Vec<u8> {
    gzip(&serde_json::to_vec(entries).unwrap_or_default())
}

/// The JSON goes to the encoder in one write: serde_json writes each
/// token separately, and flate2 zero-fills its output buffer on every
/// write it is given, which cost more than the compression itself.
fn gzip(json: &[u8]) -> Vec<u8> {
    #[cfg(test)]
    COMPRESSIONS.with(|c| c.set(c.get() + 1));
    let mut gz = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(json);
    gz.finish().unwrap_or_default()
}

/// Name of the Secret holding an Instance's book (a DNS subdomain of at
/// most 253 characters, whatever the Instance's name).
pub fn secret_name(instance: &str) -> String {
    const SUFFIX: &str = ".kudo-renders";
    if instance.len() + SUFFIX.len() <= 253 {
        return format!("{instance}{SUFFIX}");
    }
    use md5::Digest;
    let digest = format!("{:x}", md5::Md5::digest(instance.as_bytes()));
    let head: String = instance.chars().take(200).collect();
    format!(
        "{}-{}{SUFFIX}",
        head.trim_end_matches(['-', '.']),
        &digest[..8]
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(name: &str) -> AppliedObject {
        AppliedObject {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    #[test]
    fn a_book_round_trips_through_its_stored_form() {
        let mut book = RenderBook::default();
        book.applied(
            "deploy",
            object("a"),
            json!({"data": {"k": "v"}}),
            json!({"f:data": {}}),
        );
        assert!(book.is_dirty());
        let (bytes, dropped) = book.encode();
        assert!(dropped.is_empty());
        let back = RenderBook::decode(&bytes).unwrap();
        assert_eq!(back.get(&object("a")), book.get(&object("a")));
        assert!(!back.is_dirty());
    }

    #[test]
    fn the_same_apply_again_leaves_the_book_clean_and_a_deletion_removes_the_entry() {
        let mut book = RenderBook::default();
        book.applied("deploy", object("a"), json!({}), json!({}));
        book.saved();
        book.applied("deploy", object("a"), json!({}), json!({}));
        assert!(!book.is_dirty());
        book.removed(&object("a"));
        assert!(book.is_dirty());
        assert!(book.get(&object("a")).is_none());
    }

    #[test]
    fn renders_that_do_not_fit_a_secret_are_left_out_largest_first_keeping_fields() {
        let mut book = RenderBook::default();
        // Random letters compress to about 60%: three of 600 KiB (about
        // 350 KiB each compressed) do not fit 900 KiB, two do.
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            book.applied(
                "deploy",
                object(name),
                json!({"data": {"k": noise(i as u64 + 1, 600 * 1024)}}),
                json!({"f:data": {}}),
            );
        }
        book.applied(
            "deploy",
            object("small"),
            json!({"data": {}}),
            json!({"f:data": {}}),
        );
        let (bytes, dropped) = book.encode();
        assert!(bytes.len() <= MAX_STORED);
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        let back = RenderBook::decode(&bytes).unwrap();
        assert!(back.get(&object("small")).unwrap().render.is_some());
        for o in &dropped {
            let e = back.get(o).unwrap();
            assert!(e.render.is_none());
            assert_eq!(e.fields, json!({"f:data": {}}));
        }
    }

    /// Random letters (they compress to about 60%).
    fn noise(seed: u64, len: usize) -> String {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    }

    #[test]
    fn encoding_a_book_far_over_the_limit_compresses_it_a_few_times_not_once_per_render() {
        let mut book = RenderBook::default();
        // 60 renders of 64 KiB: about 2.3 MiB compressed, 2.5 times what fits.
        for i in 0..60u64 {
            book.applied(
                "deploy",
                object(&format!("cm-{i}")),
                json!({"data": {"k": noise(i + 1, 64 * 1024)}}),
                json!({"f:data": {}}),
            );
        }
        COMPRESSIONS.with(|c| c.set(0));
        let (bytes, dropped) = book.encode();
        let rounds = COMPRESSIONS.with(std::cell::Cell::get);
        assert!(bytes.len() <= MAX_STORED);
        assert!(rounds <= 4, "{rounds} compressions of the whole book");
        // Only as many left out as needed: the rest fits in one Secret.
        assert!((30..=45).contains(&dropped.len()), "{}", dropped.len());
    }

    #[test]
    fn renders_that_compress_well_are_kept_only_up_to_what_a_reload_parses() {
        let mut book = RenderBook::default();
        // 24 MiB of one letter compress to a few dozen KiB, but a reload
        // would parse all of it.
        for i in 0..24 {
            book.applied(
                "deploy",
                object(&format!("cm-{i}")),
                json!({"data": {"k": "a".repeat(1 << 20)}}),
                json!({"f:data": {}}),
            );
        }
        let (bytes, dropped) = book.encode();
        assert!(bytes.len() <= MAX_STORED);
        assert!((8..=12).contains(&dropped.len()), "{}", dropped.len());
        let back = RenderBook::decode(&bytes).unwrap();
        assert_eq!(back.entries().count(), 24, "fields of every entry stay");
    }

    #[test]
    fn only_entries_that_fit_the_instance_are_kept() {
        let mut book = RenderBook::default();
        let cm = |ns: &str, name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name}});
        book.applied("deploy", object("own"), cm("ns", "own"), json!({}));
        // Filed under a ConfigMap, renders something else.
        book.applied(
            "deploy",
            object("decoy"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pwn"}}),
            json!({}),
        );
        let foreign = AppliedObject {
            namespace: Some("other".into()),
            ..object("foreign")
        };
        book.applied("deploy", foreign.clone(), cm("other", "foreign"), json!({}));
        let binding = AppliedObject {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRoleBinding".into(),
            namespace: None,
            name: "crb".into(),
        };
        let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "crb"}});
        book.applied("deploy", binding.clone(), crb.clone(), json!({}));
        let mut unlisted = book.clone();
        let refused = book.keep_fitting("ns", std::slice::from_ref(&binding));
        let names: Vec<&str> = refused.iter().map(|(o, _)| o.name.as_str()).collect();
        assert_eq!(names, ["decoy", "foreign"]);
        assert!(book.get(&object("own")).is_some() && book.get(&binding).is_some());
        // A cluster-scoped object no plan of the Instance applied is refused.
        let refused = unlisted.keep_fitting("ns", &[]);
        assert!(
            refused
                .iter()
                .any(|(o, why)| o == &binding && why.contains("no plan"))
        );
    }

    #[test]
    fn a_damaged_book_is_an_error_not_a_panic() {
        assert!(
            RenderBook::decode(b"not gzip")
                .unwrap_err()
                .contains("not gzip")
        );
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(b"{\"x\":1}").unwrap();
        let bytes = gz.finish().unwrap();
        assert!(
            RenderBook::decode(&bytes)
                .unwrap_err()
                .contains("not a render book")
        );
    }

    #[test]
    fn secret_names_stay_valid_for_long_instance_names() {
        assert_eq!(secret_name("zk"), "zk.kudo-renders");
        let long = "a".repeat(250);
        let name = secret_name(&long);
        assert!(name.len() <= 253, "{}", name.len());
        assert_ne!(secret_name(&"b".repeat(250)), name);
    }
}
