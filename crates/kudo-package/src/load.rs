//! Reading a package from a directory or a `.tgz` into a [`Package`], and
//! its dependencies from beside it (`origin.rs`). The only IO of this crate
//! lives here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kudo_api::package::{OperatorFile, ParamsFile};

use crate::{Package, PackageError};

/// The operator file name.
pub const OPERATOR_FILE: &str = "operator.yaml";
/// The parameters file name.
pub const PARAMS_FILE: &str = "params.yaml";
/// The templates folder.
pub const TEMPLATES_DIR: &str = "templates/";

mod archive;
mod origin;

pub use archive::MAX_PACKAGE_BYTES;
use archive::read_archive;

/// Loads a package from a directory or a `.tgz`/`.tar.gz` file.
pub fn load(path: &Path) -> Result<Package, PackageError> {
    load_located(path).map(|located| located.package)
}

/// Loads a package from the bytes of a `.tgz` (a download); `source`
/// names it in messages. The same checks as a `.tgz` file on disk.
pub fn load_archive(bytes: &[u8], source: &str) -> Result<Located, PackageError> {
    located_in_archive(read_archive(bytes, source)?, source.to_string())
}

/// [`load_archive`] refusing an archive that unpacks to more than
/// `max_unpacked` bytes: a long-running process that loads packages from
/// others (the manager) allows far less than a command on a workstation.
pub fn load_archive_within(
    bytes: &[u8],
    source: &str,
    max_unpacked: u64,
) -> Result<Located, PackageError> {
    located_in_archive(
        archive::read_archive_capped(bytes, source, max_unpacked)?,
        source.to_string(),
    )
}

/// Where a package was read from: KudoOperator dependencies given as a
/// relative path are looked up there (inside an archive, only inside it).
#[derive(Clone, Debug)]
pub enum Origin {
    /// A package folder.
    Dir(PathBuf),
    /// A folder inside a `.tgz`.
    Archive {
        /// What the archive is called in messages.
        name: String,
        /// Every file of the archive, by path inside it.
        files: Arc<BTreeMap<String, Vec<u8>>>,
        /// The package's folder inside the archive: `""` or `dir/`.
        root: String,
    },
    /// Files handed over in memory ([`load_from_files`]): relative
    /// references cannot be followed.
    Memory,
}

/// A package and where it was read from.
#[derive(Clone, Debug)]
pub struct Located {
    /// The package.
    pub package: Package,
    /// Where its relative dependencies are looked up.
    pub origin: Origin,
}

/// As [`load`], keeping where the package came from.
pub fn load_located(path: &Path) -> Result<Located, PackageError> {
    let source = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| io(&source, e))?;
    if meta.is_dir() {
        let root = std::fs::canonicalize(path).map_err(|e| io(&source, e))?;
        let mut folder = Folder {
            root: &root,
            visited: Vec::new(),
            files: BTreeMap::new(),
        };
        folder.read(path, "")?;
        let files = folder.files;
        let package = load_from_files(files, &source)?;
        return Ok(Located {
            package,
            origin: Origin::Dir(path.to_path_buf()),
        });
    }
    let file = std::fs::File::open(path).map_err(|e| io(&source, e))?;
    located_in_archive(read_archive(file, &source)?, source)
}

/// The package at the root of an archive (or in its shallowest folder
/// holding an operator.yaml).
fn located_in_archive(
    files: BTreeMap<String, Vec<u8>>,
    name: String,
) -> Result<Located, PackageError> {
    let root = package_root(&files).unwrap_or_default();
    let files = Arc::new(files);
    let package = load_from_files(files_under(&files, &root), &name)?;
    Ok(Located {
        package,
        origin: Origin::Archive { name, files, root },
    })
}

/// The files below `folder`, keyed relative to it.
fn files_under(files: &BTreeMap<String, Vec<u8>>, folder: &str) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(folder)
                .map(|rel| (rel.to_string(), v.clone()))
        })
        .collect()
}

fn io(path: &str, source: std::io::Error) -> PackageError {
    PackageError::Io {
        path: path.to_string(),
        source,
    }
}

/// Reading a package folder: the files a package is made of, by path
/// relative to it. Symbolic links are followed only while they stay inside
/// the folder (`root`, canonical).
struct Folder<'r> {
    root: &'r Path,
    /// Canonical folders read so far: a link back to one is not read again.
    visited: Vec<PathBuf>,
    files: BTreeMap<String, Vec<u8>>,
}

