//! Counting while an index is read: a 32 MiB index of `- {operatorVersion:
//! "1"}` lines is a million and a half versions, several hundred MiB once
//! parsed, so the counts are held as the YAML is read, not afterwards.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};

use crate::index::PackageVersion;
use crate::limits::{MAX_INDEX_ANNOTATIONS, MAX_INDEX_OPERATORS, MAX_INDEX_VERSIONS};

type Entries = BTreeMap<String, Vec<PackageVersion>>;

/// `entries`: at most [`MAX_INDEX_OPERATORS`] operators and
/// [`MAX_INDEX_VERSIONS`] versions in all.
pub(crate) fn entries<'de, D: Deserializer<'de>>(d: D) -> Result<Entries, D::Error> {
    d.deserialize_map(EntriesVisitor)
}

/// `annotations`: at most [`MAX_INDEX_ANNOTATIONS`].
pub(crate) fn annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_map(AnnotationsVisitor)
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of operator names to their versions")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
        let mut entries = Entries::new();
        let mut versions_left = MAX_INDEX_VERSIONS;
        while let Some(name) = map.next_key::<String>()? {
            if entries.len() >= MAX_INDEX_OPERATORS {
                return Err(A::Error::custom(format!(
                    "entries lists more than {MAX_INDEX_OPERATORS} operators"
                )));
            }
            let versions = map.next_value_seed(Versions {
                left: &mut versions_left,
            })?;
            entries.insert(name, versions);
        }
        Ok(entries)
    }
}

/// One operator's versions, drawing on what is left of the index's count.
struct Versions<'a> {
    left: &'a mut usize,
}

impl<'de> DeserializeSeed<'de> for Versions<'_> {
    type Value = Vec<PackageVersion>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Versions<'_> {
    type Value = Vec<PackageVersion>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of versions")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut versions = Vec::new();
        while let Some(version) = seq.next_element::<PackageVersion>()? {
            if *self.left == 0 {
                return Err(A::Error::custom(format!(
                    "entries lists more than {MAX_INDEX_VERSIONS} versions in all"
                )));
            }
            *self.left -= 1;
            versions.push(version);
        }
        Ok(versions)
    }
}

struct AnnotationsVisitor;

impl<'de> Visitor<'de> for AnnotationsVisitor {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of annotations")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut annotations = BTreeMap::new();
        while let Some((key, value)) = map.next_entry::<String, String>()? {
            if annotations.len() >= MAX_INDEX_ANNOTATIONS {
                return Err(A::Error::custom(format!(
                    "annotations holds more than {MAX_INDEX_ANNOTATIONS} entries"
                )));
            }
            annotations.insert(key, value);
        }
        Ok(annotations)
    }
}
