//! Reading a gzip-compressed tar into memory: every regular file by its
//! path inside the archive. Entries that point outside the package (`..`,
//! an absolute path), a file stored twice (under any spelling of its path),
//! a link where a package file belongs, and an archive that unpacks to more
//! than a size limit (a gzip bomb, or a wrong file) are refused.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::PackageError;

/// Packages that unpack to more than this are refused (a package is text;
/// this stops a wrong file or a gzip bomb from filling memory).
pub const MAX_PACKAGE_BYTES: u64 = 64 * 1024 * 1024;

/// Every file of a gzip-compressed tar, by path inside it, read up to
/// [`MAX_PACKAGE_BYTES`] unpacked.
pub(crate) fn read_archive(
    reader: impl Read,
    source: &str,
) -> Result<BTreeMap<String, Vec<u8>>, PackageError> {
    read_archive_capped(reader, source, MAX_PACKAGE_BYTES)
}

/// [`read_archive`] with the unpacked-size limit as a parameter.
pub(crate) fn read_archive_capped(
    reader: impl Read,
    source: &str,
    limit: u64,
) -> Result<BTreeMap<String, Vec<u8>>, PackageError> {
    let over_limit = Arc::new(AtomicBool::new(false));
    let archive_err = |detail: String| {
        let detail = if over_limit.load(Ordering::Relaxed) {
            format!(
                "it unpacks to more than {}, the size limit of a package; \
                 a package is text and much smaller, so check that this is the right file",
                human_bytes(limit)
            )
        } else {
            detail
        };
        PackageError::Archive {
            path: source.to_string(),
            detail,
        }
    };
    let capped = Capped {
        inner: flate2::read::GzDecoder::new(reader),
        remaining: limit,
        over_limit: over_limit.clone(),
    };
    let mut archive = tar::Archive::new(capped);
    let mut files = BTreeMap::new();
    for entry in archive.entries().map_err(|e| archive_err(e.to_string()))? {
        let mut entry = entry.map_err(|e| archive_err(e.to_string()))?;
        let kind = entry.header().entry_type();
        let link = kind.is_symlink() || kind.is_hard_link();
        if !kind.is_file() && !link {
            continue;
        }
        let raw = entry
            .path()
            .map_err(|e| archive_err(e.to_string()))?
            .to_string_lossy()
            .to_string();
        let name = entry_name(&raw).map_err(archive_err)?;
        if link {
            if is_package_file(&name) {
                return Err(archive_err(format!(
                    "entry {name:?} is a link; a package holds its files themselves \
                     (rebuild the archive with `tar -czhf`, which stores what links point to)"
                )));
            }
            continue;
        }
        if files.contains_key(&name) {
            return Err(archive_err(format!(
                "entry {name:?} appears twice in the archive; rebuild it \
                 (`tar -czf PKG.tgz -C DIR .`)"
            )));
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| archive_err(format!("{name}: {e}")))?;
        files.insert(name, bytes);
    }
    Ok(files)
}

/// Whether a path inside the archive would be read as a file of a package
/// (its own or a nested one): operator.yaml, params.yaml, or anything of a
/// templates folder.
fn is_package_file(name: &str) -> bool {
    let mut parts = name.rsplit('/');
    let last = parts.next().unwrap_or_default();
    last == super::OPERATOR_FILE
        || last == super::PARAMS_FILE
        || last == "templates"
        || parts.any(|folder| folder == "templates")
}

/// The key of an archive entry inside the package: the path without empty
/// and `.` parts, so each file has one spelling (`./operator.yaml` and
/// `operator.yaml` are the same entry). A path that is absolute or climbs
/// with `..` (in `/` or `\` notation, so the archive is refused on every
/// platform), or names nothing, is an error naming the entry.
fn entry_name(raw: &str) -> Result<String, String> {
    let drive = raw.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && raw.as_bytes().get(1) == Some(&b':');
    let absolute = raw.starts_with('/') || raw.starts_with('\\') || drive;
    let climbs = raw.split(['/', '\\']).any(|part| part == "..");
    if absolute || climbs {
        let what = if absolute {
            "is an absolute path"
        } else {
            "climbs out of the package with `..`"
        };
        return Err(format!(
            "entry {raw:?} {what}; entries must be relative to the package root \
             (rebuild the archive from the package folder: `tar -czf PKG.tgz -C DIR .`)"
        ));
    }
    let name: Vec<&str> = raw
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if name.is_empty() {
        return Err(format!("entry {raw:?} names no file"));
    }
    Ok(name.join("/"))
}

