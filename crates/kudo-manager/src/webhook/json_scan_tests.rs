//! The cursor against serde: what it skips serde accepts, and JSON as
//! serde writes it is skipped.

use proptest::prelude::*;
use serde::de::IgnoredAny;

use super::*;

/// Skips `text` as one value followed only by whitespace.
fn skips(text: &str) -> bool {
    let mut cursor = Cursor::new(text);
    cursor.skip().is_ok() && cursor.at_end()
}

fn serde_accepts(text: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(text).is_ok()
}

#[test]
fn skips_json_of_every_kind() {
    for text in [
        r#"{"a":[1,-0.5,2e-3,1E+2,true,false,null],"b":{},"c":[],"d":"x\"y\\z\/\n"}"#,
        " [ 1 , { \"k\" : \"é\" } ] ",
        "0",
        r#""plain""#,
        r#""\u003c\u0026\u00e9\u0000""#,
    ] {
        assert!(skips(text), "{text}");
    }
}

#[test]
fn gives_up_on_what_is_not_json_or_is_left_to_serde() {
    for text in [
        "{,}",
        "[1,]",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{"a":1 "b":2}"#,
        "[1 2]",
        "01",
        "1.",
        "-",
        "1e",
        "tru",
        "nul",
        r#""open"#,
        r#""\uD83D\uDE00""#,
        r#""\u00G1""#,
        r#""\u00""#,
        "\"bad \\q\"",
        "\"tab\tin\"",
        "}",
        "",
        "[1] x",
    ] {
        assert!(!skips(text), "{text:?}");
    }
    let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
    assert!(
        !skips(&deep),
        "nesting deeper than serde's limit allows is left to serde"
    );
}

#[test]
fn skipping_counts_the_containers_already_open_towards_the_limit() {
    let nested = |inner: &str| format!("{}{inner}{}", r#"{"a":"#.repeat(99), "}".repeat(99));
    for (inner, fits) in [("[]", true), ("[[]]", false), ("{\"b\":{}}", false)] {
        let text = nested(inner);
        let mut cursor = Cursor::new(&text);
        for _ in 0..99 {
            cursor.object().unwrap();
            assert_eq!(cursor.next_key(), Ok(Some("a")));
        }
        assert_eq!(cursor.skip().is_ok(), fits, "{inner}");
    }
}

#[test]
fn booleans_are_read_and_anything_else_gives_up() {
    let mut cursor = Cursor::new(" true false");
    assert_eq!(cursor.bool(), Ok(true));
    assert_eq!(cursor.bool(), Ok(false));
    assert!(cursor.at_end());
    for text in ["tru", "null", "1", "\"true\"", "True"] {
        assert_eq!(Cursor::new(text).bool(), Err(GiveUp), "{text}");
    }
}

#[test]
fn strings_are_borrowed_unless_escaped() {
    let mut cursor = Cursor::new(r#""plain" "a\"b\n""#);
    assert!(matches!(cursor.string(), Ok(Cow::Borrowed("plain"))));
    assert_eq!(cursor.string(), Ok(Cow::Owned("a\"b\n".to_string())));
    let mut escaped = Cursor::new(r#""\u003c\u0026\u00e9""#);
    assert_eq!(escaped.string(), Ok(Cow::Owned("<&é".to_string())));
    assert!(cursor.at_end());
}

#[test]
fn a_long_string_is_scanned_past_every_eight_byte_word() {
    for len in 0..40 {
        let body = "x".repeat(len);
        for tail in ["\"", "\\n\"", "\u{1}\""] {
            let text = format!("\"{body}{tail}");
            assert_eq!(
                skips(&text),
                serde_accepts(&text) && !tail.contains('\u{1}'),
                "{text:?}"
            );
        }
    }
}

#[test]
fn integers_follow_serde_for_i64() {
    for (text, expected) in [
        ("7", Ok(7)),
        ("-3", Ok(-3)),
        ("-0", Err(GiveUp)),
        ("2.0", Err(GiveUp)),
        ("1e2", Err(GiveUp)),
        ("99999999999999999999", Err(GiveUp)),
    ] {
        assert_eq!(Cursor::new(text).i64(), expected, "{text}");
    }
}

proptest! {
    #[test]
    fn what_the_cursor_skips_serde_accepts(text in r#"[\[\]{}",:0-9a-z\\ .eE+-]{0,24}"#) {
        if skips(&text) {
            prop_assert!(serde_accepts(&text), "{text:?}");
        }
    }

    #[test]
    fn json_as_serde_writes_it_is_skipped(value in arbitrary_json()) {
        let text = serde_json::to_string(&value).unwrap();
        prop_assert!(skips(&text), "{text}");
    }
}

fn arbitrary_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
        ]
    })
}
