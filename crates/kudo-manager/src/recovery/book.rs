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
/// Most bytes a stored book may decompress to (a damaged or hostile Secret
/// must not grow the manager).
const MAX_DECODED: u64 = 64 * 1024 * 1024;
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
    pub fn encode(&self) -> (Vec<u8>, Vec<AppliedObject>) {
        let mut entries: Vec<Entry> = self.entries.values().cloned().collect();
        let mut dropped = Vec::new();
        loop {
            let bytes = compress(&entries);
            if bytes.len() <= MAX_STORED {
                return (bytes, dropped);
            }
            let largest = entries
                .iter_mut()
                .filter(|e| e.render.is_some())
                .max_by_key(|e| e.render.as_ref().map_or(0, |r| r.to_string().len()));
            match largest {
                Some(e) => {
                    e.render = None;
                    dropped.push(e.object.clone());
                }
                // Even the fields alone do not fit: keep nothing.
                None => {
                    return (
                        compress(&[]),
                        entries.into_iter().map(|e| e.object).collect(),
                    );
                }
            }
        }
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

fn compress(entries: &[Entry]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut gz, entries);
    let _ = gz.flush();
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
        let noise = |seed: u64| -> String {
            let mut x = seed;
            (0..600 * 1024)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(b'a' + (x % 26) as u8)
                })
                .collect()
        };
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            book.applied(
                "deploy",
                object(name),
                json!({"data": {"k": noise(i as u64 + 1)}}),
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
