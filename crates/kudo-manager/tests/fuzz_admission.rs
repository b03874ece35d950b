#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Fuzzing the admission webhook's review path (proptest): every fixture
//! AdmissionReview, damaged byte by byte (JSON tokens, escapes, surrogates,
//! non-UTF-8, cuts, repeats) and edited as JSON (values replaced with
//! random JSON, deep nesting, huge numbers and strings, keys removed,
//! renamed and given twice, parameters set to random values, the request's
//! uid, operation and kind changed), through `Reviewer::review_to_json`,
//! the function the server calls with a request body.
//!
//! Every body must get a well-formed answer:
//! - an AdmissionReview v1 JSON with a response that kube can decode;
//! - the request's uid echoed whenever the body is JSON with a string at
//!   `request.uid`;
//! - allowed, or refused with 400 (not a reviewable request) or 403
//!   (denied by a rule) and a message; never 500: the OperatorVersions
//!   come from memory, so a 500 could only be the answer to a panic the
//!   reviewer caught (counted, and required to be zero);
//! - not allowed when the body is not an AdmissionReview v1 about a
//!   kudo.dev Instance, or is random bytes;
//! - no long parameter value repeated whole in the message;
//! - the same answer when asked twice.
//!
//! CI runs a bounded number of cases (`make test`); `make fuzz` raises them
//! through `PROPTEST_CASES`.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use kudo_manager::webhook::{Reviewer, StaticOperatorVersions};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use support::admission::operator_versions;

/// `ci` cases; `PROPTEST_CASES`, when set (`make fuzz`), replaces it (the
/// `proptest!` macro reads it). A failing case is saved beside this file
/// (`fuzz_admission.proptest-regressions`) and tried first on the next run.
fn config(ci: u32) -> ProptestConfig {
    ProptestConfig {
        cases: ci,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// Answers that were a panic caught by the reviewer (500).
static CAUGHT_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Every fixture review (allow/, deny/, error/), as its bytes.
fn fixtures() -> &'static [(String, Vec<u8>)] {
    static FIXTURES: std::sync::OnceLock<Vec<(String, Vec<u8>)>> = std::sync::OnceLock::new();
    FIXTURES.get_or_init(|| {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/admission");
        let mut out = Vec::new();
        for folder in ["allow", "deny", "error"] {
            let mut names: Vec<_> = std::fs::read_dir(root.join(folder))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".json"))
                .collect();
            names.sort();
            for name in names {
                let path = format!("{folder}/{name}");
                out.push((path.clone(), support::admission::fixture(&path)));
            }
        }
        assert!(out.len() > 40, "fixtures not found");
        out
    })
}

fn reviewer() -> Reviewer<StaticOperatorVersions> {
    static VERSIONS: std::sync::OnceLock<StaticOperatorVersions> = std::sync::OnceLock::new();
    let versions = VERSIONS.get_or_init(operator_versions).clone();
    Reviewer::new(versions, Duration::from_secs(1))
        .with_clock(|| "2026-11-26T12:00:00Z".parse().unwrap())
}

fn review(body: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(reviewer().review_to_json(body))
}

/// Parameter values longer than this must not come back whole.
const LONG: usize = 200;

/// Long strings under `request.{object,oldObject}.spec.parameters`.
fn long_parameter_values(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for object in ["object", "oldObject"] {
        if let Some(Value::Object(params)) =
            body.pointer(&format!("/request/{object}/spec/parameters"))
        {
            for v in params.values() {
                if let Value::String(s) = v
                    && s.len() > LONG
                {
                    out.push(s.clone());
                }
            }
        }
    }
    out
}

