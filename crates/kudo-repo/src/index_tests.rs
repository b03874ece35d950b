use super::*;

const DIGEST: &str = "0b7bc4d4d5f5d36ce5b3b13b6e6a66a1d0d1f7a2c1c95ce4ab1f38e0ff7f3f3a";

/// As KUDO 0.19 wrote an index (one entry per operator version, newest first).
const KUDO_INDEX: &str = r#"apiVersion: v1
entries:
  kafka:
  - appVersion: 2.4.1
    digest: 0b7bc4d4d5f5d36ce5b3b13b6e6a66a1d0d1f7a2c1c95ce4ab1f38e0ff7f3f3a
    maintainers:
    - email: zmalikshxil@d2iq.com
      name: Zain Malik
    name: kafka
    operatorVersion: 1.2.0
    urls:
    - https://kudo-repository.storage.googleapis.com/0.10.0/kafka-2.4.1_1.2.0.tgz
  - appVersion: 2.5.0
    description: Apache Kafka
    digest: 0b7bc4d4d5f5d36ce5b3b13b6e6a66a1d0d1f7a2c1c95ce4ab1f38e0ff7f3f3a
    name: kafka
    operatorVersion: 1.3.0
    urls:
    - https://kudo-repository.storage.googleapis.com/0.10.0/kafka-2.5.0_1.3.0.tgz
  zookeeper:
  - name: zookeeper
    operatorVersion: 0.3.0
    appVersion: 3.4.14
    urls:
    - zookeeper-3.4.14_0.3.0.tgz
generated: "2020-06-01T10:00:00Z"
"#;

fn limits() -> Limits {
    Limits::default()
}

#[test]
fn a_kudo_index_reads_newest_first() {
    let index = IndexFile::parse(KUDO_INDEX.as_bytes(), "community", &limits()).unwrap();
    let kafka = &index.entries["kafka"];
    assert_eq!(kafka[0].operator_version, "1.3.0");
    assert_eq!(kafka[0].app_version.as_deref(), Some("2.5.0"));
    assert_eq!(kafka[1].maintainers[0].name.as_deref(), Some("Zain Malik"));
    assert_eq!(index.len(), 3);
    assert_eq!(index.generated.as_deref(), Some("2020-06-01T10:00:00Z"));
}

#[test]
fn what_helm_and_old_kudo_wrote_is_read_too() {
    // `version` for operatorVersion, numbers for versions, unknown fields,
    // maintainers with url, an entry without name.
    let text = "apiVersion: v1\nentries:\n  nginx:\n  - version: 1.10\n    appVersion: 1.20\n    apiVersion: v2\n    type: application\n    created: 2021-01-01T00:00:00Z\n    maintainers:\n    - name: a\n      url: https://a.example\n    urls: [nginx-1.10.tgz]\n";
    let index = IndexFile::parse(text.as_bytes(), "helm", &limits()).unwrap();
    let nginx = &index.entries["nginx"][0];
    assert_eq!(nginx.name, "nginx");
    assert_eq!(
        nginx.operator_version, "1.10",
        "the text, not the float 1.1"
    );
    assert_eq!(nginx.app_version.as_deref(), Some("1.20"));
    assert_eq!(nginx.created.as_deref(), Some("2021-01-01T00:00:00Z"));
    assert_eq!(
        nginx.maintainers[0].url.as_deref(),
        Some("https://a.example")
    );
}

#[test]
fn versions_are_ordered_by_app_version_then_operator_version_as_kudo_did() {
    let entry = |op: &str, app: Option<&str>| PackageVersion {
        name: "k".into(),
        operator_version: op.into(),
        app_version: app.map(str::to_string),
        ..Default::default()
    };
    let mut index = IndexFile::new(None);
    for e in [
        entry("1.3.1", Some("2.4.1")),
        entry("1.3.0", Some("2.5.0")),
        entry("1.2.0", Some("2.4.1")),
        entry("9.0.0", None),
        entry("not-semver", Some("2.5.0")),
        entry("1.4.0-rc.1", Some("2.5.0")),
    ] {
        index.add(e).unwrap();
    }
    index.sort();
    let order: Vec<&str> = index.entries["k"]
        .iter()
        .map(|e| e.operator_version.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "1.4.0-rc.1",
            "1.3.0",
            "not-semver",
            "1.3.1",
            "1.2.0",
            "9.0.0"
        ],
        "app 2.5.0 before 2.4.1; within an app version, operator versions newest first; unparsable and missing versions last"
    );
}

