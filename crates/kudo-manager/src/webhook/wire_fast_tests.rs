//! The fast path must read every review exactly as serde does, or give up.

use proptest::prelude::*;
use serde_json::Value;

use super::fast;
use crate::webhook::wire_status::tests::{reviews, with_records};

/// What serde reads from `text`, as text (all the slim types derive Debug).
fn by_serde(text: &str) -> Result<String, String> {
    serde_json::from_str::<super::WireReview<'_>>(text)
        .map(|review| format!("{review:?}"))
        .map_err(|err| err.to_string())
}

/// When the fast path reads `text`, serde must read it the same way.
fn agrees_with_serde(text: &str) -> Result<bool, String> {
    let Some(fast) = fast::review(text) else {
        return Ok(false);
    };
    match by_serde(text) {
        Ok(serde) if serde == format!("{fast:?}") => Ok(true),
        Ok(serde) => Err(format!("fast {fast:?}\nserde {serde}")),
        Err(err) => Err(format!("fast read what serde refuses ({err}): {fast:?}")),
    }
}

/// Every fixture, compact and pretty, plain and with status records.
fn bodies() -> &'static [(String, String)] {
    static BODIES: std::sync::LazyLock<Vec<(String, String)>> =
        std::sync::LazyLock::new(read_bodies);
    &BODIES
}

fn read_bodies() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, mut body) in reviews() {
        let name = path.display().to_string();
        out.push((name.clone(), serde_json::to_string(&body).unwrap()));
        out.push((name.clone(), serde_json::to_string_pretty(&body).unwrap()));
        for field in ["oldObject", "object"] {
            with_records(&mut body["request"][field]);
        }
        out.push((
            format!("{name} with records"),
            serde_json::to_string(&body).unwrap(),
        ));
    }
    out
}

#[test]
fn every_fixture_takes_the_fast_path_and_reads_as_with_serde() {
    for (name, text) in bodies() {
        assert_eq!(agrees_with_serde(text), Ok(true), "{name}");
    }
}

#[test]
fn escapes_nulls_and_unknown_fields_read_as_with_serde() {
    let body = r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","extra":[1,-2.5e3,true,null,{"x":"\"\\\/\b\f\n\r\t"}],
        "request":{"uid":"a\"b\u003c","kind":{"group":"kudo.dev","version":"v1beta1","kind":"Instance"},
        "resource":null,"userInfo":{"username":"me"},"subResource":null,"namespace":null,
        "operation":"UPDATE","object":null,
        "oldObject":{"metadata":{"name":"zk","namespace":null,"generation":-7,
            "annotations":{"last-applied":"{\"a\":\"b \u0026 c\"}"}},
            "spec":{"operatorVersion":{"name":"zk-1"},"parameters":{"A":"1","A":"2"}},
            "status":{"planStatus":{"deploy":{"name":"deploy","status":null,"phases":[]}},
                "appliedParameters":{"A":"1","A":"3"},"lastPlanExecutionUid":null,"activePlan":null}}}}"#;
    assert_eq!(agrees_with_serde(body), Ok(true));
}

#[test]
fn the_active_plan_reads_as_with_serde_or_is_left_to_it() {
    let review = |active: &str| {
        format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u",
            "kind":{{"group":"kudo.dev","version":"v1beta1","kind":"Instance"}},"resource":{{}},
            "operation":"UPDATE","userInfo":{{}},"oldObject":{{"metadata":{{"name":"zk"}},"spec":{{}},
            "status":{{"activePlan":{active}}}}}}}}}"#
        )
    };
    for read in [
        r#"{"name":"deploy","status":"IN_PROGRESS"}"#,
        r#"{"name":"deploy","uid":null,"status":"WAITING","trigger":"manual","breakGlass":true,"x":[1]}"#,
        r#"{"status":"COMPLETE","breakGlass":false,"name":"deploy","trigger":null}"#,
        "null",
    ] {
        assert_eq!(agrees_with_serde(&review(read)), Ok(true), "{read}");
    }
    for left in [
        r#"{"status":"IN_PROGRESS"}"#,
        r#"{"name":"deploy"}"#,
        r#"{"name":"deploy","status":"RUNNING"}"#,
        r#"{"name":"deploy","status":null}"#,
        r#"{"name":"deploy","status":"COMPLETE","breakGlass":"yes"}"#,
        r#"{"name":"deploy","name":"update","status":"COMPLETE"}"#,
    ] {
        assert_eq!(
            fast::review(&review(left)).map(|r| format!("{r:?}")),
            None,
            "{left}"
        );
        assert!(by_serde(&review(left)).is_err(), "serde refuses {left} too");
    }
}