/// Reviews `body` twice and checks the answer; returns it.
fn check(body: &[u8]) -> Value {
    let bytes = review(body);
    assert_eq!(bytes, review(body), "a second review answers differently");
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "the answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
        )
    });
    serde_json::from_slice::<AdmissionReview<DynamicObject>>(&bytes)
        .unwrap_or_else(|e| panic!("kube cannot read the answer ({e}): {answer}"));
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1", "{answer}");
    assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
    let response = &answer["response"];
    let uid = response["uid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uid: {answer}"));
    let allowed = response["allowed"]
        .as_bool()
        .unwrap_or_else(|| panic!("no allowed: {answer}"));
    let status = &response["status"];
    if allowed {
        assert!(
            status.as_object().is_some_and(|s| s.is_empty()),
            "an allowed answer with a status: {answer}"
        );
        if let Some(warnings) = response.get("warnings") {
            assert!(
                warnings
                    .as_array()
                    .is_some_and(|w| w.iter().all(Value::is_string)),
                "{answer}"
            );
        }
    } else {
        let code = status["code"].as_u64().unwrap_or(0);
        let message = status["message"].as_str().unwrap_or("");
        if code == 500 {
            if message.contains("failed unexpectedly") {
                CAUGHT_PANICS.fetch_add(1, Ordering::Relaxed);
            }
            panic!(
                "500 for a review whose OperatorVersions are in memory (caught panics so far: {}): {message}",
                CAUGHT_PANICS.load(Ordering::Relaxed)
            );
        }
        assert!(code == 400 || code == 403, "code {code}: {answer}");
        let reason = if code == 400 {
            "BadRequest"
        } else {
            "Forbidden"
        };
        assert_eq!(status["reason"], reason, "{answer}");
        assert_eq!(status["status"], "Failure", "{answer}");
        assert!(!message.trim().is_empty(), "{answer}");
    }

    // What the body says, read by serde_json on its own. (A body that is
    // not UTF-8 only in a field the review does not read is reviewed, as
    // serde_json skips such fields unchecked.)
    if let Ok(sent) = serde_json::from_slice::<Value>(body) {
        if let Some(sent_uid) = sent.pointer("/request/uid").and_then(Value::as_str) {
            assert_eq!(uid, sent_uid, "the uid is not echoed: {answer}");
        }
        let kind = sent.pointer("/request/kind");
        let ours = sent["apiVersion"] == "admission.k8s.io/v1"
            && sent["kind"] == "AdmissionReview"
            && kind.and_then(|k| k.get("group")) == Some(&json!("kudo.dev"))
            && kind.and_then(|k| k.get("kind")) == Some(&json!("Instance"));
        if !ours {
            assert!(
                !allowed,
                "a review not about a kudo.dev Instance was allowed"
            );
        }
        let message = status["message"].as_str().unwrap_or("");
        for value in long_parameter_values(&sent) {
            assert!(
                !message.contains(&value),
                "a {}-byte parameter value is repeated whole: {}…",
                value.len(),
                message.chars().take(300).collect::<String>()
            );
        }
    }
    answer
}

// ---------------------------------------------------------------------------
// Mutations.
// ---------------------------------------------------------------------------

/// Bytes spliced into a body: JSON structure, escapes (surrogates too),
/// numbers serde refuses, non-UTF-8.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"true",
    b"-0",
    b"1e400",
    b"-",
    b"0.5",
    b"\\u0000",
    b"\\ud800",
    b"\\udc00\\ud800",
    b"\\u00e9",
    b"\\\"",
    b"\\/",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b" ",
    b"\n",
    b"\t",
    b"\x00",
    b"\"uid\":\"dup\",",
    b"\"\":",
    b"\"request\":{},",
    b"{\"a\":",
    b"[[[[[[[[",
];

#[derive(Clone, Debug)]
enum ByteEdit {
    Flip(Index, u8),
    Truncate(Index),
    Splice(Index, Vec<u8>),
    Repeat(Index, Index),
    Delete(Index, Index),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        2 => (any::<Index>(), 1u8..=255).prop_map(|(at, x)| ByteEdit::Flip(at, x)),
        1 => any::<Index>().prop_map(ByteEdit::Truncate),
        4 => (any::<Index>(), prop_oneof![
            4 => select(TOKENS).prop_map(<[u8]>::to_vec),
            1 => prop::collection::vec(any::<u8>(), 1..8),
        ])
            .prop_map(|(at, bytes)| ByteEdit::Splice(at, bytes)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| ByteEdit::Repeat(a, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| ByteEdit::Delete(a, b)),
    ]
}

