use super::*;

fn admits(range: &str, version: &str) -> bool {
    let r = Range::parse(range).unwrap_or_else(|e| panic!("{range}: {e}"));
    r.matches(&Version::parse(version).unwrap(), false)
}

/// Each row: range, versions it admits, versions it does not.
fn check(rows: &[(&str, &[&str], &[&str])]) {
    for (range, yes, no) in rows {
        for v in *yes {
            assert!(admits(range, v), "{range:?} should admit {v}");
        }
        for v in *no {
            assert!(!admits(range, v), "{range:?} should not admit {v}");
        }
    }
}

#[test]
fn a_bare_full_version_is_exact() {
    check(&[
        (
            "1.2.3",
            &["1.2.3", "v1.2.3", "1.2.3+build"],
            &["1.2.4", "1.2.2", "1.3.0"],
        ),
        ("=1.2.3", &["1.2.3"], &["1.2.4"]),
        ("v1.2.3", &["1.2.3"], &["1.2.4"]),
    ]);
    assert!(Range::parse("1.2.3").unwrap().exact().is_some());
    assert!(Range::parse("1.2").unwrap().exact().is_none());
    assert!(Range::parse("^1.2.3").unwrap().exact().is_none());
}

#[test]
fn a_bare_partial_version_is_a_wildcard_as_in_helm() {
    check(&[
        ("1.2", &["1.2.0", "1.2.9"], &["1.3.0", "1.1.9"]),
        ("1.2.x", &["1.2.0", "1.2.9"], &["1.3.0"]),
        ("1.2.*", &["1.2.7"], &["2.2.7"]),
        ("1", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.9"]),
        ("1.x", &["1.4.0"], &["2.0.0"]),
        ("1.X.X", &["1.4.0"], &["2.0.0"]),
        ("*", &["0.0.1", "9.9.9"], &[]),
        ("x", &["3.1.4"], &[]),
        ("", &["3.1.4"], &[]),
    ]);
}

#[test]
fn comparisons_and_their_wildcard_forms() {
    check(&[
        (">1.2.3", &["1.2.4", "2.0.0"], &["1.2.3", "1.0.0"]),
        (">1.2", &["1.3.0"], &["1.2.9", "1.2.0"]),
        (">1", &["2.0.0"], &["1.9.9"]),
        (">=1.2", &["1.2.0", "5.0.0"], &["1.1.9"]),
        ("=>1.2", &["1.2.0"], &["1.1.9"]),
        ("<1.2", &["1.1.9"], &["1.2.0"]),
        ("<1.2.3", &["1.2.2"], &["1.2.3"]),
        ("<=1.2.3", &["1.2.3"], &["1.2.4"]),
        ("<=1.2", &["1.2.9", "0.1.0"], &["1.3.0"]),
        ("=<1.2", &["1.2.9"], &["1.3.0"]),
        ("<=2.x", &["2.9.9"], &["3.0.0"]),
        ("!=1.2.3", &["1.2.4"], &["1.2.3"]),
        ("!=1.2.x", &["1.3.0", "2.2.0"], &["1.2.5"]),
        ("!=1.x", &["2.0.0"], &["1.2.5"]),
    ]);
}

#[test]
fn tilde_allows_patch_releases() {
    check(&[
        ("~1.2.3", &["1.2.3", "1.2.9"], &["1.2.2", "1.3.0"]),
        ("~>1.2.3", &["1.2.9"], &["1.3.0"]),
        ("~1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
        ("~1", &["1.0.0", "1.9.0"], &["2.0.0"]),
        ("~1.x", &["1.9.0"], &["2.0.0"]),
        ("~0", &["0.9.0"], &["1.0.0"]),
        ("~0.0.0", &["0.0.0", "5.0.0"], &[]),
        ("~*", &["5.0.0"], &[]),
    ]);
}

#[test]
fn caret_allows_compatible_releases_with_zero_majors_kept_narrow() {
    check(&[
        ("^1.2.3", &["1.2.3", "1.9.0"], &["1.2.2", "2.0.0"]),
        ("^1.2", &["1.2.0", "1.9.9"], &["1.1.0", "2.0.0"]),
        ("^1", &["1.0.0", "1.9.9"], &["2.0.0"]),
        ("^0.2.3", &["0.2.3", "0.2.9"], &["0.3.0", "0.2.2"]),
        ("^0.2", &["0.2.0", "0.2.9"], &["0.3.0"]),
        ("^0.0.3", &["0.0.3"], &["0.0.4", "0.1.0"]),
        ("^0.0", &["0.0.0", "0.0.9"], &["0.1.0"]),
        ("^0", &["0.0.0", "0.9.9"], &["1.0.0"]),
        ("^*", &["0.0.1", "7.0.0"], &[]),
    ]);
}

#[test]
fn spaces_and_commas_join_constraints_and_bars_separate_alternatives() {
    check(&[
        (">=1.2 <2", &["1.2.0", "1.9.9"], &["2.0.0", "1.1.0"]),
        (">= 1.2, < 2", &["1.5.0"], &["2.0.0"]),
        (">=1.2,<2", &["1.5.0"], &["2.0.0"]),
        ("<1 || >=3", &["0.5.0", "3.0.0"], &["1.0.0", "2.9.9"]),
        ("1.2.3 || 1.2.5", &["1.2.3", "1.2.5"], &["1.2.4"]),
        ("^1.2 || ^2", &["1.4.0", "2.4.0"], &["3.0.0"]),
    ]);
}

#[test]
fn hyphen_spans_are_inclusive() {
    check(&[
        ("1.2 - 1.4.5", &["1.2.0", "1.4.5"], &["1.4.6", "1.1.9"]),
        ("1.2.3 - 2", &["1.2.3", "2.9.9"], &["3.0.0"]),
        ("1 - 2 || 5", &["1.5.0", "5.1.0"], &["3.0.0"]),
    ]);
}

#[test]
fn pre_releases_match_only_when_asked_for_or_named() {
    let pre = Version::parse("1.3.0-rc.1").unwrap();
    let r = Range::parse("^1.2").unwrap();
    assert!(!r.matches(&pre, false), "not without asking");
    assert!(r.matches(&pre, true), "with --devel");
    assert!(!Range::parse("*").unwrap().matches(&pre, false));
    assert!(Range::parse("*").unwrap().matches(&pre, true));
    // A range naming a pre-release opens its own alternative to them.
    let named = Range::parse(">=1.3.0-beta.1").unwrap();
    assert!(named.matches(&pre, false));
    assert!(!named.matches(&Version::parse("1.3.0-alpha").unwrap(), false));
    let mixed = Range::parse(">=1.3.0-beta.1 || <1").unwrap();
    assert!(mixed.matches(&pre, false));
    assert!(!mixed.matches(&Version::parse("0.5.0-rc.1").unwrap(), false));
    // Exact pre-release versions match themselves.
    assert!(admits("1.3.0-rc.1", "1.3.0-rc.1"));
    assert!(!admits("1.3.0-rc.1", "1.3.0"));
}

#[test]
fn malformed_ranges_are_refused_saying_what_is_wrong() {
    for (text, why) in [
        (">=", "no version after it"),
        ("> = 1", "two operators in a row"),
        ("?1.2", "not a number"),
        ("1.2.3.4", "more than three"),
        ("1.x.3", "number after a wildcard"),
        ("1.2 -", "without its upper end"),
        ("- 1.2", "without a version before it"),
        ("^1.2 - 2", "plain versions"),
        ("abc", "not a number"),
        ("<>1", "unknown operator"),
        ("1.2.3-", "malformed"),
    ] {
        let err = Range::parse(text).unwrap_err();
        assert!(err.contains(why), "{text:?}: {err}");
        assert!(err.contains(&format!("{text:?}")), "{err} names the range");
    }
    assert!(
        Range::parse(&"1".repeat(2000))
            .unwrap_err()
            .contains("too long")
    );
}

#[test]
fn a_range_prints_as_it_was_written() {
    assert_eq!(Range::parse(" >=1.2 <2 ").unwrap().to_string(), ">=1.2 <2");
}