impl Folder<'_> {
    fn read(&mut self, dir: &Path, prefix: &str) -> Result<(), PackageError> {
        let shown = dir.display().to_string();
        let canonical = std::fs::canonicalize(dir).map_err(|e| io(&shown, e))?;
        if self.visited.contains(&canonical) {
            return Ok(());
        }
        self.visited.push(canonical);
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| io(&shown, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| io(&shown, e))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().to_string();
            let rel = format!("{prefix}{name}");
            // Only the templates tree is read recursively; other folders may
            // hold nested dependency packages or docs.
            let in_templates = rel.starts_with(TEMPLATES_DIR);
            let wanted_dir = rel == "templates" || in_templates;
            let wanted_file = rel == OPERATOR_FILE || rel == PARAMS_FILE || in_templates;
            if !wanted_dir && !wanted_file {
                continue;
            }
            let path = entry.path();
            let mut file_type = entry.file_type().map_err(|e| io(&shown, e))?;
            if file_type.is_symlink() {
                self.check_link(&path)?;
                file_type = std::fs::metadata(&path)
                    .map_err(|e| io(&path.display().to_string(), e))?
                    .file_type();
            }
            if file_type.is_dir() {
                if wanted_dir {
                    self.read(&path, &format!("{rel}/"))?;
                }
            } else if wanted_file {
                let bytes = std::fs::read(&path).map_err(|e| io(&path.display().to_string(), e))?;
                self.files.insert(rel, bytes);
            }
        }
        Ok(())
    }

    /// A link is followed only to a target inside the package folder.
    fn check_link(&self, link: &Path) -> Result<(), PackageError> {
        let shown = link.display().to_string();
        let target = std::fs::canonicalize(link).map_err(|e| io(&shown, e))?;
        if target.starts_with(self.root) {
            return Ok(());
        }
        Err(PackageError::LinkOutside {
            file: shown,
            target: target.display().to_string(),
            root: self.root.display().to_string(),
        })
    }
}

/// Archives often hold `<name>/operator.yaml`: the package root is the
/// shallowest folder holding an operator.yaml (`""` for the top).
fn package_root(files: &BTreeMap<String, Vec<u8>>) -> Option<String> {
    if files.contains_key(OPERATOR_FILE) {
        return Some(String::new());
    }
    files
        .keys()
        .filter_map(|k| k.strip_suffix(OPERATOR_FILE))
        .filter(|prefix| prefix.ends_with('/'))
        .min_by_key(|prefix| prefix.matches('/').count())
        .map(str::to_string)
}

/// The files of the package root, keyed relative to it.
fn strip_common_root(files: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    match package_root(&files) {
        Some(root) if !root.is_empty() => files_under(&files, &root),
        _ => files,
    }
}

/// Builds a package from file contents keyed by path relative to the
/// package root (`operator.yaml`, `params.yaml`, `templates/...`). Other
/// files are ignored, as in KUDO. `source` is shown in messages.
pub fn load_from_files(
    files: BTreeMap<String, Vec<u8>>,
    source: &str,
) -> Result<Package, PackageError> {
    let files = strip_common_root(files);
    let operator_bytes = files
        .get(OPERATOR_FILE)
        .ok_or_else(|| PackageError::MissingFile {
            source_name: source.to_string(),
            file: OPERATOR_FILE.to_string(),
        })?;
    let operator: OperatorFile = parse_file(source, OPERATOR_FILE, operator_bytes)?;
    let params: ParamsFile = match files.get(PARAMS_FILE) {
        Some(bytes) => parse_file(source, PARAMS_FILE, bytes)?,
        None => ParamsFile::default(),
    };
    let mut templates = BTreeMap::new();
    for (path, bytes) in &files {
        let Some(name) = path.strip_prefix(TEMPLATES_DIR) else {
            continue;
        };
        // KUDO's unanchored `.*\.yaml` file pattern.
        if name.is_empty() || !name.contains(".yaml") {
            continue;
        }
        let text = String::from_utf8(bytes.clone()).map_err(|_| PackageError::NotUtf8 {
            source_name: source.to_string(),
            file: path.clone(),
        })?;
        templates.insert(name.to_string(), text);
    }
    Ok(Package {
        operator,
        params,
        templates,
        source: source.to_string(),
    })
}