/// "64 MiB" for whole MiB, else bytes.
fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// A reader that gives at most `remaining` bytes and then fails (setting
/// `over_limit`) if the inner reader has more; a true end of data at the
/// limit is an ordinary end.
struct Capped<R> {
    inner: R,
    remaining: u64,
    over_limit: Arc<AtomicBool>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.over_limit.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("package over its size limit"));
        }
        let max = usize::try_from(self.remaining).map_or(buf.len(), |r| r.min(buf.len()));
        let n = self.inner.read(&mut buf[..max])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A .tgz with these (name, content) entries; names are written into
    /// the header as given, `..` and absolute paths included.
    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let typed: Vec<_> = entries
            .iter()
            .map(|(name, content)| (tar::EntryType::Regular, *name, *content))
            .collect();
        tgz_typed(&typed)
    }

    /// As [`tgz`], each entry of its own type (a link's content is its target).
    fn tgz_typed(entries: &[(tar::EntryType, &str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(gz);
        for (kind, name, content) in entries {
            let mut header = tar::Header::new_gnu();
            let field = &mut header.as_old_mut().name;
            field[..name.len()].copy_from_slice(name.as_bytes());
            header.set_mode(0o644);
            header.set_entry_type(*kind);
            if kind.is_file() {
                header.set_size(content.len() as u64);
                header.set_cksum();
                builder.append(&header, *content).unwrap();
            } else {
                header.set_size(0);
                let link = &mut header.as_old_mut().linkname;
                link[..content.len()].copy_from_slice(content);
                header.set_cksum();
                builder.append(&header, std::io::empty()).unwrap();
            }
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn an_entry_stored_twice_under_any_spelling_is_refused_naming_it() {
        for (first, second) in [
            ("operator.yaml", "operator.yaml"),
            ("./operator.yaml", "operator.yaml"),
            ("templates/x.yaml", "templates//./x.yaml"),
            ("pkg/templates/x.yaml", "./pkg/templates/x.yaml"),
        ] {
            let bytes = tgz(&[(first, b"a"), (second, b"b")]);
            let err = read_archive(bytes.as_slice(), "p.tgz")
                .unwrap_err()
                .to_string();
            let name = entry_name(first).unwrap();
            assert_eq!(
                err,
                format!(
                    "p.tgz: not a valid .tgz package: entry {name:?} appears twice in the \
                     archive; rebuild it (`tar -czf PKG.tgz -C DIR .`)"
                )
            );
        }
    }

    #[test]
    fn a_link_where_a_package_file_belongs_is_refused_naming_it() {
        use tar::EntryType::{Link, Symlink};
        for (kind, name) in [
            (Symlink, "templates/leak.yaml"),
            (Link, "operator.yaml"),
            (Symlink, "pkg/params.yaml"),
            (Symlink, "templates"),
            (Link, "child/templates/sub/x.yaml"),
        ] {
            let bytes = tgz_typed(&[
                (tar::EntryType::Regular, "operator.yaml.bak", b"a"),
                (kind, name, b"/etc/passwd"),
            ]);
            let err = read_archive(bytes.as_slice(), "p.tgz")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!(
                    "entry {name:?} is a link; a package holds its files"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn a_link_that_is_no_package_file_is_left_out() {
        let bytes = tgz_typed(&[
            (tar::EntryType::Regular, "operator.yaml", b"a"),
            (tar::EntryType::Symlink, "README.md", b"docs/README.md"),
        ]);
        let files = read_archive(bytes.as_slice(), "p.tgz").unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), ["operator.yaml"]);
    }

    #[test]
    fn entries_are_keyed_by_their_path_without_a_leading_dot_slash() {
        let bytes = tgz(&[("./operator.yaml", b"a"), ("templates/x.yaml", b"b")]);
        let files = read_archive(bytes.as_slice(), "p.tgz").unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            vec!["operator.yaml", "templates/x.yaml"]
        );
    }

    #[test]
    fn an_entry_climbing_out_with_dot_dot_is_refused_naming_it() {
        for name in [
            "../evil.yaml",
            "templates/../../etc/x.yaml",
            "templates\\..\\x.yaml",
        ] {
            let bytes = tgz(&[("operator.yaml", b"a"), (name, b"b")]);
            let err = read_archive(bytes.as_slice(), "p.tgz")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("p.tgz: "), "{err}");
            assert!(err.contains(&format!("{name:?}")), "{err}");
            assert!(err.contains("climbs out of the package"), "{err}");
        }
    }

    #[test]
    fn an_entry_with_an_absolute_path_is_refused_naming_it() {
        for name in ["/templates/x.yaml", "C:/templates/x.yaml"] {
            let bytes = tgz(&[(name, b"b")]);
            let err = read_archive(bytes.as_slice(), "p.tgz")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("{name:?} is an absolute path")),
                "{err}"
            );
        }
    }

    #[test]
    fn an_archive_unpacking_past_the_limit_says_so_naming_the_limit() {
        let bytes = tgz(&[("operator.yaml", &vec![b'a'; 3 * 1024 * 1024])]);
        let err = read_archive_capped(bytes.as_slice(), "bomb.tgz", 1024 * 1024)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unpacks to more than 1 MiB, the size limit of a package"),
            "{err}"
        );
        assert!(!err.contains("EOF"), "{err}");
    }

    #[test]
    fn an_archive_exactly_at_the_limit_is_read() {
        let bytes = tgz(&[("operator.yaml", b"abc")]);
        let unpacked = {
            let mut all = Vec::new();
            flate2::read::GzDecoder::new(bytes.as_slice())
                .read_to_end(&mut all)
                .unwrap();
            all.len() as u64
        };
        let files = read_archive_capped(bytes.as_slice(), "p.tgz", unpacked).unwrap();
        assert_eq!(files["operator.yaml"], b"abc");
    }

    #[test]
    fn a_truncated_archive_is_not_reported_as_over_the_limit() {
        let bytes = tgz(&[("operator.yaml", &vec![b'a'; 64 * 1024])]);
        let err = read_archive(&bytes[..bytes.len() / 2], "cut.tgz")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("size limit"), "{err}");
    }
}