#[test]
fn an_index_breaking_the_rules_is_refused_naming_the_entry() {
    for (text, why) in [
        ("entries: {}\n", "no apiVersion"),
        (
            "apiVersion: v2\nentries: {}\n",
            "apiVersion \"v2\" is not supported",
        ),
        (
            "apiVersion: v1\nentries:\n  a:\n  - name: b\n    operatorVersion: 1.0.0\n",
            "entry \"a\" #1 is named \"b\"",
        ),
        (
            "apiVersion: v1\nentries:\n  a:\n  - name: a\n",
            "entry \"a\" #1 has no operatorVersion",
        ),
        (
            "apiVersion: v1\nentries:\n  a:\n  - operatorVersion: 1.0.0\n    digest: xyz\n",
            "a 1.0.0: digest \"xyz\" is not a sha256",
        ),
        (
            "apiVersion: v1\nentries:\n  ../etc:\n  - operatorVersion: 1.0.0\n",
            "is not an operator name",
        ),
        (
            "apiVersion: v1\nentries:\n  a:\n  - operatorVersion: \"1.0.0\\e]52;c;aGk=\\a\"\n",
            "entry \"a\" #1: operatorVersion holds a control character",
        ),
        (
            "apiVersion: v1\nentries:\n  a:\n  - operatorVersion: 1.0.0\n    description: \"\\e[2J\"\n",
            "entry \"a\" #1: description holds a control character",
        ),
    ] {
        let err = IndexFile::parse(text.as_bytes(), "r", &limits())
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{text}\n{err}");
        assert!(err.starts_with("the index r "), "{err}");
    }
}

#[test]
fn an_index_over_the_size_limit_is_refused_before_it_is_parsed() {
    let small = Limits {
        max_index_bytes: 100,
        ..Limits::default()
    };
    let err = IndexFile::parse(KUDO_INDEX.as_bytes(), "big", &small)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "the index big is larger than 100 bytes, the size limit of an index"
    );
}

#[test]
fn deep_nesting_and_alias_bombs_are_refused() {
    let deep = format!(
        "apiVersion: v1\nentries: {}{}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let err = IndexFile::parse(deep.as_bytes(), "deep", &limits())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be read"), "{err}");
    let mut bomb = String::from("apiVersion: v1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = i - 1;
        bomb.push_str(&format!("a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
    }
    bomb.push_str("entries: {}\n");
    let err = IndexFile::parse(bomb.as_bytes(), "bomb", &limits())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot be read"), "{err}");
    let not_utf8 = IndexFile::parse(&[0xff, 0xfe, b'a'], "bin", &limits())
        .unwrap_err()
        .to_string();
    assert!(not_utf8.contains("not UTF-8"), "{not_utf8}");
}

#[test]
fn duplicates_are_refused_and_a_merge_keeps_the_local_entry() {
    let mut local = IndexFile::new(None);
    let entry = |op: &str, url: &str| PackageVersion {
        name: "a".into(),
        operator_version: op.into(),
        urls: vec![url.into()],
        digest: Some(DIGEST.into()),
        ..Default::default()
    };
    local.add(entry("1.0.0", "local")).unwrap();
    let dup = local.add(entry("1.0.0", "again")).unwrap_err();
    assert_eq!(dup, "a 1.0.0 is already in the index");
    let mut other = IndexFile::new(None);
    other.add(entry("1.0.0", "remote")).unwrap();
    other.add(entry("0.9.0", "remote")).unwrap();
    assert_eq!(local.merge(other), 1);
    let urls: Vec<&str> = local.entries["a"]
        .iter()
        .map(|e| e.urls[0].as_str())
        .collect();
    assert_eq!(urls, ["local", "remote"]);
}

#[test]
fn a_written_index_reads_back_the_same_and_keeps_versions_as_text() {
    let mut index = IndexFile::parse(KUDO_INDEX.as_bytes(), "r", &limits()).unwrap();
    index
        .add(PackageVersion {
            name: "n".into(),
            operator_version: "1.10".into(),
            app_version: Some("1.20".into()),
            ..Default::default()
        })
        .unwrap();
    let text = index.to_yaml().unwrap();
    let again = IndexFile::parse(text.as_bytes(), "r", &limits()).unwrap();
    assert_eq!(again, {
        let mut i = index.clone();
        i.sort();
        i
    });
    assert!(text.starts_with("apiVersion: v1\n"), "{text}");
}

#[test]
fn archive_names_follow_kudo() {
    assert_eq!(
        archive_name("kafka", Some("2.5.0"), "1.3.0"),
        "kafka-2.5.0_1.3.0.tgz"
    );
    assert_eq!(archive_name("first", None, "0.2.0"), "first-0.2.0.tgz");
    assert_eq!(archive_name("first", Some(""), "0.2.0"), "first-0.2.0.tgz");
}

#[test]
fn an_index_listing_more_versions_operators_or_annotations_than_allowed_is_refused_while_read() {
    use crate::limits::{MAX_INDEX_ANNOTATIONS, MAX_INDEX_OPERATORS, MAX_INDEX_VERSIONS};
    let mut versions = String::from("apiVersion: v1\nentries:\n  a:\n");
    for _ in 0..=MAX_INDEX_VERSIONS {
        versions.push_str("  - {operatorVersion: \"1\"}\n");
    }
    let mut operators = String::from("apiVersion: v1\nentries:\n");
    for i in 0..=MAX_INDEX_OPERATORS {
        operators.push_str(&format!("  o{i}: []\n"));
    }
    let mut annotations = String::from("apiVersion: v1\nentries: {}\nannotations:\n");
    for i in 0..=MAX_INDEX_ANNOTATIONS {
        annotations.push_str(&format!("  k{i}: v\n"));
    }
    for (text, says) in [
        (versions, "more than 100000 versions in all"),
        (operators, "more than 10000 operators"),
        (annotations, "more than 10000 entries"),
    ] {
        let err = IndexFile::parse(text.as_bytes(), "big", &limits())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{err}");
    }
}
