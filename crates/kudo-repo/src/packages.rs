//! Making a repository: `package create` (a verified package folder into a
//! `.tgz` under KUDO's file name) and `repo index` (a folder of archives
//! into an index with sha256 digests). Reads local files; no network.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use kudo_package::Package;

use crate::digest::Digest;
use crate::error::RepoError;
use crate::index::{IndexFile, Maintainer, PackageVersion, archive_name};
use crate::limits::{Limits, human_bytes};

/// A package archive made from a folder.
#[derive(Debug)]
pub struct Created {
    /// The package as loaded back from the archive.
    pub package: Package,
    /// The `.tgz`.
    pub bytes: Vec<u8>,
    /// KUDO's file name for it.
    pub file_name: String,
    /// Warnings of verification, for the caller to print.
    pub warnings: Vec<String>,
}

fn file_err(path: &Path, detail: impl std::fmt::Display) -> RepoError {
    RepoError::File {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Verifies the package in `dir` (with the dependencies it names by path:
/// they go into the archive too) and archives the folder. A package with
/// errors is refused; the archive is loaded back to make sure it holds the
/// same package.
pub fn create(dir: &Path) -> Result<Created, RepoError> {
    if !dir.is_dir() {
        return Err(file_err(
            dir,
            "not a package folder (package create takes the folder holding operator.yaml)",
        ));
    }
    let located = kudo_package::load_located(dir)?;
    let resolved = kudo_package::resolve_dependencies(located)?;
    let mut warnings = resolved.warnings.clone();
    for package in std::iter::once(&resolved.root).chain(&resolved.dependencies) {
        let report = package.verified()?;
        warnings.extend(
            report
                .warnings
                .iter()
                .map(|w| format!("{}: {w}", package.source)),
        );
    }
    let files = collect_folder(dir)?;
    let bytes = write_archive(&files).map_err(|e| file_err(dir, e))?;
    let name = resolved.root.operator.name.clone();
    let file_name = archive_name(
        &name,
        resolved.root.operator.app_version.as_deref(),
        &resolved.root.operator.operator_version,
    );
    let package = kudo_package::load_archive(&bytes, &file_name)?.package;
    if package.operator != resolved.root.operator || package.templates != resolved.root.templates {
        return Err(file_err(
            dir,
            "the archive does not read back as the same package",
        ));
    }
    Ok(Created {
        package,
        bytes,
        file_name,
        warnings,
    })
}

/// Every file below `root` by relative path, hidden files left out. A link
/// is followed only while its target stays inside `root`.
pub fn collect_folder(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, RepoError> {
    let canonical = std::fs::canonicalize(root).map_err(|e| file_err(root, e))?;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    let mut visited = Vec::new();
    while let Some((dir, prefix)) = stack.pop() {
        let real = std::fs::canonicalize(&dir).map_err(|e| file_err(&dir, e))?;
        if visited.contains(&real) {
            continue;
        }
        visited.push(real);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| file_err(&dir, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| file_err(&dir, e))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let target = std::fs::canonicalize(&path).map_err(|e| file_err(&path, e))?;
            if !target.starts_with(&canonical) {
                return Err(file_err(
                    &path,
                    format!(
                        "a link to {}, outside the package folder; copy the file into the package",
                        target.display()
                    ),
                ));
            }
            let rel = format!("{prefix}{name}");
            if target.is_dir() {
                stack.push((path, format!("{rel}/")));
            } else if target.is_file() {
                let bytes = std::fs::read(&target).map_err(|e| file_err(&path, e))?;
                total += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                if total > kudo_package::MAX_PACKAGE_BYTES {
                    return Err(file_err(
                        root,
                        format!(
                            "the folder holds more than {}, the size limit of a package",
                            human_bytes(kudo_package::MAX_PACKAGE_BYTES)
                        ),
                    ));
                }
                files.insert(rel, bytes);
            }
        }
    }
    Ok(files)
}

/// A gzip-compressed tar of `files` at its root, the same bytes for the
/// same files (no times, owners or modes of the machine that made it).
pub fn write_archive(files: &BTreeMap<String, Vec<u8>>) -> std::io::Result<Vec<u8>> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(encoder);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, bytes.as_slice())?;
    }
    tar.into_inner()?.finish()
}

/// The index entry of a package archive.
pub fn entry_for(
    package: &Package,
    digest: &Digest,
    url: String,
    created: Option<String>,
) -> PackageVersion {
    let op = &package.operator;
    PackageVersion {
        name: op.name.clone(),
        operator_version: op.operator_version.clone(),
        app_version: op.app_version.clone().filter(|a| !a.is_empty()),
        description: op.description.clone(),
        maintainers: op
            .maintainers
            .iter()
            .map(|m| Maintainer {
                name: m.name.clone(),
                email: m.email.clone(),
                url: None,
            })
            .collect(),
        urls: vec![url],
        digest: Some(digest.to_string()),
        created,
        removed: false,
        kube_version: op
            .kubernetes_version
            .as_deref()
            .filter(|k| !k.trim().is_empty())
            .and_then(|k| crate::channels::kube_version_of_minimum(k).ok()),
        annotations: match op.channels.is_empty() {
            true => BTreeMap::new(),
            false => BTreeMap::from([(
                crate::channels::CHANNELS_ANNOTATION.to_string(),
                op.channels.join(","),
            )]),
        },
        dependencies: crate::requirements::from_package(&op.dependencies),
    }
}

/// Indexes the `.tgz` archives directly in `dir` (sorted by file name).
/// URLs are `<url>/<file>`, or just the file name (relative to the
/// repository) without `url`. A version found twice keeps the first and
/// warns, as KUDO did. Returns the index and the warnings.
pub fn index_folder(
    dir: &Path,
    url: Option<&str>,
    created: Option<String>,
) -> Result<(IndexFile, Vec<String>), RepoError> {
    let mut archives: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| file_err(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tgz") && p.is_file())
        .collect();
    archives.sort();
    if archives.is_empty() {
        return Err(file_err(
            dir,
            "holds no .tgz packages (make them with `kubectl kudo package create`)",
        ));
    }
    let base = url.map(|u| {
        if u.ends_with('/') {
            u.to_string()
        } else {
            format!("{u}/")
        }
    });
    let limit = Limits::default().max_package_bytes;
    let mut index = IndexFile::new(created.clone());
    let mut warnings = Vec::new();
    for path in archives {
        let file = std::fs::File::open(&path).map_err(|e| file_err(&path, e))?;
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| file_err(&path, e))?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
            return Err(file_err(
                &path,
                format!(
                    "larger than {}, the size limit of a package",
                    human_bytes(limit)
                ),
            ));
        }
        let file_name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let package = kudo_package::load_archive(&bytes, &path.display().to_string())?.package;
        crate::index::check_name(&package.operator.name).map_err(|e| file_err(&path, e))?;
        let location = match &base {
            Some(base) => format!("{base}{file_name}"),
            None => file_name,
        };
        let entry = entry_for(&package, &Digest::of(&bytes), location, created.clone());
        crate::requirements::check(&entry.dependencies)
            .map_err(|e| file_err(&path, format!("operator.yaml {e}")))?;
        if let Err(duplicate) = index.add(entry) {
            warnings.push(format!("{}: {duplicate}; kept the first", path.display()));
        }
    }
    index.sort();
    Ok((index, warnings))
}

#[cfg(test)]
#[path = "packages_tests.rs"]
mod tests;
