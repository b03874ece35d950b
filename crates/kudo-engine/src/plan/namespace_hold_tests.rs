use super::*;
use crate::model::namespace::Suppressed;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn counted(threshold: Threshold, suppressed: &[(&str, Option<&str>)]) -> NamespaceSuppressions {
    NamespaceSuppressions {
        namespace: "team".into(),
        threshold,
        source: ThresholdSource::Manager,
        suppressed: suppressed
            .iter()
            .map(|(name, until)| Suppressed {
                name: (*name).into(),
                until: until.map(ts),
            })
            .collect(),
    }
}

const NOW: &str = "2026-01-01T00:00:00Z";

#[test]
fn thresholds_read_numbers_and_off_and_refuse_the_rest() {
    assert_eq!(parse_threshold("3"), Ok(Threshold::MoreThan(3)));
    assert_eq!(parse_threshold(" 0 "), Ok(Threshold::MoreThan(0)));
    assert_eq!(parse_threshold("OFF"), Ok(Threshold::Off));
    for bad in ["-1", "three", "", "1.5", "100001", "99999999999999999999"] {
        let e = parse_threshold(bad).unwrap_err();
        assert!(e.contains("is not a threshold"), "{bad}: {e}");
    }
}

#[test]
fn a_huge_annotation_is_refused_with_a_short_message() {
    let e = parse_threshold(&"9".repeat(1_000_000)).unwrap_err();
    assert!(e.len() < 400, "{} bytes", e.len());
}

#[test]
fn the_annotation_wins_over_the_manager_and_a_malformed_one_falls_back_saying_why() {
    let manager = Threshold::MoreThan(3);
    assert_eq!(
        threshold_for(None, manager),
        (manager, ThresholdSource::Manager)
    );
    assert_eq!(
        threshold_for(Some("off"), manager),
        (Threshold::Off, ThresholdSource::Annotation)
    );
    let (t, source) = threshold_for(Some("lots"), manager);
    assert_eq!(t, manager);
    let ThresholdSource::Malformed(why) = source else {
        panic!("not malformed: {source:?}");
    };
    assert!(why.contains("kudo.dev/suppression-threshold"), "{why}");
}

#[test]
fn the_namespace_holds_only_when_more_than_the_threshold_are_suppressed() {
    let two = [("a", None), ("b", None)];
    assert!(hold(&counted(Threshold::MoreThan(2), &two), ts(NOW)).is_none());
    assert!(hold(&counted(Threshold::MoreThan(1), &two), ts(NOW)).is_some());
    assert!(hold(&counted(Threshold::MoreThan(0), &two[..1]), ts(NOW)).is_some());
    assert!(hold(&counted(Threshold::Off, &two), ts(NOW)).is_none());
}

#[test]
fn expired_suppressions_are_not_counted() {
    let ns = counted(
        Threshold::MoreThan(1),
        &[("a", Some("2025-12-31T00:00:00Z")), ("b", None)],
    );
    assert!(hold(&ns, ts(NOW)).is_none());
}

#[test]
fn the_hold_names_threshold_count_and_a_few_instances() {
    let names: Vec<String> = (0..8).map(|i| format!("db-{i}")).collect();
    let list: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    let h = hold(&counted(Threshold::MoreThan(3), &list), ts(NOW)).unwrap();
    assert!(h.message.contains("8 Instances"), "{}", h.message);
    assert!(h.message.contains("threshold 3"), "{}", h.message);
    assert!(
        h.message
            .contains("db-0, db-1, db-2, db-3, db-4 and 3 more"),
        "{}",
        h.message
    );
    assert_eq!(h.lifts_at, None);
}

#[test]
fn the_hold_lifts_when_enough_suppressions_have_expired() {
    let ns = counted(
        Threshold::MoreThan(1),
        &[
            ("a", Some("2026-01-01T03:00:00Z")),
            ("b", Some("2026-01-01T01:00:00Z")),
            ("c", Some("2026-01-01T02:00:00Z")),
        ],
    );
    // Three suppressed, one tolerated: two must end.
    let h = hold(&ns, ts(NOW)).unwrap();
    assert_eq!(h.lifts_at, Some(ts("2026-01-01T02:00:00Z")));
    assert!(hold(&ns, ts("2026-01-01T02:00:00Z")).is_none());
}

#[test]
fn a_hold_that_only_clearing_lifts_has_no_end() {
    let ns = counted(
        Threshold::MoreThan(1),
        &[
            ("a", Some("2026-01-01T03:00:00Z")),
            ("b", None),
            ("c", None),
        ],
    );
    assert_eq!(hold(&ns, ts(NOW)).unwrap().lifts_at, None);
}

#[test]
fn a_malformed_annotation_is_said_in_a_blocker() {
    let mut ns = counted(Threshold::MoreThan(3), &[]);
    assert!(malformed(&ns).is_none());
    ns.source = ThresholdSource::Malformed("annotation x: bad".into());
    let b = malformed(&ns).unwrap();
    assert!(b.message.contains("annotation x: bad"), "{}", b.message);
    assert!(b.message.contains("threshold (3)"), "{}", b.message);
}
