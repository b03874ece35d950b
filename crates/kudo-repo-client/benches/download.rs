//! What `install NAME` adds to installing the same package from a folder:
//! resolving first-operator from the cached index of a loopback repository,
//! downloading it, checking its digest and loading the archive, against
//! loading the folder.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_repo::config::RepositoryConfig;
use kudo_repo::{Limits, Query};
use kudo_repo_client::test_support::TestServer;
use kudo_repo_client::{Home, Repositories};

fn benches(c: &mut Criterion) {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../operators/first-operator");
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let created = kudo_repo::packages::create(&folder).unwrap();
    std::fs::write(repo.join(&created.file_name), &created.bytes).unwrap();
    let (index, _) = kudo_repo::packages::index_folder(&repo, None, None).unwrap();
    std::fs::write(repo.join("index.yaml"), index.to_yaml().unwrap()).unwrap();
    let server = TestServer::serve_dir(&repo);
    let home = Home {
        kudo_home: tmp.path().join("home"),
        cache: tmp.path().join("cache"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut repos = Repositories::open(home, Limits::default()).unwrap();
    let config = RepositoryConfig {
        name: "local".into(),
        url: server.url(),
        ..RepositoryConfig::default()
    };
    runtime.block_on(repos.add(config, None, false)).unwrap();
    let query = Query {
        name: "first-operator",
        ..Query::default()
    };

    c.bench_function("first-operator from a folder", |b| {
        b.iter(|| kudo_package::load_located(black_box(&folder)).unwrap())
    });
    c.bench_function(
        "first-operator from a loopback repository (resolve, download, digest, load)",
        |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let found = repos.resolve(None, &query).await.unwrap();
                    repos.download(&found).await.unwrap()
                })
            })
        },
    );
}

criterion_group!(download, benches);
criterion_main!(download);
