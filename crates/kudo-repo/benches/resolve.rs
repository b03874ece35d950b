//! Resolving a name in an index of 10,000 versions (2,000 operators with 5
//! versions each, about 4 MiB of YAML): from the cache file (the path of
//! `install NAME`), and parsing the whole YAML index for comparison.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kudo_repo::cache::{CacheHeader, CachedIndex, encode};
use kudo_repo::resolve::select;
use kudo_repo::{IndexFile, Limits, Maintainer, PackageVersion, Query};

fn big_index() -> IndexFile {
    let mut index = IndexFile::new(Some("2026-01-01T00:00:00Z".into()));
    for op in 0..2_000 {
        for v in 0..5 {
            index
                .add(PackageVersion {
                    name: format!("operator-{op:04}"),
                    operator_version: format!("1.{v}.0"),
                    app_version: Some(format!("3.{v}.1")),
                    description: Some(
                        "An operator of the benchmark index, described in one sentence.".into(),
                    ),
                    maintainers: vec![Maintainer {
                        name: Some("Benchmark Maintainer".into()),
                        email: Some("bench@kudo-rs.invalid".into()),
                        url: None,
                    }],
                    urls: vec![format!(
                        "https://repo.example/ops/operator-{op:04}-3.{v}.1_1.{v}.0.tgz"
                    )],
                    digest: Some(
                        "56ebcabd4634736269380a51aa1215c2388da74c2785e39e20b8e326af601cd7".into(),
                    ),
                    created: Some("2026-01-01T00:00:00Z".into()),
                    removed: false,
                    kube_version: Some(">=1.27.0".into()),
                    annotations: [("kudo.dev/channels".to_string(), "stable".to_string())].into(),
                    dependencies: Vec::new(),
                })
                .unwrap();
        }
    }
    index.sort();
    index
}

fn benches(c: &mut Criterion) {
    let index = big_index();
    let yaml = index.to_yaml().unwrap();
    let cache = encode(&index, &CacheHeader::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench-index.cache");
    std::fs::write(&path, &cache).unwrap();
    eprintln!(
        "index: {} versions, {} KiB of YAML, {} KiB cached",
        index.len(),
        yaml.len() / 1024,
        cache.len() / 1024
    );
    let query = Query {
        name: "operator-1999",
        operator_version: Some("^1.2"),
        ..Query::default()
    };
    c.bench_function(
        "resolve a name in 10,000 versions from the cache file",
        |b| {
            b.iter(|| {
                let bytes = std::fs::read(black_box(&path)).unwrap();
                let cached = CachedIndex::open(&bytes).unwrap();
                let versions = cached.versions(query.name).unwrap().unwrap();
                black_box(
                    select(&versions, &[], "bench", &query)
                        .unwrap()
                        .operator_version
                        .clone(),
                )
            })
        },
    );
    let mut group = c.benchmark_group("whole index");
    group.sample_size(10);
    group.bench_function("parse and check 10,000 versions of YAML", |b| {
        b.iter(|| {
            IndexFile::parse(black_box(yaml.as_bytes()), "bench", &Limits::default()).unwrap()
        })
    });
    group.finish();
}

criterion_group!(resolve, benches);
criterion_main!(resolve);
