//! The cached form of a checked index: one line per operator, sorted by
//! name, so resolving one name reads one line instead of parsing the whole
//! index (an index of 10,000 versions is about 4 MiB of YAML).
//!
//! ```text
//! kudo-index-cache 2
//! {"url":"https://r.example/","fetched":"2026-01-01T00:00:00Z",...}
//! kafka\t[{"name":"kafka","operatorVersion":"1.2.1",...},...]
//! zookeeper\t[...]
//! ```
//!
//! Names cannot hold tabs or newlines ([`crate::index::check_name`]), and
//! JSON escapes them inside values, so a line is always one operator.

use serde::{Deserialize, Serialize};

use crate::error::RepoError;
use crate::index::{IndexFile, PackageVersion};

const MAGIC: &str = "kudo-index-cache 2\n";

/// What the cache records about where its index came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheHeader {
    /// The repository URL the index was fetched from.
    pub url: String,
    /// When it was fetched (RFC 3339).
    pub fetched: String,
    /// The index's own `generated`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<String>,
    /// The index's own annotations (its recalls), kept with the header
    /// since they belong to no one operator's line.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// Writes an index (already checked and sorted) in the cached form.
pub fn encode(index: &IndexFile, header: &CacheHeader) -> Result<Vec<u8>, RepoError> {
    let json =
        |e: serde_json::Error| RepoError::Config(format!("cannot encode the index cache: {e}"));
    let mut out = Vec::with_capacity(index.len() * 400 + 256);
    out.extend_from_slice(MAGIC.as_bytes());
    out.extend_from_slice(&serde_json::to_vec(header).map_err(json)?);
    out.push(b'\n');
    for (name, versions) in &index.entries {
        out.extend_from_slice(name.as_bytes());
        out.push(b'\t');
        out.extend_from_slice(&serde_json::to_vec(versions).map_err(json)?);
        out.push(b'\n');
    }
    Ok(out)
}

/// A cached index, read lazily.
pub struct CachedIndex<'a> {
    header: CacheHeader,
    /// From the newline ending the header line to the end.
    body: &'a str,
}

fn damaged(detail: &str) -> RepoError {
    RepoError::Config(format!("the cached index is damaged ({detail})"))
}

impl<'a> CachedIndex<'a> {
    /// Opens cached bytes; anything that is not a cache is an error (the
    /// caller fetches the index again).
    pub fn open(bytes: &'a [u8]) -> Result<Self, RepoError> {
        let text = std::str::from_utf8(bytes).map_err(|_| damaged("not UTF-8"))?;
        let rest = text
            .strip_prefix(MAGIC)
            .ok_or_else(|| damaged("not a cache file"))?;
        let end = rest.find('\n').ok_or_else(|| damaged("no header"))?;
        let header: CacheHeader =
            serde_json::from_str(&rest[..end]).map_err(|e| damaged(&e.to_string()))?;
        Ok(Self {
            header,
            body: &rest[end..],
        })
    }

    /// Where the index came from.
    pub fn header(&self) -> &CacheHeader {
        &self.header
    }

    /// The versions of `name`, newest first; `None` when the index has no
    /// such operator.
    pub fn versions(&self, name: &str) -> Result<Option<Vec<PackageVersion>>, RepoError> {
        if name.contains(['\t', '\n']) {
            return Ok(None);
        }
        let needle = format!("\n{name}\t");
        let Some(at) = self.body.find(&needle) else {
            return Ok(None);
        };
        let line_start = at + needle.len();
        let line = &self.body[line_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        serde_json::from_str(line)
            .map(Some)
            .map_err(|e| damaged(&format!("entry {name}: {e}")))
    }

    /// Operator names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.body
            .split('\n')
            .filter_map(|line| line.split_once('\t').map(|(name, _)| name))
    }

    /// The whole index.
    pub fn to_index(&self) -> Result<IndexFile, RepoError> {
        let mut index = IndexFile::new(self.header.generated.clone());
        index.annotations = self.header.annotations.clone();
        for line in self.body.split('\n').filter(|l| !l.is_empty()) {
            let (name, json) = line
                .split_once('\t')
                .ok_or_else(|| damaged("a line without a name"))?;
            let versions: Vec<PackageVersion> =
                serde_json::from_str(json).map_err(|e| damaged(&format!("entry {name}: {e}")))?;
            index.entries.insert(name.to_string(), versions);
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn index() -> IndexFile {
        let text = "apiVersion: v1\nentries:\n  kafka:\n  - {operatorVersion: 1.0.0, description: \"a\\tb\\nc\", urls: [k]}\n  kafka-connect:\n  - {operatorVersion: 0.1.0, urls: [c]}\n  zk:\n  - {operatorVersion: 0.3.0, urls: [z]}\n";
        IndexFile::parse(text.as_bytes(), "r", &Limits::default()).unwrap()
    }

    #[test]
    fn one_name_is_read_without_the_others_and_the_whole_reads_back() {
        let index = index();
        let header = CacheHeader {
            url: "http://r/".into(),
            fetched: "now".into(),
            generated: None,
            annotations: Default::default(),
        };
        let bytes = encode(&index, &header).unwrap();
        let cached = CachedIndex::open(&bytes).unwrap();
        assert_eq!(cached.header(), &header);
        let kafka = cached.versions("kafka").unwrap().unwrap();
        assert_eq!(kafka[0].description.as_deref(), Some("a\tb\nc"));
        assert_eq!(
            cached.versions("kafka-connect").unwrap().unwrap()[0].operator_version,
            "0.1.0"
        );
        assert!(
            cached.versions("kaf").unwrap().is_none(),
            "a prefix is not a name"
        );
        assert!(cached.versions("x\ty").unwrap().is_none());
        assert_eq!(
            cached.names().collect::<Vec<_>>(),
            ["kafka", "kafka-connect", "zk"]
        );
        assert_eq!(cached.to_index().unwrap().entries, index.entries);
    }

    #[test]
    fn anything_else_is_a_damaged_cache() {
        for bytes in [
            &b"apiVersion: v1\n"[..],
            b"kudo-index-cache 2\n{",
            b"kudo-index-cache 2\n{}\nx\t[\n",
            &[0xff],
        ] {
            let result = CachedIndex::open(bytes).and_then(|c| c.to_index());
            assert!(result.unwrap_err().to_string().contains("damaged"));
        }
    }
}
