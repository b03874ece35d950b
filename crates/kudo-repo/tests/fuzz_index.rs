#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Fuzzing what a repository or a command line hands kudo-repo:
//!
//! - Indexes: a real index (made from operators/ by `package create` and
//!   `repo index`) mutated line by line and token by token (anchors, alias
//!   bombs, tags, deep flow nesting, huge numbers, long names, duplicate
//!   keys, non-UTF-8), plus random bytes.
//! - Ranges and versions: strings from the range grammar's alphabet.
//! - Cached indexes: encoded indexes damaged byte by byte.
//!
//! Whatever the input: no panic; an index either parses into one that
//! obeys the rules (apiVersion v1, every entry named as its key, an
//! operator version, a well-formed digest, versions sorted newest first)
//! and reads back the same after `to_yaml`, or is refused with a message
//! naming its source; a range either parses and answers `matches` for any
//! version without panicking, or is refused naming itself.
//!
//! `make test` runs a few hundred cases; `make fuzz` raises them through
//! `PROPTEST_CASES`.

use std::path::PathBuf;
use std::sync::OnceLock;

use kudo_repo::cache::{CacheHeader, CachedIndex, encode};
use kudo_repo::index::kudo_order;
use kudo_repo::{IndexFile, Limits, Range, Version};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// A real index of the example operators (two versions of first-operator).
fn seed_index() -> &'static str {
    static SEED: OnceLock<String> = OnceLock::new();
    SEED.get_or_init(|| {
        let operators = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../operators");
        let repo = tempfile::tempdir().unwrap();
        for name in ["first-operator", "zookeeper", "zk-monitor", "canary-web"] {
            let created = kudo_repo::packages::create(&operators.join(name)).unwrap();
            std::fs::write(repo.path().join(&created.file_name), &created.bytes).unwrap();
        }
        let (mut index, _) = kudo_repo::packages::index_folder(repo.path(), None, None).unwrap();
        let mut newer = index.entries["first-operator"][0].clone();
        newer.operator_version = "0.3.0-rc.1".into();
        index.add(newer).unwrap();
        index.to_yaml().unwrap()
    })
}

/// Snippets a hostile index might hold.
fn hostile_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("&a [x, x, x, x]".to_string()),
        Just("*a".to_string()),
        Just("!!binary aGk=".to_string()),
        Just("!custom x".to_string()),
        Just("[".repeat(300)),
        Just("{".repeat(40)),
        Just("1e999999".to_string()),
        Just("99999999999999999999999999".to_string()),
        Just("~".to_string()),
        Just("".to_string()),
        Just("\"\\u0000\"".to_string()),
        Just("- - - - - -".to_string()),
        Just("a".repeat(5000)),
        Just("../../etc/passwd".to_string()),
        Just("sha256:zz".to_string()),
        Just("v1.2.3-rc.01".to_string()),
        Just("entries: {}".to_string()),
        Just("---".to_string()),
        Just("apiVersion: v2".to_string()),
        Just("name: other".to_string()),
        "[ -~]{0,40}".prop_map(|s| s),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    DropLine(usize),
    DuplicateLine(usize),
    ReplaceValue(usize, String),
    InsertLine(usize, String),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DropLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), hostile_token()).prop_map(|(i, t)| Mutation::ReplaceValue(i, t)),
        (any::<usize>(), hostile_token()).prop_map(|(i, t)| Mutation::InsertLine(i, t)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in mutations {
        if lines.is_empty() {
            break;
        }
        let at = |i: &usize| i % lines.len();
        match m {
            Mutation::DropLine(i) => {
                let i = at(i);
                lines.remove(i);
            }
            Mutation::DuplicateLine(i) => {
                let i = at(i);
                let line = lines[i].clone();
                lines.insert(i, line);
            }
            Mutation::ReplaceValue(i, token) => {
                let i = at(i);
                if let Some((key, _)) = lines[i].split_once(": ") {
                    lines[i] = format!("{key}: {token}");
                } else {
                    lines[i] = format!("{}{token}", lines[i]);
                }
            }
            Mutation::InsertLine(i, token) => {
                let i = at(i);
                lines.insert(i, token.clone());
            }
            Mutation::Truncate(i) => {
                let i = at(i);
                lines.truncate(i);
            }
        }
    }
    lines.join("\n")
}

/// What every index that parses must be.
fn check_parsed(index: &IndexFile) {
    assert_eq!(index.api_version, "v1");
    for (key, versions) in &index.entries {
        for pair in versions.windows(2) {
            assert_ne!(
                kudo_order(&pair[0], &pair[1]),
                std::cmp::Ordering::Less,
                "newest first"
            );
        }
        for v in versions {
            assert_eq!(&v.name, key);
            assert!(!v.operator_version.is_empty());
            if let Some(d) = &v.digest {
                kudo_repo::Digest::parse(d).unwrap();
            }
        }
    }
    let again = IndexFile::parse(
        index.to_yaml().unwrap().as_bytes(),
        "again",
        &Limits::default(),
    )
    .unwrap_or_else(|e| panic!("a parsed index writes back readable: {e}"));
    assert_eq!(&again, index);
    let header = CacheHeader::default();
    let cached = encode(index, &header).unwrap();
    assert_eq!(
        CachedIndex::open(&cached)
            .unwrap()
            .to_index()
            .unwrap()
            .entries,
        index.entries
    );
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn a_mutated_index_parses_by_the_rules_or_is_refused_by_name(mutations in prop::collection::vec(mutation(), 1..6)) {
        let text = mutate(seed_index(), &mutations);
        match IndexFile::parse(text.as_bytes(), "fuzzed", &Limits::default()) {
            Ok(index) => check_parsed(&index),
            Err(e) => prop_assert!(e.to_string().contains("the index fuzzed "), "{e}"),
        }
    }

    #[test]
    fn random_bytes_never_panic_the_index_or_cache_readers(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = IndexFile::parse(&bytes, "bytes", &Limits::default());
        if let Ok(cached) = CachedIndex::open(&bytes) {
            let _ = cached.to_index();
            let _ = cached.versions("first-operator");
            let _ = cached.names().count();
        }
    }

    #[test]
    fn a_damaged_cache_reads_or_says_it_is_damaged(flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let index = IndexFile::parse(seed_index().as_bytes(), "seed", &Limits::default()).unwrap();
        let mut bytes = encode(&index, &CacheHeader::default()).unwrap();
        for (at, byte) in flips {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        match CachedIndex::open(&bytes) {
            Ok(cached) => {
                if let Err(e) = cached.to_index() {
                    prop_assert!(e.to_string().contains("damaged"), "{e}");
                }
                let _ = cached.versions("zookeeper");
            }
            Err(e) => prop_assert!(e.to_string().contains("damaged"), "{e}"),
        }
    }

    #[test]
    fn ranges_parse_or_are_refused_naming_themselves(text in "[0-9xX*^~<>=!|, .v+a-z-]{0,40}", version in "[0-9]{1,3}(\\.[0-9]{1,3}){0,2}(-[a-z0-9.]{1,8})?") {
        match Range::parse(&text) {
            Ok(range) => {
                if let Ok(v) = Version::parse(&version) {
                    let _ = range.matches(&v, false);
                    let _ = range.matches(&v, true);
                    // A release range never admits a pre-release unless asked.
                    if v.is_prerelease() && !text.contains('-') {
                        prop_assert!(!range.matches(&v, false), "{text} admitted {version}");
                    }
                }
            }
            Err(e) => prop_assert!(e.contains(&format!("{:?}", text)) || e.contains("too long"), "{e}"),
        }
    }
}