fn apply_bytes(bytes: &mut Vec<u8>, edit: &ByteEdit) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    match edit {
        ByteEdit::Flip(at, x) => bytes[at.index(len)] ^= x,
        ByteEdit::Truncate(at) => bytes.truncate(at.index(len)),
        ByteEdit::Splice(at, extra) => {
            let i = at.index(len + 1);
            bytes.splice(i..i, extra.iter().copied());
        }
        ByteEdit::Repeat(a, b) => {
            let (a, b) = (a.index(len), b.index(len));
            let (from, to) = (a.min(b), a.max(b).min(a.min(b) + 2048));
            let copy = bytes[from..to].to_vec();
            bytes.splice(to..to, copy);
        }
        ByteEdit::Delete(a, b) => {
            let (a, b) = (a.index(len), b.index(len));
            let from = a.min(b);
            bytes.drain(from..a.max(b).min(from + 64));
        }
    }
}

/// A parameter value: what types, enums and YAML parsing see.
fn parameter_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => select(&[
            "3", "-1", "0", "1.5", "9223372036854775808", "1e3", "true", "False", "yes", "",
            "DEBUG", "INFO", "zk-prod", "1Gi", "[a, b]", "{a: 1}", "- a\n- b", "[", "{",
            "&a [*a]", "\u{0}", "é",
        ][..])
        .prop_map(|s| json!(s)),
        2 => "\\PC{0,12}".prop_map(Value::String),
        1 => (LONG + 1..300_000usize, select(&["x", "é", "[a]"][..]))
            .prop_map(|(n, s)| Value::String(s.repeat(n / s.len() + 1))),
        1 => prop_oneof![Just(json!(3)), Just(json!(null)), Just(json!(true)), Just(json!([1])), Just(json!({"a": "b"}))],
    ]
}

/// Any JSON, leaning on the words the review reads.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,10}".prop_map(Value::String),
        select(
            &[
                "Instance",
                "kudo.dev",
                "v1beta1",
                "CREATE",
                "UPDATE",
                "DELETE",
                "CONNECT",
                "status",
                "deploy",
                "update",
                "cleanup",
                "IN_PROGRESS",
                "COMPLETE",
                "FATAL_ERROR",
                "zookeeper-0.3.0",
                "zookeeper-0.4.0",
                "broken-0.1.0",
                "default",
                "nodes",
                "node-1",
                "pause",
                "resume",
                "continue",
                "forceComplete",
                "restart",
                "cancel",
                "2026-11-26T12:00:00Z",
                "0 3 * * *",
            ][..]
        )
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    select(
                        &[
                            "name",
                            "uid",
                            "status",
                            "spec",
                            "metadata",
                            "parameters",
                            "plan",
                            "phase",
                            "step",
                            "id",
                            "operation",
                            "planExecution",
                            "planName",
                            "planOperations",
                            "suppressions",
                            "windows",
                            "reason",
                            "activePlan",
                            "planStatus",
                            "phases",
                            "steps",
                            "operatorVersion",
                            "namespace",
                            "deletionTimestamp",
                            "generation"
                        ][..]
                    )
                    .prop_map(str::to_string),
                    "[a-zA-Z]{1,6}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum JsonEdit {
    /// Replace the value at a path.
    Replace(Index, Value),
    /// Remove the value at a path.
    Remove(Index),
    /// Put a value where another path's value was (type confusion).
    Swap(Index, Index),
    /// Set a parameter of the new or old object.
    Parameter(bool, String, Value),
    /// Set one of the request's own fields.
    Request(&'static str, Value),
    /// Nest the value at a path this many arrays deep.
    Nest(Index, usize),
}

fn json_edit() -> impl Strategy<Value = JsonEdit> {
    prop_oneof![
        4 => (any::<Index>(), arbitrary_json()).prop_map(|(at, v)| JsonEdit::Replace(at, v)),
        2 => any::<Index>().prop_map(JsonEdit::Remove),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| JsonEdit::Swap(a, b)),
        4 => (
            any::<bool>(),
            prop_oneof![
                4 => select(&["NODE_COUNT", "MEMORY", "CPUS", "BACKUP_TARGET", "LOG_LEVEL",
                              "CLUSTER_NAME", "DATA_DIR"][..]).prop_map(str::to_string),
                1 => "\\PC{0,8}",
            ],
            parameter_value(),
        )
            .prop_map(|(old, name, value)| JsonEdit::Parameter(old, name, value)),
        2 => (
            select(&["uid", "operation", "kind", "subResource", "name", "namespace", "dryRun"][..]),
            prop_oneof![
                3 => arbitrary_json(),
                1 => select(&["CREATE", "UPDATE", "DELETE", "CONNECT", "status", "scale", "",
                              "u-\\\"quoted\\\"", "é"][..])
                    .prop_map(|s| json!(s)),
                1 => Just(json!({"group": "apps", "version": "v1", "kind": "Deployment"})),
                1 => Just(json!({"group": "kudo.dev", "version": "v1beta1", "kind": "Operator"})),
            ],
        )
            .prop_map(|(field, value)| JsonEdit::Request(field, value)),
        1 => (any::<Index>(), prop_oneof![1usize..10, 95usize..135, Just(400)])
            .prop_map(|(at, depth)| JsonEdit::Nest(at, depth)),
    ]
}

