use super::*;
use crate::index::IndexFile;
use crate::limits::Limits;

const INDEX: &str = r#"apiVersion: v1
annotations:
  recalls.kudo.dev/kafka: |
    >=1.3.0 <1.3.2: CVE-2026-1234, data loss on restart
    1.1.0: broken upgrade from 1.0
  helm.sh/other: kept
entries:
  kafka:
  - operatorVersion: 1.3.1
    kubeVersion: ">=1.27.0"
    annotations:
      kudo.dev/channels: stable, beta
    urls: [a]
  - operatorVersion: 1.4.0-rc.1
    annotations:
      kudo.dev/channels: beta
    urls: [a]
  - operatorVersion: 1.2.0
    urls: [a]
  - operatorVersion: 1.5.0-rc.1
    urls: [a]
"#;

fn index() -> IndexFile {
    IndexFile::parse(INDEX.as_bytes(), "r", &Limits::default()).unwrap()
}

fn version<'a>(index: &'a IndexFile, v: &str) -> &'a PackageVersion {
    index.entries["kafka"]
        .iter()
        .find(|e| e.operator_version == v)
        .unwrap()
}

#[test]
fn channels_come_from_the_annotation_and_a_release_without_one_is_stable() {
    let index = index();
    assert_eq!(version(&index, "1.3.1").channels(), ["stable", "beta"]);
    assert_eq!(version(&index, "1.4.0-rc.1").channels(), ["beta"]);
    assert_eq!(version(&index, "1.2.0").channels(), ["stable"]);
    assert!(
        version(&index, "1.5.0-rc.1").channels().is_empty(),
        "a pre-release is in a channel only when it says so"
    );
}

#[test]
fn recalls_are_read_per_operator_with_their_reasons() {
    let index = index();
    let recalls = index.recalls("kafka");
    assert_eq!(recalls.len(), 2);
    let covered = |v: &str| {
        recalls
            .iter()
            .find(|r| r.covers(&Version::parse(v).unwrap()))
            .map(|r| r.reason.clone())
    };
    assert_eq!(
        covered("1.3.1").as_deref(),
        Some("CVE-2026-1234, data loss on restart")
    );
    assert!(covered("1.3.2-rc.1").is_some(), "pre-releases inside count");
    assert_eq!(covered("1.3.2"), None);
    assert_eq!(covered("1.3.0-rc.1"), None, "below 1.3.0");
    assert_eq!(covered("1.1.0").as_deref(), Some("broken upgrade from 1.0"));
    assert_eq!(covered("1.2.0"), None);
    assert!(index.recalls("zookeeper").is_empty());
}

#[test]
fn kubernetes_ranges_compare_the_clusters_release() {
    let index = index();
    let v = version(&index, "1.3.1");
    let gke = kubernetes_release("v1.28.3-gke.1286000").unwrap();
    assert_eq!(gke.to_string(), "1.28.3");
    assert_eq!(v.kubernetes_mismatch(Some(&gke)), None);
    let old = kubernetes_release("1.26.9").unwrap();
    assert_eq!(
        v.kubernetes_mismatch(Some(&old)).unwrap(),
        "needs Kubernetes >=1.27.0, the cluster runs 1.26.9"
    );
    assert!(
        v.kubernetes_mismatch(None)
            .unwrap()
            .contains("cluster's version is unknown")
    );
    assert_eq!(version(&index, "1.2.0").kubernetes_mismatch(None), None);
    assert_eq!(kube_version_of_minimum("1.27.0").unwrap(), ">=1.27.0");
    assert_eq!(kube_version_of_minimum(">=1.25 <2").unwrap(), ">=1.25 <2");
    assert!(kube_version_of_minimum("newest").is_err());
}