#[test]
fn plans_in_any_order_repeated_plans_and_the_last_success_read_as_with_serde() {
    let body = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
        "kind":{"group":"kudo.dev","version":"v1beta1","kind":"Instance"},"resource":{},
        "operation":"UPDATE","userInfo":{},"oldObject":{"metadata":{"name":"zk"},"spec":{},
        "status":{"planStatus":{
            "update":{"name":"update","status":"COMPLETE","phases":[{"name":"u","steps":[{"name":"u1","status":"COMPLETE"}]}]},
            "deploy":{"phases":[{"steps":[{"name":"d1","status":"IN_PROGRESS"},{"name":"d2"}],"name":"d"},{"name":"e"}],"uid":"x","status":"IN_PROGRESS"},
            "update":{"name":"update","status":"FATAL_ERROR","phases":[{"name":"v","steps":[]}]},
            "backup":{}},
            "lastSuccessful":{"operatorVersion":"zk-1","parameters":{"B":"2","A":"1","B":"3"},"plan":"deploy","completedAt":"2026-01-01T00:00:00Z"}}}}}"#;
    assert_eq!(agrees_with_serde(body), Ok(true));
    let left = body.replace(r#""operatorVersion":"zk-1","#, "");
    assert_eq!(fast::review(&left).map(|r| format!("{r:?}")), None);
    assert!(by_serde(&left).is_err(), "serde refuses it too");
}

#[test]
fn what_serde_might_read_differently_is_left_to_serde() {
    let review = |request: &str| {
        format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{request}}}"#
        )
    };
    let valid = r#"{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{},"operation":"CREATE","userInfo":{}}"#;
    assert_eq!(agrees_with_serde(&review(valid)), Ok(true));
    for (why, text) in [
        (
            "escaped key",
            review(&valid.replace(r#""uid":"u""#, r#""ui\u0064":"u""#)),
        ),
        (
            "escaped surrogate pair",
            review(&valid.replace(r#""u""#, r#""\uD83D\uDE00""#)),
        ),
        (
            "duplicate field",
            review(&valid.replace(r#""uid":"u""#, r#""uid":"u","uid":"v""#)),
        ),
        (
            "missing userInfo",
            review(&valid.replace(r#","userInfo":{}"#, "")),
        ),
        (
            "unknown operation",
            review(&valid.replace("CREATE", "PATCH")),
        ),
        ("trailing comma", review(&valid.replace("{}}", "{},}"))),
        (
            "control character",
            review(&valid.replace(r#""u""#, "\"\u{1}\"")),
        ),
        (
            "leading zero",
            review(&valid.replace("{}}", "{},\"n\":01}")),
        ),
        (
            "negative zero generation",
            review(&valid.replace(
                "{}}",
                r#"{},"oldObject":{"metadata":{"generation":-0},"spec":{}}}"#,
            )),
        ),
        ("trailing text", format!("{} x", review(valid))),
        (
            "deep nesting",
            review(&valid.replace("{}}", &format!("{}1{}}}", "[".repeat(120), "]".repeat(120)))),
        ),
        ("request as array", review(r#"["u"]"#)),
    ] {
        assert_eq!(fast::review(&text).map(|r| format!("{r:?}")), None, "{why}");
    }
}

/// Small edits that make or break JSON in the places the fast path reads.
fn edit() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("\\u0041".to_string()),
        Just("\\u003c".to_string()),
        Just("\\uD83D\\uDE00".to_string()),
        Just("\\u00".to_string()),
        Just("\\n".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("null".to_string()),
        Just("nul".to_string()),
        Just("true".to_string()),
        Just("fals".to_string()),
        Just("-0".to_string()),
        Just("1e5".to_string()),
        Just("1.".to_string()),
        Just(" ".to_string()),
        Just("\u{1}".to_string()),
        Just("é".to_string()),
        Just(r#""uid":"dup","#.to_string()),
        Just(r#""status":null,"#.to_string()),
        Just(r#""generation":2.5,"#.to_string()),
        "[a-zA-Z0-9_\"{}\\[\\],:. -]{1,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn an_edited_review_is_read_as_serde_reads_it_or_left_to_serde(
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        cut in 0usize..4,
        insert in edit(),
    ) {
        let texts = bodies();
        let (name, text) = &texts[pick.index(texts.len())];
        let mut position = at.index(text.len() + 1);
        while !text.is_char_boundary(position) {
            position -= 1;
        }
        let mut end = (position + cut).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let edited = format!("{}{insert}{}", &text[..position], &text[end..]);
        prop_assert!(agrees_with_serde(&edited).is_ok(), "{name}: {:?}", agrees_with_serde(&edited));
    }
}

#[test]
fn keys_and_values_are_found_wherever_they_are() {
    let body: Value = serde_json::from_str(&bodies()[0].1).unwrap();
    // Reversed key order at every level (serde_json keeps insertion order).
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&reversed(&body)).unwrap();
    assert_eq!(agrees_with_serde(&text), Ok(true));
}