fn parse_file<T: serde::de::DeserializeOwned + Default>(
    source: &str,
    file: &str,
    bytes: &[u8],
) -> Result<T, PackageError> {
    let parse_err = |detail: String| PackageError::Parse {
        source_name: source.to_string(),
        file: file.to_string(),
        detail,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| parse_err("not valid UTF-8".into()))?;
    if crate::yaml::is_blank_document(text) {
        return Ok(T::default());
    }
    serde_saphyr::from_str_with_options(text, crate::yaml::parse_options()).or_else(|e| {
        without_null_entries(text)
            .ok_or_else(|| parse_err(format!("{e}{}", legacy_layout_hint(text))))
    })
}

/// Packages written for KUDO before v1beta1 (0.9) keep tasks as a map keyed
/// by name; KUDO refuses them too, but a plain "expected sequence" does not
/// say why.
fn legacy_layout_hint(text: &str) -> &'static str {
    let Ok(value) = crate::yaml::parse_value(text) else {
        return "";
    };
    if value.get("tasks").is_some_and(serde_json::Value::is_object) {
        "\n(`tasks` is a map keyed by task name, the layout of packages for KUDO before 0.9; \
         it must be a list of tasks, each with name, kind and spec)"
    } else {
        ""
    }
}

/// KUDO reads package files through YAML→JSON, where an empty value
/// (`resources:` with nothing under it, or `~`) leaves the field at its zero
/// value; serde rejects null for lists and maps. Retries with those entries
/// dropped; `None` when there were none or the file is still invalid.
fn without_null_entries<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    let mut value = crate::yaml::parse_value(text).ok()?;
    if !drop_null_entries(&mut value) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// Removes null-valued map entries at any depth; true when any was found.
fn drop_null_entries(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let before = map.len();
            map.retain(|_, v| !v.is_null());
            let mut found = map.len() != before;
            for v in map.values_mut() {
                found |= drop_null_entries(v);
            }
            found
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |found, v| drop_null_entries(v) | found),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn reads_nested_templates_and_ignores_other_files() {
        let pkg = load_from_files(
            files(&[
                ("operator.yaml", "name: op\noperatorVersion: 0.1.0\n"),
                ("params.yaml", "parameters:\n  - name: A\n"),
                ("templates/a.yaml", "x"),
                ("templates/sub/b.yaml", "y"),
                ("templates/notes.txt", "z"),
                ("README.md", "docs"),
            ]),
            "pkg",
        )
        .unwrap();
        assert_eq!(
            pkg.templates.keys().collect::<Vec<_>>(),
            vec!["a.yaml", "sub/b.yaml"]
        );
        assert_eq!(pkg.params.parameters[0].name, "A");
        assert!(
            pkg.params.parameters[0].required,
            "required defaults to true"
        );
    }

    #[test]
    fn archive_root_folder_is_stripped() {
        let pkg = load_from_files(
            files(&[
                ("op/operator.yaml", "name: op\noperatorVersion: 0.1.0\n"),
                ("op/templates/a.yaml", "x"),
            ]),
            "op.tgz",
        )
        .unwrap();
        assert_eq!(pkg.operator.name, "op");
        assert!(pkg.templates.contains_key("a.yaml"));
    }

    #[test]
    fn missing_operator_yaml_is_an_error_naming_the_file() {
        let err = load_from_files(files(&[("params.yaml", "")]), "pkg").unwrap_err();
        assert!(
            err.to_string().contains("operator.yaml is missing"),
            "{err}"
        );
    }

    #[test]
    fn empty_list_and_map_values_read_as_empty() {
        let op = "name: op\noperatorVersion: 0.1.0\ntasks:\n  - name: noop\n    kind: Apply\n    spec:\n      resources:\n  - name: other\n    kind: Apply\n    spec:\n      resources: ~\nplans:\n";
        let pkg = load_from_files(files(&[("operator.yaml", op)]), "pkg").unwrap();
        assert_eq!(pkg.operator.tasks.len(), 2);
        assert!(
            pkg.operator
                .tasks
                .iter()
                .all(|t| t.spec.resources.is_empty())
        );
        assert!(pkg.operator.plans.is_empty());
    }

    #[test]
    fn tasks_written_as_a_map_are_refused_with_a_hint() {
        let op = "name: old\ntasks:\n  deploy:\n    resources:\n      - a.yaml\n";
        let err = load_from_files(files(&[("operator.yaml", op)]), "pkg")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("pkg/operator.yaml:"), "{err}");
        assert!(err.contains("`tasks` is a map keyed by task name"), "{err}");
    }

    #[test]
    fn yaml_errors_name_the_file() {
        let err = load_from_files(files(&[("operator.yaml", "name: [\n")]), "pkg").unwrap_err();
        assert!(err.to_string().starts_with("pkg/operator.yaml:"), "{err}");
    }
}