/// Every JSON pointer of `value`, down to 32 levels (the fixtures are
/// far shallower; deeper ones come from `Nest` and are not walked again).
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    fn walk(value: &Value, at: String, depth: usize, out: &mut Vec<String>) {
        out.push(at.clone());
        if depth == 32 {
            return;
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    walk(v, format!("{at}/{key}"), depth + 1, out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, format!("{at}/{i}"), depth + 1, out);
                }
            }
            _ => {}
        }
    }
    walk(value, at, 0, out);
}

fn apply_json(review: &mut Value, edit: &JsonEdit) {
    let mut paths = Vec::new();
    pointers(review, String::new(), &mut paths);
    match edit {
        JsonEdit::Replace(at, value) => {
            if let Some(slot) = review.pointer_mut(at.get(&paths).as_str()) {
                *slot = value.clone();
            }
        }
        JsonEdit::Remove(at) => {
            let path = at.get(&paths);
            if let Some((parent, key)) = path.rsplit_once('/')
                && let Some(parent) = review.pointer_mut(parent)
            {
                match parent {
                    Value::Object(map) => {
                        map.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                    Value::Array(items) => {
                        if let Ok(i) = key.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        JsonEdit::Swap(a, b) => {
            let value = review.pointer(b.get(&paths).as_str()).cloned();
            if let (Some(value), Some(slot)) = (value, review.pointer_mut(a.get(&paths).as_str())) {
                *slot = value;
            }
        }
        JsonEdit::Parameter(old, name, value) => {
            let object = if *old { "oldObject" } else { "object" };
            if let Some(Value::Object(spec)) =
                review.pointer_mut(&format!("/request/{object}/spec"))
            {
                let params = spec.entry("parameters").or_insert_with(|| json!({}));
                if let Value::Object(params) = params {
                    params.insert(name.clone(), value.clone());
                }
            }
        }
        JsonEdit::Request(field, value) => {
            if let Some(Value::Object(request)) = review.get_mut("request") {
                request.insert(field.to_string(), value.clone());
            }
        }
        JsonEdit::Nest(at, depth) => {
            if let Some(slot) = review.pointer_mut(at.get(&paths).as_str()) {
                let mut value = slot.take();
                for _ in 0..*depth {
                    value = Value::Array(vec![value]);
                }
                *slot = value;
            }
        }
    }
}

/// How the edited review is written out.
#[derive(Clone, Copy, Debug)]
enum Style {
    Compact,
    Pretty,
    /// Compact, with one object's key written twice (the copy first).
    DuplicateKey(Index),
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        3 => Just(Style::Compact),
        1 => Just(Style::Pretty),
        1 => any::<Index>().prop_map(Style::DuplicateKey),
    ]
}

/// serde_json refuses nesting past 128; written by hand so deep values
/// reach the reviewer.
fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
        leaf => out.push_str(&leaf.to_string()),
    }
}

fn write(review: &Value, style: Style) -> Vec<u8> {
    match style {
        Style::Compact => {
            let mut out = String::new();
            write_json(review, &mut out);
            out.into_bytes()
        }
        Style::Pretty => serde_json::to_vec_pretty(review).unwrap_or_else(|_| {
            let mut out = String::new();
            write_json(review, &mut out);
            out.into_bytes()
        }),
        Style::DuplicateKey(pick) => {
            let mut out = String::new();
            write_json(review, &mut out);
            // The first object with a key: `{"k":v,` becomes `{"k":x,"k":v,`.
            let mut paths = Vec::new();
            pointers(review, String::new(), &mut paths);
            let objects: Vec<(&String, &serde_json::Map<String, Value>)> = paths
                .iter()
                .filter_map(|p| match review.pointer(p) {
                    Some(Value::Object(m)) if !m.is_empty() => Some((p, m)),
                    _ => None,
                })
                .collect();
            if objects.is_empty() {
                return out.into_bytes();
            }
            let (_, map) = pick.get(&objects);
            let mut text = String::new();
            write_json(&Value::Object((*map).clone()), &mut text);
            let (key, _) = map.iter().next().unwrap();
            let copy = format!("{{{}:\"dup\",{}", Value::String(key.clone()), &text[1..]);
            out.replacen(&text, &copy, 1).into_bytes()
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Fixtures edited as JSON, written compact, pretty or with a key
    /// given twice.
    #[test]
    fn edited_reviews_get_a_well_formed_answer(
        pick in any::<Index>(),
        edits in prop::collection::vec(json_edit(), 1..4),
        style in style(),
    ) {
        let (_, bytes) = pick.get(fixtures());
        let mut review: Value = serde_json::from_slice(bytes).unwrap_or_else(|_| json!({}));
        for edit in &edits {
            apply_json(&mut review, edit);
        }
        check(&write(&review, style));
    }

    /// Fixtures damaged byte by byte.
    #[test]
    fn damaged_reviews_get_a_well_formed_answer(
        pick in any::<Index>(),
        pretty in any::<bool>(),
        edits in prop::collection::vec(byte_edit(), 1..5),
    ) {
        let (_, bytes) = pick.get(fixtures());
        let mut body = match serde_json::from_slice::<Value>(bytes) {
            Ok(review) if !pretty => serde_json::to_vec(&review).unwrap(),
            _ => bytes.clone(),
        };
        for edit in &edits {
            apply_bytes(&mut body, edit);
        }
        check(&body);
    }

    /// Bodies that are not reviews at all.
    #[test]
    fn arbitrary_bodies_get_a_well_formed_answer(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            arbitrary_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            arbitrary_json().prop_map(|v| serde_json::to_vec(&json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": v,
            })).unwrap()),
        ],
    ) {
        let answer = check(&body);
        if serde_json::from_slice::<Value>(&body).is_err() && std::str::from_utf8(&body).is_err() {
            prop_assert_eq!(&answer["response"]["allowed"], &json!(false));
        }
    }
}

/// The fixtures as sent: the expected verdicts (allow/ allowed, deny/ and
/// error/ refused), so the checks above judge reviews that work.
#[test]
fn every_fixture_gets_a_well_formed_answer_of_its_kind() {
    for (name, bytes) in fixtures() {
        let answer = check(bytes);
        let allowed = answer["response"]["allowed"] == json!(true);
        assert_eq!(allowed, name.starts_with("allow/"), "{name}: {answer}");
    }
    assert_eq!(CAUGHT_PANICS.load(Ordering::Relaxed), 0);
}

/// Found by `edited_reviews_get_a_well_formed_answer`: refusing a change
/// of an immutable parameter quoted its old value whole (the old object's
/// values are not type-checked), so a 1 MB value made a 1 MB answer. It is
/// shown as a prefix and its length.
#[test]
fn an_immutable_parameter_change_is_refused_without_repeating_a_long_value() {
    let mut review: Value = serde_json::from_slice(&support::admission::fixture(
        "deny/immutable-parameter-changed.json",
    ))
    .unwrap();
    let old = "o".repeat(1 << 20);
    review["request"]["oldObject"]["spec"]["parameters"]["NODE_COUNT"] = json!(old);
    review["request"]["object"]["spec"]["parameters"]["NODE_COUNT"] = json!("5");
    let answer = check(&serde_json::to_vec(&review).unwrap());
    let message = answer["response"]["status"]["message"].as_str().unwrap();
    assert_eq!(answer["response"]["status"]["code"], 403, "{answer}");
    assert!(message.contains("NODE_COUNT is immutable"), "{message}");
    assert!(message.contains("(1048576 bytes) to \"5\""), "{message}");
    assert!(message.len() < 1000, "{} bytes", message.len());
}
