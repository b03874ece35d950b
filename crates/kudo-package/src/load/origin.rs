//! Following a KudoOperator task's `package` from the package that names it.

use super::archive::read_archive_capped;
use super::{
    Located, OPERATOR_FILE, Origin, files_under, load_from_files, load_located, located_in_archive,
};

/// Most bytes an archive inside a package archive may unpack to (real
/// dependency packages are tens of KiB).
pub const MAX_NESTED_PACKAGE_BYTES: u64 = 4 * 1024 * 1024;
use crate::PackageError;

impl Origin {
    /// The package a KudoOperator task's `package` names, when it is a
    /// folder or archive relative to this package. `Ok(None)` for a bare
    /// name that is not there (an operator expected in the cluster); an
    /// error for a path that leads nowhere.
    pub fn open(&self, reference: &str) -> Result<Option<Located>, PackageError> {
        let not_found = |place: String| {
            if is_path(reference) {
                Err(PackageError::DependencyNotFound {
                    reference: reference.to_string(),
                    place,
                })
            } else {
                Ok(None)
            }
        };
        match self {
            Origin::Dir(dir) => {
                let candidate = dir.join(reference);
                if candidate.exists() {
                    return load_located(&candidate).map(Some);
                }
                not_found(format!("no folder or archive at {}", candidate.display()))
            }
            Origin::Archive { name, files, root } => {
                let Some(inside) = join_inside(root, reference) else {
                    return not_found(format!("the path leaves the archive {name}"));
                };
                let folder = if inside.is_empty() {
                    String::new()
                } else {
                    format!("{inside}/")
                };
                let shown = format!("{name}:{inside}");
                if files.contains_key(&format!("{folder}{OPERATOR_FILE}")) {
                    let package = load_from_files(files_under(files, &folder), &shown)?;
                    let origin = Origin::Archive {
                        name: name.clone(),
                        files: files.clone(),
                        root: folder,
                    };
                    return Ok(Some(Located { package, origin }));
                }
                if let Some(bytes) = files.get(&inside) {
                    // Each nested archive would otherwise get a package's
                    // whole allowance again, a bomb per dependency.
                    let nested =
                        read_archive_capped(bytes.as_slice(), &shown, MAX_NESTED_PACKAGE_BYTES)?;
                    return located_in_archive(nested, shown).map(Some);
                }
                not_found(format!("no package at {inside} in the archive {name}"))
            }
            Origin::Memory => not_found("the package was not read from a folder or archive".into()),
        }
    }
}

/// A reference that can only mean a path (KUDO treats any existing path
/// as one; a bare name that is not there is an operator's name).
fn is_path(reference: &str) -> bool {
    reference.starts_with('.')
        || reference.contains('/')
        || reference.contains('\\')
        || reference.ends_with(".tgz")
        || reference.ends_with(".tar.gz")
}

/// `root` + `reference` with `.` and `..` resolved, without a trailing
/// slash; `None` when it climbs out of the archive.
fn join_inside(root: &str, reference: &str) -> Option<String> {
    if reference.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = root.split('/').filter(|p| !p.is_empty()).collect();
    for part in reference.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}
