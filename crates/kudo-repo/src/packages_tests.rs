use super::*;

fn operators() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../operators")
}

/// A copy of first-operator with another operator version.
fn first_operator_at(version: &str, into: &Path) -> PathBuf {
    let dir = into.join(format!("first-{version}"));
    let files = collect_folder(&operators().join("first-operator")).unwrap();
    for (rel, bytes) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        std::fs::write(
            path,
            text.replace(
                "operatorVersion: 0.2.0",
                &format!("operatorVersion: {version}"),
            ),
        )
        .unwrap();
    }
    dir
}

#[test]
fn create_names_the_archive_as_kudo_and_makes_the_same_bytes_each_time() {
    let a = create(&operators().join("first-operator")).unwrap();
    assert_eq!(a.file_name, "first-operator-1.27.0_0.2.0.tgz");
    assert_eq!(a.package.operator.name, "first-operator");
    let b = create(&operators().join("first-operator")).unwrap();
    assert_eq!(Digest::of(&a.bytes), Digest::of(&b.bytes), "deterministic");
}

#[test]
fn create_refuses_a_package_with_errors_and_a_link_out_of_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = first_operator_at("0.3.0", tmp.path());
    std::fs::write(
        dir.join("operator.yaml"),
        "name: broken\noperatorVersion: x\n",
    )
    .unwrap();
    let err = create(&dir).unwrap_err().to_string();
    assert!(
        err.contains("broken") || err.contains("operatorVersion"),
        "{err}"
    );

    let dir = first_operator_at("0.4.0", tmp.path());
    std::os::unix::fs::symlink("/etc/hostname", dir.join("NOTES.md")).unwrap();
    let err = create(&dir).unwrap_err().to_string();
    assert!(err.contains("outside the package folder"), "{err}");
    assert!(
        create(&tmp.path().join("nope"))
            .unwrap_err()
            .to_string()
            .contains("not a package folder")
    );
}

#[test]
fn a_folder_of_archives_indexes_with_digests_and_keeps_the_first_duplicate() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    for version in ["0.2.0", "0.3.0"] {
        let created = create(&first_operator_at(version, tmp.path())).unwrap();
        std::fs::write(repo.join(&created.file_name), &created.bytes).unwrap();
    }
    let copy = std::fs::read(repo.join("first-operator-1.27.0_0.3.0.tgz")).unwrap();
    std::fs::write(repo.join("zz-copy.tgz"), &copy).unwrap();
    std::fs::write(repo.join("notes.txt"), "not a package").unwrap();

    let (index, warnings) = index_folder(&repo, None, Some("2026-01-01T00:00:00Z".into())).unwrap();
    let versions = &index.entries["first-operator"];
    assert_eq!(versions.len(), 2);
    assert_eq!(versions[0].operator_version, "0.3.0");
    assert_eq!(versions[0].urls, ["first-operator-1.27.0_0.3.0.tgz"]);
    assert_eq!(
        versions[0].digest.as_deref(),
        Some(Digest::of(&copy).to_string().as_str())
    );
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .contains("zz-copy.tgz: first-operator 0.3.0 (app 1.27.0) is already in the index"),
        "{warnings:?}"
    );

    let (with_url, _) = index_folder(&repo, Some("https://r.example/ops"), None).unwrap();
    assert_eq!(
        with_url.entries["first-operator"][1].urls,
        ["https://r.example/ops/first-operator-1.27.0_0.2.0.tgz"]
    );
}

#[test]
fn indexing_refuses_a_folder_without_archives_and_a_broken_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let err = index_folder(tmp.path(), None, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("holds no .tgz packages"), "{err}");
    std::fs::write(tmp.path().join("bad.tgz"), b"not gzip").unwrap();
    let err = index_folder(tmp.path(), None, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.tgz"), "{err}");
}

#[test]
fn indexing_writes_a_versions_requirements_and_refuses_a_malformed_range() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let folder = first_operator_at("0.3.0", tmp.path());
    let with = |range: &str| {
        let yaml = std::fs::read_to_string(operators().join("first-operator/operator.yaml"))
            .unwrap()
            .replace("operatorVersion: 0.2.0", "operatorVersion: 0.3.0");
        let extra = format!("dependencies:\n  - operator: zookeeper\n    versions: \"{range}\"\n");
        std::fs::write(folder.join("operator.yaml"), yaml + &extra).unwrap();
        let created = create(&folder).unwrap();
        std::fs::write(repo.join(&created.file_name), &created.bytes).unwrap();
    };
    with(">=3.5 <4");
    let (index, _) = index_folder(&repo, None, None).unwrap();
    let deps = &index.entries["first-operator"][0].dependencies;
    assert_eq!(deps.len(), 1);
    assert_eq!(
        (deps[0].name.as_str(), deps[0].version.as_str()),
        ("zookeeper", ">=3.5 <4")
    );
    let written = index.to_yaml().unwrap();
    let again = IndexFile::parse(written.as_bytes(), "written", &Limits::default()).unwrap();
    assert_eq!(
        again.entries["first-operator"][0].dependencies, *deps,
        "round trip"
    );

    with(">=three");
    let err = index_folder(&repo, None, None).unwrap_err().to_string();
    assert!(err.contains("dependencies: zookeeper"), "{err}");
}
