//! A package reads only its own files: a folder's symbolic links are
//! followed only while they stay inside it, and an archive holds each file
//! once, as itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::Path;

use kudo_package::PackageError;

const OPERATOR: &str = "apiVersion: kudo.dev/v1beta1\nname: op\noperatorVersion: 0.1.0\n";

/// A package folder `pkg` inside `base` with an operator.yaml and templates/.
fn package_in(base: &Path) -> std::path::PathBuf {
    let pkg = base.join("pkg");
    std::fs::create_dir_all(pkg.join("templates")).unwrap();
    std::fs::write(pkg.join("operator.yaml"), OPERATOR).unwrap();
    pkg
}

#[test]
fn a_link_leading_out_of_the_package_folder_is_refused_naming_link_and_target() {
    let base = tempfile::tempdir().unwrap();
    let pkg = package_in(base.path());
    let secret = base.path().join("secret.txt");
    std::fs::write(&secret, "DB_PASSWORD=hunter2").unwrap();
    let leak = pkg.join("templates/leak.yaml");
    symlink(&secret, &leak).unwrap();

    let err = kudo_package::load(&pkg).unwrap_err();
    assert!(matches!(err, PackageError::LinkOutside { .. }), "{err:?}");
    let root = pkg.canonicalize().unwrap();
    let target = secret.canonicalize().unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: a symbolic link to {}, outside the package folder {}; a package reads only its \
             own files, so copy the file into the package",
            leak.display(),
            target.display(),
            root.display()
        )
    );
}

#[test]
fn a_linked_folder_or_operator_file_outside_the_package_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let elsewhere = base.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("x.yaml"), "x").unwrap();
    std::fs::write(elsewhere.join("operator.yaml"), OPERATOR).unwrap();

    let pkg = package_in(base.path());
    symlink(&elsewhere, pkg.join("templates/sub")).unwrap();
    let err = kudo_package::load(&pkg).unwrap_err().to_string();
    assert!(err.contains("templates/sub: a symbolic link to"), "{err}");

    let other = base.path().join("other");
    std::fs::create_dir_all(other.join("templates")).unwrap();
    symlink(elsewhere.join("operator.yaml"), other.join("operator.yaml")).unwrap();
    let err = kudo_package::load(&other).unwrap_err().to_string();
    assert!(err.contains("operator.yaml: a symbolic link to"), "{err}");
}

#[test]
fn links_inside_the_package_folder_are_followed() {
    let base = tempfile::tempdir().unwrap();
    let pkg = package_in(base.path());
    std::fs::create_dir(pkg.join("shared")).unwrap();
    std::fs::write(pkg.join("shared/cm.yaml"), "cm").unwrap();
    symlink("../shared/cm.yaml", pkg.join("templates/cm.yaml")).unwrap();
    symlink("../shared", pkg.join("templates/lib")).unwrap();
    // A link back to a folder already read is not read again (no loop).
    symlink("..", pkg.join("templates/again")).unwrap();

    // The package reached through a link to its folder is the same package.
    let via = base.path().join("via");
    symlink(&pkg, &via).unwrap();
    for path in [&pkg, &via] {
        let loaded = kudo_package::load(path).unwrap();
        let names: Vec<&str> = loaded.templates.keys().map(String::as_str).collect();
        assert_eq!(names, ["cm.yaml", "lib/cm.yaml"]);
        assert_eq!(loaded.templates["cm.yaml"], "cm");
    }
}

#[test]
fn links_outside_the_package_files_are_not_followed() {
    let base = tempfile::tempdir().unwrap();
    let pkg = package_in(base.path());
    symlink("/etc", pkg.join("docs")).unwrap();
    symlink("/etc/hostname", pkg.join("README.md")).unwrap();
    assert!(kudo_package::load(&pkg).is_ok());
}

/// A .tgz of these entries (names written as given).
fn tgz(entries: &[(&str, &str)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, content) in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append(&header, content.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[test]
fn an_archive_with_two_operator_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("op.tgz");
    let evil = "apiVersion: kudo.dev/v1beta1\nname: evil\noperatorVersion: 6.6.6\n";
    for second in ["operator.yaml", "./operator.yaml", ".//operator.yaml"] {
        std::fs::write(&path, tgz(&[("operator.yaml", OPERATOR), (second, evil)])).unwrap();
        let err = kudo_package::load(&path).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: not a valid .tgz package: entry \"operator.yaml\" appears twice in the \
                 archive; rebuild it (`tar -czf PKG.tgz -C DIR .`)",
                path.display()
            )
        );
    }
}
