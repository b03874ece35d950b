use super::*;
use crate::limits::Limits;

fn index() -> IndexFile {
    let text = "apiVersion: v1\nentries:\n  kafka:\n  - {operatorVersion: 1.2.1, appVersion: 2.5.0, urls: [a]}\n  - {operatorVersion: 1.2.0, appVersion: 2.5.0, urls: [a]}\n  - {operatorVersion: 1.1.0, appVersion: 2.4.0, urls: [a]}\n  - {operatorVersion: 1.3.0-rc.1, appVersion: 2.6.0, urls: [a]}\n  - {operatorVersion: 1.0.0, appVersion: 2.3.0, urls: [a], removed: true}\n  kafka-connect:\n  - {operatorVersion: 0.1.0, urls: [a]}\n  zookeeper:\n  - {operatorVersion: 0.3.0, urls: [a]}\n";
    IndexFile::parse(text.as_bytes(), "community", &Limits::default()).unwrap()
}

fn pick(op: Option<&str>, app: Option<&str>, devel: bool) -> Result<String, String> {
    let index = index();
    let query = Query {
        name: "kafka",
        operator_version: op,
        app_version: app,
        include_prereleases: devel,
    };
    select_in_index(&index, "community", &query)
        .map(|e| e.operator_version.clone())
        .map_err(|e| e.to_string())
}

#[test]
fn without_a_version_the_newest_stable_version_is_chosen() {
    assert_eq!(pick(None, None, false).unwrap(), "1.2.1");
    assert_eq!(pick(None, None, true).unwrap(), "1.3.0-rc.1", "--devel");
}

#[test]
fn a_recalled_version_is_never_chosen_and_asking_for_it_names_the_recall() {
    let mut index = index();
    index.add_recall(
        "kafka",
        crate::channels::Recall::new("1.2.1", "CVE-2026-1: data loss").unwrap(),
    );
    let query = |op| Query {
        name: "kafka",
        operator_version: op,
        ..Query::default()
    };
    let newest = select_in_index(&index, "community", &query(None)).unwrap();
    assert_eq!(newest.operator_version, "1.2.0");
    let err = select_in_index(&index, "community", &query(Some("1.2.1")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "kafka 1.2.1 (app 2.5.0) is recalled in repository community (CVE-2026-1: data loss)"
        ),
        "{err}"
    );
}

#[test]
fn exact_versions_and_ranges_choose_the_newest_that_fits() {
    assert_eq!(pick(Some("1.2.0"), None, false).unwrap(), "1.2.0");
    assert_eq!(pick(Some("^1.1"), None, false).unwrap(), "1.2.1");
    assert_eq!(pick(Some("~1.1"), None, false).unwrap(), "1.1.0");
    assert_eq!(pick(Some(">=1.1 <1.2"), None, false).unwrap(), "1.1.0");
    assert_eq!(pick(Some("1.x"), None, false).unwrap(), "1.2.1");
    assert_eq!(pick(None, Some("2.4.x"), false).unwrap(), "1.1.0");
    assert_eq!(
        pick(Some("1.3.0-rc.1"), None, false).unwrap(),
        "1.3.0-rc.1",
        "named pre-release"
    );
}

#[test]
fn a_missing_version_says_what_was_asked_and_what_exists() {
    let err = pick(Some("1.4.x"), None, false).unwrap_err();
    assert_eq!(
        err,
        "kafka 1.4.x: no such version in repository community; newest is 1.2.1 (app 2.5.0) \
         (it has 1.3.0-rc.1 (app 2.6.0), 1.2.1 (app 2.5.0), 1.2.0 (app 2.5.0), 1.1.0 (app 2.4.0))"
    );
    let pre = pick(Some(">=1.3.0-alpha"), Some("2.6.x"), false);
    assert_eq!(pre.unwrap(), "1.3.0-rc.1");
    let only_pre = pick(Some("^1.2.5"), None, false).unwrap_err();
    assert_eq!(
        only_pre,
        "kafka ^1.2.5: only pre-releases fit in repository community (1.3.0-rc.1); pass --devel to use them"
    );
    let removed = pick(Some("1.0.0"), None, false).unwrap_err();
    assert!(removed.starts_with("kafka 1.0.0: kafka 1.0.0 (app 2.3.0) was removed from repository community; newest is 1.2.1"), "{removed}");
    let bad = pick(Some("1.x.2"), None, false).unwrap_err();
    assert!(bad.contains("not a version or range"), "{bad}");
}

#[test]
fn an_unknown_name_lists_similar_ones() {
    let index = index();
    let err = |name: &str| {
        select_in_index(
            &index,
            "community",
            &Query {
                name,
                ..Query::default()
            },
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        err("kafak"),
        "kafak: no package of that name in repository community; similar names: kafka"
    );
    assert_eq!(
        err("kaf"),
        "kaf: no package of that name in repository community; similar names: kafka, kafka-connect"
    );
    assert_eq!(
        err("redis"),
        "redis: no package of that name in repository community"
    );
}

#[test]
fn versions_that_are_not_semver_are_found_by_their_exact_text() {
    let text = "apiVersion: v1\nentries:\n  odd:\n  - {operatorVersion: latest-build, urls: [a]}\n";
    let index = IndexFile::parse(text.as_bytes(), "r", &Limits::default()).unwrap();
    let q = Query {
        name: "odd",
        operator_version: Some("latest-build"),
        ..Query::default()
    };
    assert_eq!(
        select_in_index(&index, "r", &q).unwrap().operator_version,
        "latest-build"
    );
    let any = Query {
        name: "odd",
        ..Query::default()
    };
    assert!(select_in_index(&index, "r", &any).is_ok());
}

#[test]
fn search_matches_name_or_description_in_any_case() {
    let e = PackageVersion {
        name: "kafka".into(),
        description: Some("Apache Kafka on Kubernetes".into()),
        ..Default::default()
    };
    assert!(matches_search(&e, "KAF"));
    assert!(matches_search(&e, "apache"));
    assert!(matches_search(&e, ""));
    assert!(!matches_search(&e, "redis"));
}
