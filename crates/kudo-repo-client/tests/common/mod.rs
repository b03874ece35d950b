//! Repositories made from the packages in operators/, for the tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use kudo_repo::Limits;
use kudo_repo::config::RepositoryConfig;
use kudo_repo::packages::{collect_folder, create, index_folder};
use kudo_repo_client::{Home, Repositories};

pub fn operators() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../operators")
}

/// first-operator with another operator version, in a new folder.
pub fn first_operator_at(version: &str, into: &Path) -> PathBuf {
    let dir = into.join(format!("src-first-{version}"));
    for (rel, bytes) in collect_folder(&operators().join("first-operator")).unwrap() {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = String::from_utf8(bytes).unwrap().replace(
            "operatorVersion: 0.2.0",
            &format!("operatorVersion: {version}"),
        );
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// A repository folder with first-operator 0.2.0 and 0.3.0 and its index
/// (relative URLs, or under `url`).
pub fn repository(root: &Path, url: Option<&str>) -> PathBuf {
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for version in ["0.2.0", "0.3.0"] {
        let created = create(&first_operator_at(version, root)).unwrap();
        std::fs::write(repo.join(&created.file_name), &created.bytes).unwrap();
    }
    write_index(&repo, url);
    repo
}

pub fn write_index(repo: &Path, url: Option<&str>) {
    let (index, _) = index_folder(repo, url, None).unwrap();
    std::fs::write(repo.join("index.yaml"), index.to_yaml().unwrap()).unwrap();
}

pub fn home(root: &Path) -> Home {
    Home {
        kudo_home: root.join("kudo-home"),
        cache: root.join("cache"),
    }
}

pub fn open(root: &Path, limits: Limits) -> Repositories {
    Repositories::open(home(root), limits).unwrap()
}

pub fn config(name: &str, url: &str) -> RepositoryConfig {
    RepositoryConfig {
        name: name.into(),
        url: url.into(),
        ..Default::default()
    }
}