#[test]
fn the_fields_survive_writing_and_caching() {
    let index = index();
    let again =
        IndexFile::parse(index.to_yaml().unwrap().as_bytes(), "r", &Limits::default()).unwrap();
    assert_eq!(again, index);
    assert_eq!(
        again.annotations["helm.sh/other"], "kept",
        "foreign annotations stay"
    );
    let header = crate::cache::CacheHeader {
        url: "http://r/".into(),
        fetched: "now".into(),
        generated: None,
        annotations: index.annotations.clone(),
    };
    let bytes = crate::cache::encode(&index, &header).unwrap();
    let cached = crate::cache::CachedIndex::open(&bytes)
        .unwrap()
        .to_index()
        .unwrap();
    assert_eq!(cached.recalls("kafka").len(), 2);
    assert_eq!(cached.entries, index.entries);
}

#[test]
fn malformed_fields_refuse_the_index_naming_the_entry() {
    let cases = [
        (
            INDEX.replace("stable, beta", "Stable"),
            "kafka 1.3.1: kudo.dev/channels: channel \"Stable\" is not a channel name",
        ),
        (
            INDEX.replace("\">=1.27.0\"", "\">=1.x.3\""),
            "kafka 1.3.1: kubeVersion: \">=1.x.3\" is not a version or range",
        ),
        (
            INDEX.replace("1.1.0: broken upgrade from 1.0", "1.1.0"),
            "annotation recalls.kudo.dev/kafka: recall \"1.1.0\" is not `RANGE: REASON`",
        ),
        (
            INDEX.replace("1.1.0: broken upgrade from 1.0", "1.1.0:  "),
            "gives no reason",
        ),
        (
            INDEX.replace("recalls.kudo.dev/kafka", "recalls.kudo.dev/Ka fka"),
            "is not an operator name",
        ),
        (
            INDEX.replace(
                "stable, beta",
                &(0..17)
                    .map(|i| format!("c{i}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            "17 channels, more than the 16",
        ),
    ];
    for (text, needle) in cases {
        let err = IndexFile::parse(text.as_bytes(), "r", &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{needle}\n{err}");
    }
    let many: String = (0..65).map(|i| format!("    {i}.0.0: r\n")).collect();
    let text = INDEX.replace(
        "    1.1.0: broken upgrade from 1.0\n",
        &format!("    1.1.0: b\n{many}"),
    );
    let err = IndexFile::parse(text.as_bytes(), "r", &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("more than the 64"), "{err}");
    let long = INDEX.replace("broken upgrade from 1.0", &"x".repeat(1025));
    let err = IndexFile::parse(long.as_bytes(), "r", &Limits::default()).unwrap_err();
    assert!(err.to_string().contains("longer than 1024"), "{err}");
}

#[test]
fn recalls_added_to_an_index_read_back() {
    let mut index = index();
    index.add_recall(
        "zookeeper",
        Recall {
            range: Range::parse("<0.3.1").unwrap(),
            reason: "snapshot loss".into(),
        },
    );
    let again =
        IndexFile::parse(index.to_yaml().unwrap().as_bytes(), "r", &Limits::default()).unwrap();
    let recalls = again.recalls("zookeeper");
    assert_eq!(recalls.len(), 1);
    assert_eq!(recalls[0].to_string(), "<0.3.1: snapshot loss");
}

#[test]
fn channels_are_set_per_operator_or_version_and_recalls_refuse_bad_reasons() {
    let mut index = index();
    assert_eq!(index.set_channels("kafka@1.2.0", "lts, stable").unwrap(), 1);
    assert_eq!(version(&index, "1.2.0").channels(), ["lts", "stable"]);
    assert_eq!(index.set_channels("kafka", "beta").unwrap(), 4);
    assert_eq!(version(&index, "1.2.0").channels(), ["beta"]);
    assert!(
        index
            .set_channels("kafka@9.9.9", "beta")
            .unwrap_err()
            .contains("no kafka 9.9.9")
    );
    assert!(
        index
            .set_channels("redis", "beta")
            .unwrap_err()
            .contains("no operator \"redis\"")
    );
    assert!(index.set_channels("kafka", "Beta").is_err());
    assert!(
        Recall::new("<1", "two\nlines")
            .unwrap_err()
            .contains("one line")
    );
    assert!(Recall::new("<1", " ").unwrap_err().contains("no reason"));
    assert!(Recall::new("1.x.2", "r").is_err());
}
